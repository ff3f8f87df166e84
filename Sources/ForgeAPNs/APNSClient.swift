public import ForgeAPNsCore
internal import ForgeCrypto
package import ForgeHTTP2
internal import Logging
internal import Metrics
internal import ForgeSupport
internal import Synchronization
public import ServiceLifecycle
internal import Tracing

/// Sends pushes to APNs over a pool of HTTP/2 connections: one provider token shared by the pool,
/// reason-aware retries, replays of what the server never processed, and bulk sends with one
/// verdict per token. With several credentials (``Configuration/init(credentials:environment:tls:timeouts:pool:retry:logger:clock:proxy:tracer:)``),
/// one pool and one provider token per credential, each push going with its topic's credential.
///
/// ```swift
/// try await withAPNSClient(configuration: configuration) { client in
///     let result = try await client.send(alert, to: token)
/// }
/// ```
public final class APNSClient: Sendable {
    /// The configuration it was made with.
    public let configuration: Configuration
    /// One per credential of the configuration, in its order: pools, provider tokens, metrics.
    let routes: [CredentialRoute]
    /// The route of every bundle id, when one credential serves them all (no topic list): a send
    /// then looks nothing up.
    let soleRoute: CredentialRoute?
    /// Which route serves which bundle id.
    let table: CredentialTable
    /// The transports ``run()`` runs and ``shutdown(gracePeriod:)`` closes, each once.
    private let transports: [RouteTransport]
    /// The credentials' push transports, each once (no channel-API transport).
    private let pushTransports: [RouteTransport]
    private let clientExecutor: ClientExecutor
    let logger: Logger
    /// Where spans go: the configuration's tracer, else the one bootstrapped when the client was made;
    /// `nil` for `NoOpTracer`, so that sends without tracing do not even start a no-op span.
    let tracer: (any Tracer)?
    /// Whether ``tracer`` is set: read on every send, where copying the existential is not free.
    let tracing: Bool
    private let lifecycle = LockedBox(Lifecycle())
    private let shutDownFlag = Atomic<Bool>(false)
    /// Work ``run()`` runs as child tasks: bulk sends' producers, a graceful shutdown.
    private let background: AsyncStream<BackgroundWork>
    private let backgroundInput: AsyncStream<BackgroundWork>.Continuation

    private struct Lifecycle {
        var running = false
        var shutDown = false
    }
    /// Resolved when the first ``shutdown(gracePeriod:)`` is done: later callers wait for it.
    private let shutDownFinished = OneShot<Void>()

    enum BackgroundWork: Sendable {
        case bulk(@Sendable () async -> Void)
        case shutdown(Duration)
    }

    /// Creates a client over a pool of connections to `configuration.environment` for each
    /// credential. Client certificates and the CA file are loaded and checked here, once, and the
    /// TLS context they make serves every connection of that credential. The pools are made here,
    /// all of them (a pool is cheap until it connects), so a bad credential fails now and ``run()``
    /// owns a fixed set of pools; nothing connects until ``run()`` runs (``withAPNSClient(configuration:isolation:_:)``
    /// runs it) and a push for that credential comes.
    /// - Throws: ``APNSError`` of kind `invalidNotification` for a bad configuration (a refresh
    ///   age outside 20-55 minutes, cleartext or an insecure mode for a non-loopback host, a
    ///   credential list without credentials, with an empty topic list, or naming a bundle id twice), of kind
    ///   `credentials` for a client certificate, key, PKCS#12 file or password, or a CA file that
    ///   cannot be used (the detail names the field and the rule).
    public convenience init(configuration: Configuration) throws {
        let table = try CredentialTable(configuration.credentials)
        let labelled = configuration.credentials.count > 1
        var transports: [(RouteTransport, RouteTransport?)] = []
        var pools: [ConnectionPool] = []
        for credential in configuration.credentials {
            let logger = Self.logger(configuration, credential: credential, labelled: labelled)
            let dimensions = labelled ? [("credential", credential.authentication.label)] : []
            let pool = ConnectionPool(
                configuration: try Self.http2Configuration(configuration, endpoint: configuration.environment,
                                                           authentication: credential.authentication),
                authority: configuration.environment.authority,
                limits: Self.limits(configuration, connections: configuration.pool.maximumConnections),
                logger: logger, dimensions: dimensions
            )
            var channels: RouteTransport?
            let channelEndpoint = configuration.environment.channelManagement
            if channelEndpoint != configuration.environment {
                channels = .pool(ConnectionPool(
                    configuration: try Self.http2Configuration(configuration, endpoint: channelEndpoint,
                                                               authentication: credential.authentication),
                    authority: channelEndpoint.authority, limits: Self.limits(configuration, connections: 1), logger: logger,
                    dimensions: dimensions + [("endpoint", "channels")]
                ))
            }
            transports.append((.pool(pool), channels))
            pools.append(pool)
        }
        try self.init(configuration: configuration, table: table, transports: transports, pools: pools)
    }

