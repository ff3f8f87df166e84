public import ForgeAPNsCore
public import ForgeCrypto
public import Logging
public import struct Foundation.Data
internal import ForgeHTTP2
public import Tracing

extension APNSClient {
    /// Everything a client needs, with documented defaults. A value type: build one, pass it to
    /// ``withAPNSClient(configuration:isolation:_:)`` or ``APNSClient/init(configuration:)``.
    public struct Configuration: Sendable {
        /// The default logger: logs nothing, as a library should until its user passes one.
        public static let silentLogger = Logger(label: "forgepush.apns", factory: { _ in SwiftLogNoOpLogHandler() })

        /// The credentials, each with the bundle ids it sends for: one (serving every topic) unless
        /// the client sends for apps of several teams or keys; see ``APNSClient/Credential``.
        public var credentials: [Credential]
        /// How the client proves who it is: the first credential's authentication. Setting it
        /// replaces that credential's authentication (and makes one when there is none). Reading it
        /// with no credential at all is a programming error (it traps).
        public var authentication: Authentication {
            get { self.credentials[0].authentication }
            set {
                if self.credentials.isEmpty {
                    self.credentials = [Credential(authentication: newValue)]
                } else {
                    self.credentials[0].authentication = newValue
                }
            }
        }
        /// Where pushes go: `.production`, `.sandbox`, or `.custom(host:port:)` (the local server).
        public var environment: APNSEnvironment
        /// TLS settings (trust, loopback-only insecure mode, cleartext for a local h2c server).
        public var tls: TLS
        /// Connect, request, idle and keep-alive times.
        public var timeouts: Timeouts
        /// How many connections, and how many streams each may use.
        public var pool: Pool
        /// Which failures are retried, how often and how far apart.
        public var retry: RetryPolicy
        /// Where the client logs (`apns.` metadata; never a key or a provider token); nothing by default.
        public var logger: Logger
        /// The clock provider tokens are dated by.
        public var clock: any APNSWallClock
        /// An outbound proxy every connection tunnels through (HTTP CONNECT or SOCKS5); `nil`
        /// (the default) connects directly. The environment is not read: apnsctl does that.
        public var proxy: Proxy?
        /// Where the client's spans go (one per send, one per bulk send; see the <doc:Deployment>
        /// article). `nil`, the default: the tracer bootstrapped with `InstrumentationSystem` when the
        /// client is made, a no-op unless the app bootstrapped one.
        public var tracer: (any Tracer)?

        /// Creates a configuration with one credential for every topic; everything but the
        /// credentials and environment has a default.
        public init(
            authentication: Authentication,
            environment: APNSEnvironment,
            tls: TLS = TLS(),
            timeouts: Timeouts = Timeouts(),
            pool: Pool = Pool(),
            retry: RetryPolicy = RetryPolicy(),
            logger: Logger = APNSClient.Configuration.silentLogger,
            clock: any APNSWallClock = .system,
            proxy: Proxy? = nil,
            tracer: (any Tracer)? = nil
        ) {
            self.init(
                credentials: [Credential(authentication: authentication)], environment: environment, tls: tls, timeouts: timeouts,
                pool: pool, retry: retry, logger: logger, clock: clock, proxy: proxy, tracer: tracer
            )
        }

        /// Creates a configuration with several credentials, each serving its bundle ids (apps of
        /// several teams, or of several keys of one team). Each credential gets its own connections,
        /// up to ``Pool/maximumConnections`` each, and its own provider token; a push goes with the
        /// credential of its topic's bundle id, and a push to a bundle id none serves fails before
        /// anything is sent. ``APNSClient/init(configuration:)`` checks the list.
        public init(
            credentials: [Credential],
            environment: APNSEnvironment,
            tls: TLS = TLS(),
            timeouts: Timeouts = Timeouts(),
            pool: Pool = Pool(),
            retry: RetryPolicy = RetryPolicy(),
            logger: Logger = APNSClient.Configuration.silentLogger,
            clock: any APNSWallClock = .system,
            proxy: Proxy? = nil,
            tracer: (any Tracer)? = nil
        ) {
            self.proxy = proxy
            self.credentials = credentials
            self.environment = environment
            self.tls = tls
            self.timeouts = timeouts
            self.pool = pool
            self.retry = retry
            self.logger = logger
            self.clock = clock
            self.tracer = tracer
        }
    }

