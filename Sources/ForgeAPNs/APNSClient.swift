public import ForgeAPNsCore
internal import ForgeCrypto
public import ForgeHTTP2
internal import Logging
internal import Metrics
internal import ForgeSupport
internal import Synchronization
public import ServiceLifecycle

/// Sends pushes to APNs over a pool of HTTP/2 connections: one provider token shared by the pool,
/// reason-aware retries, replays of what the server never processed, and bulk sends with one
/// verdict per token.
///
/// ```swift
/// try await withAPNSClient(configuration: configuration) { client in
///     let result = try await client.send(alert, to: token)
/// }
/// ```
public final class APNSClient: Sendable {
    /// The configuration it was made with.
    public let configuration: Configuration
    let transport: any APNSTransport
    /// The channel management endpoint's transport (the same one when the endpoint is the same).
    let channelTransport: any APNSTransport
    let tokens: APNSProviderTokenManager?
    let logger: Logger
    let metrics = ClientMetrics()
    private let shutdownState = Atomic<Bool>(false)
    /// `:authority` of pushes and of the channel API, built once (not per request).
    let pushAuthority: String
    let channelAuthority: String

    /// Creates a client over a pool of connections to `configuration.environment`. The client
    /// certificate and the CA file are loaded and checked here, once, and the TLS context they make
    /// serves every connection.
    /// - Throws: ``APNSError`` of kind `invalidNotification` for a bad configuration (a refresh
    ///   age outside 20-55 minutes, cleartext or an insecure mode for a non-loopback host), of kind
    ///   `credentials` for a client certificate, key, PKCS#12 file or password, or a CA file that
    ///   cannot be used (the detail names the field and the rule).
    public convenience init(configuration: Configuration) throws {
        let http2 = try Self.http2Configuration(configuration, endpoint: configuration.environment)
        let pool = ConnectionPool(
            configuration: http2, connections: configuration.pool.connections,
            maxStreams: configuration.pool.maxStreamsPerConnection, idleTimeout: configuration.timeouts.idle,
            logger: configuration.logger
        )
        var channels: (any APNSTransport)?
        let channelEndpoint = configuration.environment.channelManagement
        if channelEndpoint != configuration.environment {
            channels = ConnectionPool(
                configuration: try Self.http2Configuration(configuration, endpoint: channelEndpoint), connections: 1,
                maxStreams: configuration.pool.maxStreamsPerConnection, idleTimeout: configuration.timeouts.idle,
                logger: configuration.logger
            )
        }
        try self.init(configuration: configuration, transport: pool, channelTransport: channels)
    }

    /// Creates a client over another transport, such as ``APNSInProcessTransport`` in unit tests.
    /// - Parameter channelTransport: the channel API's transport; `transport` by default.
    public init(configuration: Configuration, transport: any APNSTransport, channelTransport: (any APNSTransport)? = nil) throws {
        self.configuration = configuration
        self.transport = transport
        self.channelTransport = channelTransport ?? transport
        self.pushAuthority = configuration.environment.authority
        self.channelAuthority = configuration.environment.channelManagement.authority
        self.logger = configuration.logger
        switch configuration.authentication.base {
        case .jwt(let key, let keyID, let teamID, let refreshAge):
            do {
                self.tokens = try APNSProviderTokenManager(key: key, keyID: keyID, teamID: teamID, refreshAge: refreshAge,
                                                           clock: configuration.clock)
            } catch {
                throw APNSError(kind: .invalidNotification, detail: "\(error.field) \(error.rule)")
            }
        case .certificatePEM, .pkcs12:
            self.tokens = nil
        }
    }

    /// The HTTP/2 connection settings the client uses for `configuration` (host, TLS with its trust
    /// and client identity, timeouts), for tools that probe the endpoint step by step.
    /// - Throws: ``APNSError`` of kind `invalidNotification` for an insecure or cleartext mode off
    ///   loopback, `credentials` for a client identity or CA file that cannot be used.
    public static func connectionConfiguration(for configuration: Configuration) throws -> HTTP2ClientConfiguration {
        try Self.http2Configuration(configuration, endpoint: configuration.environment)
    }