    /// Creates a client over another transport, such as `ForgeAPNsTesting`'s in-process one in unit
    /// tests. Every credential of the configuration sends through it (each with its own provider token).
    /// - Parameters:
    ///   - configuration: the credentials, environment and policies, as for ``init(configuration:)``.
    ///   - transport: what carries the pushes.
    ///   - channelTransport: the channel API's transport; `transport` by default.
    public convenience init(configuration: Configuration, transport: any APNSTransport, channelTransport: (any APNSTransport)? = nil) throws {
        let table = try CredentialTable(configuration.credentials)
        try self.init(
            configuration: configuration, table: table,
            transports: Array(repeating: (.other(transport), channelTransport.map(RouteTransport.other)), count: configuration.credentials.count),
            pools: []
        )
    }

    /// - Parameters:
    ///   - transports: for each credential, its transport and its channel API's (`nil`: the same).
    ///   - pools: the credentials' connection pools, whose I/O threads ``executor`` runs tasks on.
    private init(
        configuration: Configuration, table: CredentialTable, transports: [(RouteTransport, RouteTransport?)],
        pools: [ConnectionPool]
    ) throws {
        self.clientExecutor = ClientExecutor(pools: pools)
        self.configuration = configuration
        self.table = table
        self.logger = configuration.logger
        let tracer = configuration.tracer ?? InstrumentationSystem.tracer
        self.tracer = tracer is NoOpTracer ? nil : tracer
        self.tracing = self.tracer != nil
        (self.background, self.backgroundInput) = AsyncStream.makeStream(of: BackgroundWork.self)
        let labelled = configuration.credentials.count > 1
        var routes: [CredentialRoute] = []
        var unique: [RouteTransport] = []
        var pushTransports: [RouteTransport] = []
        func own(_ transport: RouteTransport, in list: inout [RouteTransport]) {
            if !list.contains(where: { $0.isSame(as: transport) }) { list.append(transport) }
        }
        for (index, credential) in configuration.credentials.enumerated() {
            let (transport, channels) = transports[index]
            own(transport, in: &unique)
            own(transport, in: &pushTransports)
            if let channels { own(channels, in: &unique) }
            var tokens: APNSProviderTokenSource?
            switch credential.authentication.base {
            case .jwt(let key, let keyID, let teamID, let refreshAge):
                do {
                    tokens = .signing(try APNSProviderTokenManager(key: key, keyID: keyID, teamID: teamID, refreshAge: refreshAge,
                                                                   clock: configuration.clock))
                } catch {
                    let field = labelled ? "credentials[\(index)] \(error.field)" : "\(error.field)"
                    throw APNSError(kind: .invalidNotification, detail: "\(field) \(error.rule)")
                }
            case .tokenSource(let source):
                tokens = source
            case .certificate:
                tokens = nil
            }
            let label = credential.authentication.label
            routes.append(CredentialRoute(
                label: label, transport: transport, channelTransport: channels ?? transport, tokens: tokens,
                metrics: ClientMetrics(credential: labelled ? label : nil),
                logger: Self.logger(configuration, credential: credential, labelled: labelled)
            ))
        }
        self.routes = routes
        self.soleRoute = table.byBundleID.isEmpty ? table.fallback.map { routes[$0] } : nil
        self.transports = unique
        self.pushTransports = pushTransports
    }

    /// A task executor that runs tasks on the I/O threads of the client's connections.
    ///
    /// Tasks that send one push after another (`group.addTask(executorPreference: client.executor) { … }`)
    /// run on the thread that owns their connection: a push then costs no thread hop and no wake-up
    /// (with 100 such tasks, about half the CPU per push of tasks on the global executor; see the
    /// <doc:Performance> article). Such tasks must not block or compute for long: while one runs, its
    /// connection does no I/O. Until a connection is open, and with a transport other than the
    /// client's pools (`init(configuration:transport:channelTransport:)`), they run on the global executor.
    public var executor: any TaskExecutor { self.clientExecutor }