    /// Provider-token (JWT) or certificate authentication.
    public struct Authentication: Sendable, CustomStringConvertible {
        enum Base: Sendable {
            case jwt(key: APNSSigningKey, keyID: APNSKeyID, teamID: APNSTeamID, refreshAge: Duration)
            /// Provider tokens from a source other than the client's own signer.
            case tokenSource(APNSProviderTokenSource)
            /// A client certificate; `label` names it in descriptions (a path, or "in memory").
            case certificate(HTTP2TLSConfiguration.ClientIdentity, label: String)
        }

        let base: Base

        /// Token authentication with a `.p8` key. One token is shared by every connection and
        /// renewed after `refreshAge` (20 to 55 minutes; 50 by default).
        public static func jwt(
            key: APNSSigningKey, keyID: APNSKeyID, teamID: APNSTeamID, refreshAge: Duration = .seconds(50 * 60)
        ) -> Authentication {
            Authentication(base: .jwt(key: key, keyID: keyID, teamID: teamID, refreshAge: refreshAge))
        }

        /// Token authentication with tokens from `source`, such as a store every replica sending
        /// with this key shares (APNs refuses a key's token updated more than once in 20 minutes).
        /// A push APNs answers `ExpiredProviderToken`, or `InvalidProviderToken` when the source is
        /// not a local signer, is sent once more with ``APNSProviderTokenSource/token(afterRejecting:)``.
        public static func jwt(source: APNSProviderTokenSource) -> Authentication {
            Authentication(base: .tokenSource(source))
        }

        /// Certificate authentication with PEM files.
        public static func certificate(certificateFile: String, privateKeyFile: String) -> Authentication {
            Authentication(base: .certificate(.pem(certificateFile: certificateFile, privateKeyFile: privateKeyFile), label: certificateFile))
        }

        /// Certificate authentication with a PEM certificate (chain) and its PEM private key from
        /// memory, such as a secret store's value, instead of files.
        public static func certificate(certificatePEM: Data, privateKeyPEM: Data) -> Authentication {
            Authentication(base: .certificate(.pem(certificatePEM: Array(certificatePEM), privateKeyPEM: Array(privateKeyPEM)), label: "in memory"))
        }

        /// Certificate authentication with a PKCS#12 file.
        public static func certificate(pkcs12Path: String, password: String) -> Authentication {
            Authentication(base: .certificate(.pkcs12(path: pkcs12Path, password: password), label: "pkcs12: \(pkcs12Path)"))
        }

        /// Certificate authentication with PKCS#12 bytes from memory and their password.
        public static func certificate(pkcs12: Data, password: String) -> Authentication {
            Authentication(base: .certificate(.pkcs12(bytes: Array(pkcs12), password: password), label: "pkcs12: in memory"))
        }

        /// Names the method and the key id, never the key or a password.
        public var description: String {
            switch self.base {
            case .jwt(_, let keyID, let teamID, _): return "jwt(keyID: \(keyID), teamID: \(teamID))"
            case .tokenSource(let source): return "jwt(keyID: \(source.keyID), teamID: \(source.teamID), from a token source)"
            case .certificate(_, let label): return "certificate(\(label))"
            }
        }
    }

    /// An outbound proxy: HTTP `CONNECT` (with basic authentication) or SOCKS5 (with or without
    /// user and password). TLS to APNs runs end to end through the tunnel, so the proxy never sees
    /// a provider token, and certificate checks are for the APNs host. A proxy that refuses or asks
    /// for credentials fails the send as `unreachable`, naming the proxy's `host:port`; refused
    /// credentials are permanent (no retries). The password appears in no description, error or log.
    public struct Proxy: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        let base: HTTP2Proxy