    static func http2Configuration(_ configuration: Configuration, endpoint environment: APNSEnvironment) throws -> HTTP2ClientConfiguration {
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
            var options = HTTP2TLSConfiguration(
                trustRoots: configuration.tls.caFile.map { .file($0) } ?? .system,
                verification: configuration.tls.insecureLoopbackOnly ? .insecureLoopbackOnly : .full
            )
            switch configuration.authentication.base {
            case .jwt: break
            case .certificatePEM(let certificate, let key):
                options.clientIdentity = .pem(certificateFile: certificate, privateKeyFile: key)
            case .pkcs12(let path, let password):
                options.clientIdentity = .pkcs12(path: path, password: password)
            }
            // Loaded once, now: a bad file or password is a configuration error, not a connect failure.
            do {
                tls = try options.prepared()
            } catch {
                let field = error.field == .trustRoots ? "tls.caFile" : "authentication"
                throw APNSError(kind: .credentials, detail: "\(field): \(error)")
            }
        }
        return HTTP2ClientConfiguration(
            host: environment.host, port: environment.port, tls: tls, connectTimeout: configuration.timeouts.connect,
            pingInterval: configuration.timeouts.ping, stallInterval: configuration.timeouts.stall,
            pingTimeout: configuration.timeouts.pingTimeout,
            maximumConcurrentStreams: configuration.pool.maxStreamsPerConnection
        )
    }

    /// How many sends may usefully be in flight now: the pool's open streams.
    public var window: Int { self.transport.window }

    /// Connections of the pool that are open and usable now (0 for other transports).
    public var openConnections: Int { (self.transport as? ConnectionPool)?.openConnections ?? 0 }

    /// How many provider tokens were signed so far (one per refresh, never one per push).
    public var providerTokenSignings: Int { self.tokens?.signingCount ?? 0 }

    /// Closes every connection; sends in flight finish or fail within `gracePeriod`. Later sends
    /// fail with ``APNSError/Kind/shutdown``.
    public func shutdown(gracePeriod: Duration = .seconds(5)) async {
        guard !self.shutdownState.exchange(true, ordering: .acquiringAndReleasing) else { return }
        await self.transport.shutdown(gracePeriod: gracePeriod)
        if self.channelTransport as AnyObject !== self.transport as AnyObject {
            await self.channelTransport.shutdown(gracePeriod: gracePeriod)
        }
        self.logger.debug("APNs client shut down")
    }

    // MARK: Sending

    /// Sends any notification to a device token.
    /// - Parameters:
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
        try await self.execute(prepared.request(to: token), pushType: prepared.pushType, token: token.hexString,
                               deadline: deadline ?? .now + self.configuration.timeouts.request)
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
        return try await self.execute(prepared.request(), pushType: .liveactivity, token: nil,
                                      deadline: deadline ?? .now + self.configuration.timeouts.request)
    }

    /// Sends an already prepared broadcast (validated and encoded once, as from JSON).
    public func send(_ prepared: APNSPreparedBroadcast, deadline: ContinuousClock.Instant? = nil) async throws(APNSError) -> APNSSendResult {
        try await self.execute(prepared.request(), pushType: .liveactivity, token: nil,
                               deadline: deadline ?? .now + self.configuration.timeouts.request)
    }

    /// Sends one request with the retry policy.
    func execute(
        _ request: APNSHTTPRequest, pushType: APNSPushType, token: String?, deadline: ContinuousClock.Instant
    ) async throws(APNSError) -> APNSSendResult {
        try await self.executeRaw(request, pushType: pushType, token: token, deadline: deadline).result
    }

    /// Where a push that an earlier try (the bulk sender's batch) did not settle goes on from.
    struct PriorAttempt {
        /// What the push has been through.
        var state = SendState()
        /// The provider token APNs called expired: renew it once before sending.
        var expiredToken: APNSProviderToken?
        /// The wait the decision asked for before the next try.
        var wait: Duration = .zero
    }

    /// Sends one request as ``SendDecision`` says (retries, replays, one provider-token renewal)
    /// and returns the response too. Every send goes through here.
    func executeRaw(
        _ request: APNSHTTPRequest, pushType: APNSPushType, token: String?, deadline: ContinuousClock.Instant,
        channelAPI: Bool = false, prior: PriorAttempt = PriorAttempt()
    ) async throws(APNSError) -> (result: APNSSendResult, response: HTTP2Response) {
        let transport = channelAPI ? self.channelTransport : self.transport
        let authority = channelAPI ? self.channelAuthority : self.pushAuthority
        let policy = self.configuration.retry
        var state = prior.state
        let started = ContinuousClock.now
        self.metrics.inFlight.increment()
        defer { self.metrics.inFlight.decrement() }
        if let expired = prior.expiredToken {
            self.renew(expired)
        }
        if prior.wait > .zero {
            try await self.wait(prior.wait, state: state)
        }
        while true {
            if self.shutdownState.load(ordering: .acquiring) {
                throw APNSError(kind: .shutdown, attempts: state.attempts, mayHaveBeenDelivered: state.mayHaveBeenDelivered,
                                detail: "the client is shut down")
            }
            var headers: [HTTP2HeaderField] = []
            headers.reserveCapacity(request.headers.count + 1)
            var providerToken: APNSProviderToken?
            if let tokens = self.tokens {
                do {
                    providerToken = try tokens.currentToken()
                } catch {
                    throw APNSError(kind: .credentials, attempts: state.attempts, mayHaveBeenDelivered: state.mayHaveBeenDelivered,
                                    detail: "\(error)")
                }
                headers.append(HTTP2HeaderField("authorization", providerToken!.authorizationHeaderValue))
            }
            for header in request.headers { headers.append(HTTP2HeaderField(header.name, header.value)) }
            let http2 = HTTP2Request(method: request.method, authority: authority, path: request.path, headers: headers, body: request.body)
            let outcome: SendTry
            var answer: (response: HTTP2Response, rejection: APNSErrorResponse?)?
            var transportError: (any Error)?
            do {
                let response = try await transport.send(http2, deadline: deadline)
                let rejection = (200..<300).contains(response.status) ? nil : APNSErrorResponse(response)
                answer = (response, rejection)
                outcome = .answered(status: response.status, reason: rejection?.reason)
            } catch {
                transportError = error
                outcome = SendTry(error)
            }
            let decision = SendDecision.after(
                outcome, state: &state, policy: policy, renewableToken: self.tokens != nil, remaining: ContinuousClock.now.duration(to: deadline)
            )
            switch decision {
            case .accept:
                // The ids stay in the response until someone reads them.
                let elapsed = ContinuousClock.now - started
                self.metrics.accepted(pushType: pushType, latency: elapsed)
                let result = APNSSendResult(response: answer!.response, attempts: state.attempts,
                                            mayHaveBeenDeliveredTwice: state.mayHaveBeenDelivered, duration: elapsed)
                return (result, answer!.response)
            case .reject:
                let rejection = answer!.rejection!
                self.metrics.rejected(pushType: pushType, reason: rejection.reason.rawValue, latency: .now - started)
                throw APNSError(rejection, state: state)
            case .renewProviderToken:
                self.renew(providerToken!)
            case .retry(let wait), .replay(let wait):
                self.metrics.count(decision)
                self.logger.debug(decision.isReplay ? "replaying a push APNs did not process" : "retrying", metadata: [
                    "apns.push_type": "\(pushType)", "apns.attempt": "\(state.attempts)", "apns.replay": "\(state.replays)",
                    "apns.reason": "\(answer?.rejection?.reason.rawValue ?? transportError.map { "\($0)" } ?? "-")",
                    "apns.token": "\(token.map(Self.abbreviate) ?? "-")",
                ])
                try await self.wait(wait, state: state)
            case .fail(let kind):
                self.metrics.failed(pushType: pushType)
                let detail = transportError.map { ($0 as? HTTP2ClientError)?.description ?? "\($0)" } ?? ""
                throw APNSError(kind: kind, attempts: state.attempts, mayHaveBeenDelivered: state.mayHaveBeenDelivered, detail: detail)
            }
        }
    }

    /// Waits before the next try; cancellation ends the send.
    private func wait(_ duration: Duration, state: SendState) async throws(APNSError) {
        guard duration > .zero else { return }
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw APNSError(kind: .cancelled, attempts: state.attempts, mayHaveBeenDelivered: state.mayHaveBeenDelivered,
                            detail: "cancelled while waiting to send again")
        }
    }

    /// Signs a new provider token in place of `expired` (others sharing it see the new one).
    private func renew(_ expired: APNSProviderToken) {
        guard let tokens = self.tokens else { return }
        _ = try? tokens.tokenAfterExpiredProviderToken(rejected: expired)
        self.metrics.tokenRefreshes.increment()
        self.logger.info("provider token expired; signed a new one", metadata: ["apns.key_id": "\(tokens.keyID)"])
    }

    /// The first and last 4 hex digits of a token, for logs.
    static func abbreviate(_ token: String) -> String {
        token.count > 12 ? "\(token.prefix(4))…\(token.suffix(4))" : token
    }
}

/// Runs `body` with a client and shuts it down on every path, thrown errors included.
public func withAPNSClient<Result: Sendable>(
    configuration: APNSClient.Configuration,
    _ body: (APNSClient) async throws -> Result
) async throws -> Result {
    let client = try APNSClient(configuration: configuration)
    do {
        let result = try await body(client)
        await client.shutdown()
        return result
    } catch {
        await client.shutdown()
        throw error
    }
}

extension APNSClient: Service {
    /// Runs until the service group shuts down gracefully, then closes the connections.
    public func run() async throws {
        try? await gracefulShutdown()
        await self.shutdown()
    }
}