    /// The configuration's logger, with `apns.credential` metadata when there are several credentials.
    private static func logger(_ configuration: Configuration, credential: Credential, labelled: Bool) -> Logger {
        var logger = configuration.logger
        if labelled { logger[metadataKey: "apns.credential"] = "\(credential.authentication.label)" }
        return logger
    }

    /// The route of the credential that serves `bundleID`.
    /// - Parameter bundleID: read only when credentials differ by bundle id.
    func route(forBundleID bundleID: @autoclosure () -> String) throws(APNSError) -> CredentialRoute {
        if let soleRoute = self.soleRoute { return soleRoute }
        let bundleID = bundleID()
        guard let index = self.table.index(forBundleID: bundleID) else { throw self.table.unserved(bundleID) }
        return self.routes[index]
    }

    private static func limits(_ configuration: Configuration, connections: Int) -> PoolStateMachine.Limits {
        PoolStateMachine.Limits(
            maximumConnections: connections, maximumStreams: configuration.pool.maxStreamsPerConnection,
            surplusIdleTimeout: configuration.pool.surplusIdleTimeout, idleTimeout: configuration.timeouts.idle,
            unreachableAfter: max(1, configuration.retry.attempts)
        )
    }

    /// The HTTP/2 connection settings the client uses for `configuration` (host, TLS with its trust
    /// and client identity, timeouts), for tools that probe the endpoint step by step.
    /// - Throws: ``APNSError`` of kind `invalidNotification` for an insecure or cleartext mode off
    ///   loopback, `credentials` for a client identity or CA file that cannot be used.
    /// The first credential's identity is the one used.
    package static func connectionConfiguration(for configuration: Configuration) throws -> HTTP2ClientConfiguration {
        try Self.http2Configuration(configuration, endpoint: configuration.environment, authentication: configuration.authentication)
    }

    static func http2Configuration(
        _ configuration: Configuration, endpoint environment: APNSEnvironment, authentication: Authentication
    ) throws -> HTTP2ClientConfiguration {
        let loopback = ["127.0.0.1", "::1", "localhost"].contains(environment.host) || environment.host.hasPrefix("127.")
        var tls: HTTP2TLSConfiguration?
        if configuration.tls.cleartextLoopbackOnly {
            guard loopback else {
                throw APNSError(kind: .invalidNotification, detail: "cleartext HTTP/2 is allowed for loopback hosts only, not \(environment.host)")
            }
            tls = nil
        } else {
            if configuration.tls.insecureLoopbackOnly, !loopback {
                throw APNSError(
                    kind: .invalidNotification,
                    detail: "tls.insecureLoopbackOnly skips certificate checks, so it is allowed for loopback hosts only "
                        + "(127.0.0.0/8, ::1, localhost), not \(environment.host)"
                )
            }
            let trustRoots: HTTP2TLSConfiguration.TrustRoots
            switch (configuration.tls.caFile, configuration.tls.caPEM) {
            case (let file?, nil): trustRoots = .file(file)
            case (nil, let pem?): trustRoots = .pem(pem)
            case (nil, nil): trustRoots = .system
            case (_?, _?):
                throw APNSError(kind: .credentials, detail: "tls.caFile and tls.caPEM: set one of them, not both")
            }
            var options = HTTP2TLSConfiguration(
                trustRoots: trustRoots,
                verification: configuration.tls.insecureLoopbackOnly ? .insecureLoopbackOnly : .full
            )
            switch authentication.base {
            case .jwt, .tokenSource: break
            case .certificate(let identity, _):
                options.clientIdentity = identity
            }
            // Loaded once, now: a bad file or password is a configuration error, not a connect failure.
            do {
                tls = try options.prepared()
            } catch {
                let field = error.field == .trustRoots ? (configuration.tls.caPEM == nil ? "tls.caFile" : "tls.caPEM") : "authentication"
                throw APNSError(kind: .credentials, detail: "\(field): \(error)")
            }
        }
        return HTTP2ClientConfiguration(
            host: environment.host, port: environment.port, tls: tls, connectTimeout: configuration.timeouts.connect,
            pingInterval: configuration.timeouts.ping, stallInterval: configuration.timeouts.stall,
            pingTimeout: configuration.timeouts.pingTimeout,
            maximumConcurrentStreams: configuration.pool.maxStreamsPerConnection,
            proxy: configuration.proxy?.base
        )
    }

    /// Connections that are open and usable now, summed over the credentials' pools (0 for other
    /// transports); ``openConnections(forBundleID:)`` counts one credential's.
    public var openConnections: Int {
        self.pushTransports.reduce(0) { $0 + $1.openConnections }
    }