        /// A proxy from a URL, as curl's `--proxy` and `HTTPS_PROXY` take it:
        /// `http://[user:password@]host[:port]` (CONNECT), `socks5://…` or `socks5h://…` (SOCKS5;
        /// the proxy resolves APNs' host name in both). The port defaults to 1080.
        /// - Throws: ``APNSError`` of kind `invalidNotification` naming the rule, with the password hidden.
        public init(url: String) throws(APNSError) {
            do {
                self.base = try HTTP2Proxy(url: url)
            } catch {
                throw APNSError(kind: .invalidNotification, detail: "proxy: \(error)")
            }
        }

        /// HTTP `CONNECT` at `host:port`, with basic authentication when `username` is given.
        public static func httpConnect(host: String, port: Int, username: String? = nil, password: String? = nil) -> Proxy {
            Proxy(base: HTTP2Proxy(.httpConnect, host: host, port: port, username: username, password: password))
        }

        /// SOCKS5 at `host:port`, with user/password authentication (RFC 1929) when `username` is given.
        public static func socks5(host: String, port: Int, username: String? = nil, password: String? = nil) -> Proxy {
            Proxy(base: HTTP2Proxy(.socks5, host: host, port: port, username: username, password: password))
        }

        private init(base: HTTP2Proxy) { self.base = base }

        /// The proxy's `host:port`, as errors name it.
        public var endpoint: String { self.base.endpoint }

        /// The URL with the password replaced by `***`.
        public var description: String { self.base.description }
        public var debugDescription: String { self.base.description }
        public var customMirror: Mirror { self.base.customMirror }
    }

    /// TLS options. Verification is on unless ``insecureLoopbackOnly`` says otherwise.
    public struct TLS: Sendable {
        /// A PEM file of trusted roots, instead of the system's.
        public var caFile: String?
        /// Trusted roots as PEM text, instead of the system's (for example the CA `LoopbackMode`
        /// makes in memory). At most one of ``caFile`` and ``caPEM``.
        public var caPEM: String?
        /// Skip certificate checks, allowed only for 127.0.0.0/8 and ::1 (the local server).
        public var insecureLoopbackOnly: Bool
        /// Cleartext HTTP/2 (h2c), allowed only for loopback: a local server started with `--h2c`.
        public var cleartextLoopbackOnly: Bool

        /// Creates TLS options: system roots, full verification, TLS on.
        public init(
            caFile: String? = nil, insecureLoopbackOnly: Bool = false, cleartextLoopbackOnly: Bool = false, caPEM: String? = nil
        ) {
            self.caFile = caFile
            self.caPEM = caPEM
            self.insecureLoopbackOnly = insecureLoopbackOnly
            self.cleartextLoopbackOnly = cleartextLoopbackOnly
        }
    }

    /// Timeouts.
    public struct Timeouts: Sendable {
        /// TCP and TLS set-up of one connection (default 10 s).
        public var connect: Duration
        /// One send, retries included, when the caller gives no deadline (default 30 s).
        public var request: Duration
        /// A connection with nothing in flight for this long is closed (default 10 minutes; `nil`: never).
        public var idle: Duration?
        /// A keep-alive PING after this much silence on an idle connection (default 60 s).
        public var ping: Duration
        /// With pushes waiting for answers, a PING after this much silence from the server (default
        /// 3 s): a stalled connection is found in seconds, long before the request deadline.
        public var stall: Duration
        /// A PING unanswered for this long declares the connection dead (default 5 s): its queued
        /// pushes move to another connection, and those in flight may have been delivered, so they
        /// are retried only if ``RetryPolicy/retriesPossiblyDelivered`` allows.
        public var pingTimeout: Duration

        /// Creates timeouts with the defaults.
        public init(connect: Duration = .seconds(10), request: Duration = .seconds(30), idle: Duration? = .seconds(600),
                    ping: Duration = .seconds(60), stall: Duration = .seconds(3), pingTimeout: Duration = .seconds(5)) {
            self.connect = connect
            self.request = request
            self.idle = idle
            self.ping = ping
            self.stall = stall
            self.pingTimeout = pingTimeout
        }
    }

    /// The connection pool. It opens one connection, and more by itself while every stream is busy
    /// and work waits: one at a time, each once the ones before it have had an answer, up to
    /// ``maximumConnections``. Connections beyond the first that stay idle for
    /// ``surplusIdleTimeout`` close; the last one after ``Timeouts/idle``.
    ///
    /// Apple asks providers to keep connections open and to spread heavy load over several, and
    /// warns that opening and closing them rapidly looks like an attack. Four connections of
    /// 1,000 streams carry over 100,000 pushes a second at a 30 ms round trip, more than one
    /// machine's TLS and JSON work; the pool reaches them only under that load.
    public struct Pool: Sendable {
        /// The most connections open at once (default 4).
        public var maximumConnections: Int
        /// The most streams the client opens on one connection, below the server's limit (default 1000).
        public var maxStreamsPerConnection: Int
        /// A connection beyond the first with nothing in flight this long closes (default 5 minutes).
        public var surplusIdleTimeout: Duration

        /// Creates pool settings.
        public init(maximumConnections: Int = 4, maxStreamsPerConnection: Int = 1000, surplusIdleTimeout: Duration = .seconds(300)) {
            self.maximumConnections = maximumConnections
            self.maxStreamsPerConnection = maxStreamsPerConnection
            self.surplusIdleTimeout = surplusIdleTimeout
        }
    }

    /// Retries of `429 TooManyRequests`, `500` and `503`, and of sends whose connection died.
    /// Permanent rejections (`BadDeviceToken`, `Unregistered`, `PayloadTooLarge`, …) are never
    /// retried; requests the server never processed (refused streams, streams above a GOAWAY's
    /// last stream id, requests that found no connection) are replayed without counting as an
    /// attempt, up to ``replays`` times with a short backoff.
    public struct RetryPolicy: Sendable {
        /// Attempts per push, the first included (default 3; 1 turns retries off).
        public var attempts: Int
        /// The first backoff (default 200 ms); each retry doubles it.
        public var backoffBase: Duration
        /// The longest backoff (default 10 s).
        public var backoffCap: Duration
        /// Randomizes each backoff between `(1 - jitter)` and 1 times its value (default 0.5).
        public var jitter: Double
        /// Whether a push whose connection died after sending it (so APNs may have delivered it)
        /// is sent again (default `true`: at least once; its verdict says it may be a duplicate).
        public var retriesPossiblyDelivered: Bool
        /// How many times one push is replayed after APNs certainly did not process it (default 8).
        /// The first replay goes at once (to another connection); later ones back off from 10 ms,
        /// doubling up to 1 s, so a server that refuses everything cannot turn one push into a storm.
        public var replays: Int

        /// Creates a policy with the defaults.
        public init(attempts: Int = 3, backoffBase: Duration = .milliseconds(200), backoffCap: Duration = .seconds(10),
                    jitter: Double = 0.5, retriesPossiblyDelivered: Bool = true, replays: Int = 8) {
            self.attempts = attempts
            self.backoffBase = backoffBase
            self.backoffCap = backoffCap
            self.jitter = jitter
            self.retriesPossiblyDelivered = retriesPossiblyDelivered
            self.replays = replays
        }

        /// The wait before retry number `retry` (1-based); `random` in `0...1` picks the jitter.
        func backoff(retry: Int, random: Double = .random(in: 0...1)) -> Duration {
            Self.exponential(step: retry, base: self.backoffBase, cap: self.backoffCap, jitter: self.jitter, random: random)
        }

        /// The wait before replay number `replay` (1-based): none for the first.
        func replayBackoff(replay: Int, random: Double = .random(in: 0...1)) -> Duration {
            guard replay > 1 else { return .zero }
            return Self.exponential(step: replay - 1, base: .milliseconds(10), cap: .seconds(1), jitter: self.jitter, random: random)
        }

        /// `base × 2^(step-1)`, at most `cap`, less up to `jitter` of it.
        static func exponential(step: Int, base: Duration, cap: Duration, jitter: Double, random: Double) -> Duration {
            let factor = Double(1 << min(max(step - 1, 0), 20))
            let full = min(base.inSeconds * factor, cap.inSeconds)
            let value = full * (1 - min(max(jitter, 0), 1) * min(max(random, 0), 1))
            return .nanoseconds(Int64(value * 1e9))
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var inSeconds: Double { Double(self.components.seconds) + Double(self.components.attoseconds) / 1e18 }
}