    /// Open connections of the pool of the credential serving `bundleID` (0 when none serves it).
    public func openConnections(forBundleID bundleID: APNSBundleID) -> Int {
        let index = self.table.index(forBundleID: CredentialTable.bundleID(ofTopic: bundleID.rawValue))
        return index.map { self.routes[$0].transport.openConnections } ?? 0
    }

    /// How many provider tokens were signed so far (one per refresh and key, never one per push),
    /// summed over the credentials.
    public var providerTokenSignings: Int {
        self.routes.reduce(0) { $0 + ($1.tokens?.manager?.signingCount ?? 0) }
    }

    /// Read by every send: an atomic, set under the lifecycle lock when the shutdown begins.
    var isShutDown: Bool { self.shutDownFlag.load(ordering: .acquiring) }

    // MARK: Running

    /// Runs the client's background work (connects, closes, idle sweeps, bulk sends) as child tasks
    /// until ``shutdown(gracePeriod:)``, or until a `ServiceGroup` shuts down gracefully: then it
    /// shuts the client down itself. Sends wait for it to run. ``withAPNSClient(configuration:isolation:_:)``
    /// runs it for you; a `ServiceGroup` runs it as a `Service`.
    public func run() async throws {
        let first = self.lifecycle.withLock { state -> Bool in
            defer { state.running = true }
            return !state.running
        }
        guard first else { throw APNSError(kind: .invalidNotification, detail: "run() was called twice on one client") }
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                for transport in self.transports {
                    group.addTask { await transport.run() }
                }
                for await work in self.background {
                    switch work {
                    case .bulk(let producer): group.addTask { await producer() }
                    case .shutdown(let gracePeriod): group.addTask { await self.shutdown(gracePeriod: gracePeriod) }
                    }
                }
            }
        } onGracefulShutdown: {
            self.backgroundInput.yield(.shutdown(.seconds(5)))
        }
        // Ended by cancellation: nothing may wait for work that no longer runs.
        await self.shutdown(gracePeriod: .zero)
    }

    /// Runs `work` as a child task of ``run()``; `false` once the client is shut down.
    func runInBackground(_ work: @escaping @Sendable () async -> Void) -> Bool {
        if case .enqueued = self.backgroundInput.yield(.bulk(work)) { return true }
        return false
    }

    /// Closes every connection; sends in flight finish or fail within `gracePeriod`. Later sends
    /// fail with ``APNSError/Kind/shutdown``, and ``run()`` returns.
    public func shutdown(gracePeriod: Duration = .seconds(5)) async {
        let first = self.lifecycle.withLock { state -> Bool in
            defer {
                state.shutDown = true
                self.shutDownFlag.store(true, ordering: .releasing)
            }
            return !state.shutDown
        }
        guard first else {
            // Someone else is shutting it down: return when they are done.
            await self.shutDownFinished.value
            return
        }
        // All pools together: each gets the whole grace period, not what the previous one left.
        await withDiscardingTaskGroup { group in
            for transport in self.transports {
                group.addTask { await transport.shutdown(gracePeriod: gracePeriod) }
            }
        }
        self.backgroundInput.finish()
        self.shutDownFinished.resolve(())
        self.logger.debug("APNs client shut down")
    }

    /// Opens a connection to APNs for each credential whose pool has none open, and returns once
    /// each has one ready: the first pushes then find it there instead of waiting for TCP, TLS and
    /// HTTP/2's preface, and a server that cannot be reached, or a certificate it refuses, is known
    /// before anything is sent. Sends open connections by themselves; this only opens them earlier,
    /// for example beside other start-up work. It needs ``run()`` running, as sends do. A connect
    /// that fails is one of the pool's failures: pushes right after it wait out the backoff it set.
    /// - Parameter deadline: when to give up; `configuration.timeouts.request` from now by default.
    /// - Throws: ``APNSError`` of kind `unreachable` (the connect's failure), `deadlineExceeded`,
    ///   `cancelled` or `shutdown`; with several credentials, the first credential's that failed.
    public func connect(deadline: ContinuousClock.Instant? = nil) async throws(APNSError) {
        guard !self.isShutDown else { throw APNSError(kind: .shutdown, detail: "the client is shut down") }
        // Converted once, here: everything below the public API keeps the I/O threads' clock.
        let deadline = MonotonicInstant.deadline(deadline, orAfter: self.configuration.timeouts.request, from: .now)
        let failures = await withTaskGroup(of: (Int, APNSTransportError?).self) { group in
            for (index, transport) in self.pushTransports.enumerated() {
                group.addTask { (index, await transport.connect(deadline: deadline)) }
            }
            var failures = [APNSTransportError?](repeating: nil, count: self.pushTransports.count)
            for await (index, failure) in group { failures[index] = failure }
            return failures
        }
        guard let failure = failures.lazy.compactMap({ $0 }).first else { return }
        let kind: APNSError.Kind = switch failure.kind {
        case .unreachable: .unreachable
        case .deadlineExceeded: .deadlineExceeded
        case .cancelled: .cancelled
        case .shutdown: .shutdown
        case .notProcessed, .lost, .invalidRequest: .transport
        }
        throw APNSError(kind: kind, detail: failure.detail)
    }

    // MARK: Sending

    /// Sends any notification to a device token.
    /// - Parameters:
    ///   - notification: what to send; validated and encoded first.
    ///   - token: the device token.
    ///   - deadline: when to give up, retries included; `configuration.timeouts.request` from now by default.
    /// - Returns: the `apns-id` and `apns-unique-id` APNs answered.
    /// - Throws: ``APNSError``: the rejection with status, reason and timestamp; or why nothing was accepted.
    public func send(
        _ notification: some APNSNotification, to token: DeviceToken, deadline: ContinuousClock.Instant? = nil
    ) async throws(APNSError) -> APNSSendResult {
        let prepared: APNSPreparedNotification
        do {
            prepared = try notification.prepared()
        } catch {
            throw APNSError(kind: .invalidNotification, detail: "\(error.field) \(error.rule)")
        }
        return try await self.send(prepared, to: token, deadline: deadline)
    }

    /// Sends an already prepared notification (encoded once, for many tokens).
    public func send(
        _ prepared: APNSPreparedNotification, to token: DeviceToken, deadline: ContinuousClock.Instant? = nil
    ) async throws(APNSError) -> APNSSendResult {
        // One reading of the clock: the default deadline's, and the send's start.
        let now = MonotonicInstant.now
        return try await self.executeOne(
            prepared.request(to: token), pushType: prepared.pushType, bundleID: CredentialTable.bundleID(of: prepared),
            deadline: MonotonicInstant.deadline(deadline, orAfter: self.configuration.timeouts.request, from: now), started: now
        )
    }

    /// Sends a broadcast to a channel (`/4/broadcasts/apps/<bundle id>`).
    public func send<ContentState>(
        _ broadcast: APNSBroadcastNotification<ContentState>, deadline: ContinuousClock.Instant? = nil
    ) async throws(APNSError) -> APNSSendResult {
        let prepared: APNSPreparedBroadcast
        do throws(APNSValidationError) {
            prepared = try broadcast.prepared()
        } catch {
            throw APNSError(kind: .invalidNotification, detail: "\(error.field) \(error.rule)")
        }
        return try await self.send(prepared, deadline: deadline)
    }

    /// Sends an already prepared broadcast (validated and encoded once, as from JSON).
    public func send(_ prepared: APNSPreparedBroadcast, deadline: ContinuousClock.Instant? = nil) async throws(APNSError) -> APNSSendResult {
        try await self.executeOne(prepared.request(), pushType: .liveactivity, bundleID: prepared.bundleID.rawValue,
                                  deadline: MonotonicInstant.deadline(deadline, orAfter: self.configuration.timeouts.request, from: .now))
    }
}

/// Runs `body` with a client whose background work runs beside it (``APNSClient/run()``), and
/// shuts the client down on every path, thrown errors included.
///
/// Callable from any isolation: inside an actor, `body` runs on the actor and may touch its state.
public func withAPNSClient<Result>(
    configuration: APNSClient.Configuration,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (APNSClient) async throws -> Result
) async throws -> Result {
    try await withAPNSClient(APNSClient(configuration: configuration), isolation: isolation, body)
}

/// Runs `body` with `client` (made over any transport, such as `ForgeAPNsTesting`'s in-process one)
/// while its background work runs, and shuts it down on every path.
public func withAPNSClient<Result>(
    _ client: APNSClient,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (APNSClient) async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Void.self, returning: Result.self, isolation: isolation) { group in
        group.addTask { try await client.run() }
        let result: Result
        do {
            result = try await body(client)
        } catch {
            await client.shutdown()
            try? await group.waitForAll()
            throw error
        }
        await client.shutdown()
        try await group.waitForAll()
        return result
    }
}

/// A `ServiceGroup` runs the client's ``APNSClient/run()``: a graceful shutdown of the group shuts
/// the client down (sends in flight get 5 seconds).
extension APNSClient: Service {}
