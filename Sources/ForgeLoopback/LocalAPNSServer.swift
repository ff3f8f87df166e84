public import ForgeAPNsCore
package import ForgeHTTP2
package import struct Foundation.Date
internal import ForgeSupport
package import struct Foundation.UUID

/// A push the local server accepted (a device push or a broadcast).
package struct AcceptedPush: Sendable {
    /// When it was judged.
    package var date: Date
    /// The device token (lower-case hex); empty for a broadcast.
    package var token: String
    /// The broadcast channel, for broadcasts.
    package var channelID: String?
    /// The topic (`apns-topic`, or the bundle id of a broadcast).
    package var topic: String
    /// The push type (alert when the header was absent).
    package var pushType: APNSPushType
    /// Every header, in order.
    package var headers: [HTTP2HeaderField]
    /// The payload.
    package var payload: [UInt8]
    /// The `apns-id` (or broadcast `apns-request-id`) answered.
    package var apnsID: String
    /// The connection it came on.
    package var connectionID: UInt64

    /// The first value of a header.
    package subscript(header name: String) -> String? { self.headers.first { $0.name == name }?.value }
}

/// One judged request, as ``LocalAPNSServer`` reports it to an observer (`apnsctl serve --json`):
/// the request and its answer as the inbox keeps them (``entry``), and how long its answer took.
public struct LocalAPNSJudgement: Sendable {
    /// When it was judged.
    package var date: Date
    /// The judge's decision sent (for an injected fault, the fault's answer).
    package var decision: APNSDecision
    /// The fault applied, if any.
    package var fault: LocalAPNSFault?
    /// The connection.
    package var connectionID: UInt64
    /// How long the request waits for its answer at the server: the judging, plus the time the
    /// answer is held (`Listener.responseDelay` and a ``LocalAPNSFault/delay(_:)``).
    public var duration: Duration
    /// Why it was rejected, in one sentence; `nil` when accepted.
    package var why: String?
    /// The request as it came: method, path, headers (authorization included: redact before
    /// showing) and body.
    package var request: HTTP2ServerRequest
    /// Its ``LocalAPNSInboxEntry/sequence`` in the server's inbox; 0 without one.
    package var sequence: Int = 0

    /// The judgement as an inbox entry (the shape of the inbox API and of `apnsctl serve --record`).
    public var entry: LocalAPNSInboxEntry {
        LocalAPNSInboxEntry(
            sequence: self.sequence, date: self.date, method: self.request.method, path: self.request.path,
            headers: self.request.headers, body: self.request.body, decision: self.decision, why: self.why, fault: self.fault,
            connectionID: self.connectionID, lints: self.decision.lint.map { [$0] } ?? []
        )
    }
}

/// A local APNs-compatible HTTP/2 server on loopback: it judges each request as APNs does
/// (device pushes, broadcasts, the channel API, token and certificate authentication),
/// answers with Apple's statuses, reasons and headers, applies the connection rules (one stream
/// until the first accepted push, GOAWAY `Shutdown` and `IdleTimeout`), records every accepted push
/// so a test can await it, and injects scripted faults.
///
/// To play a server 20-50 ms away, as APNs is, set the `responseDelay` of the
/// ``Listener``: every answer is held that long on its connection's I/O thread (the
/// round trip is the transport's property, like the address and TLS, not the judge's). A
/// ``LocalAPNSFault/delay(_:)`` fault holds its answer that much longer.
///
/// ``shutdown()`` ends everything the server started: its connections, and the tasks that watch
/// them, which it awaits.
public final class LocalAPNSServer: Sendable {
    /// The port it listens on.
    public var port: Int { self.server.port }
    /// Every judged request, when the server was started with an inbox.
    public let inbox: LocalAPNSInbox?
    /// The HTTP/2 configuration it listens with.
    package var http2Configuration: HTTP2ServerConfiguration { self.server.configuration }
    private let server: HTTP2Server
    private let state: LockedBox<State>
    /// Watches new connections and sweeps closed and idle ones; ends when the server shuts down,
    /// which awaits it.
    private let background: Task<Void, Never>

    struct State {
        var judge: APNSJudge
        var faults = FaultPlan()
        var history: [AcceptedPush] = []
        /// Pushes accepted so far.
        var acceptedCount = 0
        var subscribers: [Int: AsyncStream<AcceptedPush>.Continuation] = [:]
        var nextSubscriber = 0
        var connections: [UInt64: ConnectionState] = [:]
        var stopping = false
    }

    struct ConnectionState {
        var handle: HTTP2ServerConnection
        var lastActivity: ContinuousClock.Instant
        var streamsRaised = false
        var narrowed = false
        var closing = false
        /// The last stream id of a GOAWAY the fault plan sent: later streams were not processed.
        var goAwayLastStreamID: Int32?
    }

    private init(server: HTTP2Server, state: LockedBox<State>, background: Task<Void, Never>, inbox: LocalAPNSInbox?) {
        self.server = server
        self.inbox = inbox
        self.state = state
        self.background = background
    }

    /// The SETTINGS APNs was logged sending (C2): header table 4096, window 65535, frame 16384,
    /// header list 8000, and the stream limit.
    package static func apnsSettings(maxConcurrentStreams: UInt32) -> HTTP2Settings {
        HTTP2Settings(
            maxConcurrentStreams: maxConcurrentStreams, initialWindowSize: 65_535, maxFrameSize: 16_384,
            headerTableSize: 4_096, maxHeaderListSize: 8_000
        )
    }

    /// Starts a server.
    /// - Parameters:
    ///   - configuration: how to judge.
    ///   - listener: where to listen and with what TLS (127.0.0.1, port 0, h2c by default), and how far
    ///     away to seem (`responseDelay`, the time each answer is held: none by default). Each
    ///     connection announces APNs' settings (C2); to accept certificates, set
    ///     `tls.requestsClientCertificate` and `tls.clientCertificateTrustRoots`.
    ///   - tokens: the registered tokens.
    ///   - apps: the registered apps (their broadcast capability).
    ///   - channels: the registered broadcast channels.
    ///   - certificates: the registered client certificates.
    ///   - authenticator: token authentication (A1-A8); `nil` accepts pushes without a provider token.
    ///   - clock: the time used for judging (token age, 410 and rate windows).
    ///   - inbox: where every judged request is recorded (``LocalAPNSInbox``); `nil` keeps none. The
    ///     caller owns it: it outlives the server, queryable, until the caller closes it.
    ///   - observer: called with every judged request, on the connection's thread; keep it short.
    public static func start(
        _ configuration: LocalAPNSConfiguration = LocalAPNSConfiguration(),
        listener: Listener = Listener(),
        tokens: [String: LocalAPNSTokenRecord] = [:],
        apps: [LocalAPNSApp] = [],
        channels: [LocalAPNSChannel] = [],
        certificates: [LocalAPNSCertificate] = [],
        authenticator: TokenAuthenticator? = nil,
        clock: any APNSWallClock = .system,
        inbox: LocalAPNSInbox? = nil,
        observer: (@Sendable (LocalAPNSJudgement) -> Void)? = nil
    ) throws -> LocalAPNSServer {
        try Self.start(
            configuration, http2: listener.http2, tokens: tokens, apps: apps, channels: channels, certificates: certificates,
            authenticator: authenticator, clock: clock, inbox: inbox, observer: observer
        )
    }

    /// Starts a server on the transport's own configuration (its `settings` replaced by APNs').
    package static func start(
        _ configuration: LocalAPNSConfiguration = LocalAPNSConfiguration(),
        http2: HTTP2ServerConfiguration,
        tokens: [String: LocalAPNSTokenRecord] = [:],
        apps: [LocalAPNSApp] = [],
        channels: [LocalAPNSChannel] = [],
        certificates: [LocalAPNSCertificate] = [],
        authenticator: TokenAuthenticator? = nil,
        clock: any APNSWallClock = .system,
        inbox: LocalAPNSInbox? = nil,
        observer: (@Sendable (LocalAPNSJudgement) -> Void)? = nil
    ) throws -> LocalAPNSServer {
        let judge = APNSJudge(
            configuration: configuration, tokens: tokens, apps: apps, channels: channels, certificates: certificates,
            authenticator: authenticator
        )
        let state = LockedBox(State(judge: judge))
        var http2 = http2
        http2.settings = Self.apnsSettings(
            maxConcurrentStreams: configuration.oneStreamUntilFirstPush ? 1 : configuration.maxConcurrentStreams
        )
        let hold = http2.responseDelay
        let server = try HTTP2Server.start(http2) { request, responder in
            Self.handle(
                request, responder: responder, state: state, configuration: configuration, clock: clock,
                hold: hold, inbox: inbox, observer: observer
            )
        }
        let idle = configuration.idleTimeout
        // One task, awaited by shutdown(), whose children do the background work: nothing outlives the server.
        let background = Task {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    // Ends when the server stops accepting (its shutdown finishes the stream) or on cancellation.
                    for await connection in server.connections {
                        state.withLock { state in
                            if state.connections[connection.id] == nil, !state.stopping {
                                state.connections[connection.id] = ConnectionState(handle: connection, lastActivity: .now)
                            }
                        }
                    }
                }
                // Closed connections are forgotten (and their provider-token state with them) whether or
                // not idle connections are closed: a long-running server must not grow with every client.
                group.addTask { await Self.sweepConnections(idleTimeout: idle, state: state, authenticator: authenticator) }
            }
        }
        return LocalAPNSServer(server: server, state: state, background: background, inbox: inbox)
    }

    // MARK: Handling a request (on the connection's I/O thread)

    private static func handle(
        _ request: HTTP2ServerRequest, responder: HTTP2Responder, state: LockedBox<State>,
        configuration: LocalAPNSConfiguration, clock: any APNSWallClock, hold: Duration,
        inbox: LocalAPNSInbox?, observer: (@Sendable (LocalAPNSJudgement) -> Void)?
    ) -> HTTP2Response? {
        let arrived = observer == nil ? nil : ContinuousClock.now
        let now = clock.now
        let judged = APNSJudge.Request(
            method: request.method, path: request.path, headers: request.headers.map { (name: $0.name, value: $0.value) },
            body: request.body, clientCertificate: request.clientCertificate,
            clientCertificateVerified: request.clientCertificateVerified
        )
        let connection = responder.connection
        let explains = inbox != nil || observer != nil
        let (fault, decision, settings, why) = state.withLock { state -> (LocalAPNSFault?, APNSDecision?, UInt32?, String?) in
            var entry = state.connections[connection.id] ?? ConnectionState(handle: connection, lastActivity: .now)
            entry.lastActivity = .now
            defer { state.connections[connection.id] = entry }
            if let last = entry.goAwayLastStreamID, request.streamID > last {
                // After GOAWAY nothing above its last stream id is processed (RFC 9113 §6.8).
                return (.reset(.refusedStream), nil, nil, nil)
            }
            let fault = state.faults.isEmpty ? nil : state.faults.next()
            if case .goAway = fault { entry.goAwayLastStreamID = request.streamID }
            switch fault {
            case .respond(let status, let reason):
                let why = explains ? "an injected fault answered \(status) \(reason.rawValue) without judging the request" : nil
                return (fault, Self.injected(status: status, reason: reason, for: judged), nil, why)
            case .reset, .dropConnection(processed: false):
                return (fault, nil, nil, nil)
            default:
                break
            }
            let decision = state.judge.judge(judged, connectionID: connection.id, now: now)
            var settings: UInt32?
            if case .maxConcurrentStreams(let limit) = fault { settings = limit }
            // C2: the first accepted push opens the connection to N streams; C3: a rejection other
            // than 410 narrows it to one until the next success.
            if decision.isAccepted {
                if (configuration.oneStreamUntilFirstPush && !entry.streamsRaised) || entry.narrowed {
                    settings = settings ?? configuration.maxConcurrentStreams
                }
                entry.streamsRaised = true
                entry.narrowed = false
            } else if configuration.oneStreamAfterRejection, decision.status != 410, (400..<500).contains(decision.status),
                !entry.narrowed
            {
                entry.narrowed = true
                settings = settings ?? 1
            }
            if decision.isAccepted, decision.target.isPush {
                state.acceptedCount += 1
                if configuration.keepsHistory || !state.subscribers.isEmpty,
                    let push = Self.acceptedPush(request, decision: decision, date: now)
                {
                    if configuration.keepsHistory { state.history.append(push) }
                    for subscriber in state.subscribers.values { subscriber.yield(push) }
                }
            }
            // Only rejections are explained, and only when someone reads the sentence.
            let why = explains && !decision.isAccepted ? state.judge.explain(decision, for: judged, now: now) : nil
            return (fault, decision, settings, why)
        }
        if let settings { connection.updateSettings(Self.apnsSettings(maxConcurrentStreams: settings)) }
        var sequence = 0
        if let inbox, let decision {
            sequence = inbox.append(LocalAPNSInboxEntry(
                sequence: 0, date: now, method: request.method, path: request.path, headers: request.headers, body: request.body,
                decision: decision, why: why, fault: fault, connectionID: connection.id, lints: decision.lint.map { [$0] } ?? []
            ))
        }
        if let observer, let decision, let arrived {
            var held = hold
            if case .delay(let extra) = fault { held += extra }
            observer(LocalAPNSJudgement(
                date: now, decision: decision, fault: fault, connectionID: connection.id, duration: ContinuousClock.now - arrived + held,
                why: why, request: request, sequence: sequence
            ))
        }
        switch fault {
        case .reset(let code):
            responder.reset(HTTP2ErrorCode(code.rawValue))
            return nil
        case .dropConnection:
            connection.closeAbruptly()
            return nil
        case .stall:
            connection.setReading(false)
            return nil
        case .delay(let duration):
            // Held by the connection's I/O thread, like the configured response delay (and on top of it).
            responder.respond(Self.response(for: decision!, date: now), after: duration)
            return nil
        case .goAway(let code, let reason):
            responder.respond(Self.response(for: decision!, date: now))
            connection.goAway(lastStreamID: request.streamID, errorCode: HTTP2ErrorCode(code.rawValue), debugData: Self.reasonJSON(reason))
            return nil
        default:
            return Self.response(for: decision!, date: now)
        }
    }

    private static func injected(status: Int, reason: APNSErrorReason, for request: APNSJudge.Request) -> APNSDecision {
        let device = request.path.hasPrefix(APNSJudge.devicePrefix)
        let header = device ? "apns-id" : "apns-request-id"
        let echoed = request.headers.first { $0.name == header }?.value
        return APNSDecision(
            status: status, reason: reason, timestamp: nil,
            apnsID: echoed.flatMap { (try? APNSID($0)) != nil ? $0 : nil } ?? GeneratedID.upper(),
            idHeader: header, apnsUniqueID: nil, headers: [], body: [],
            target: device ? .device(token: String(request.path.dropFirst(APNSJudge.devicePrefix.count))) : .unknown,
            pushType: nil, lint: nil
        )
    }

    private static func acceptedPush(_ request: HTTP2ServerRequest, decision: APNSDecision, date: Date) -> AcceptedPush? {
        switch decision.target {
        case .device(let token):
            return AcceptedPush(
                date: date, token: token, channelID: nil, topic: request[header: "apns-topic"] ?? "",
                pushType: decision.pushType ?? .alert, headers: request.headers, payload: request.body,
                apnsID: decision.apnsID, connectionID: request.connectionID
            )
        case .broadcast(let bundle, let channel):
            return AcceptedPush(
                date: date, token: "", channelID: channel, topic: bundle, pushType: .liveactivity, headers: request.headers,
                payload: request.body, apnsID: decision.apnsID, connectionID: request.connectionID
            )
        case .channels, .unknown:
            return nil
        }
    }

    /// `{"reason":"…"}`, as APNs puts in GOAWAY debug data.
    static func reasonJSON(_ reason: APNSErrorReason) -> [UInt8] {
        Array(#"{"reason":"\#(reason.rawValue)"}"#.utf8)
    }

    /// The HTTP/2 response APNs gives for `decision`: the request id always; `apns-unique-id` on
    /// sandbox and broadcast successes; `content-type: application/json` and `{"reason":…}`
    /// (+ `timestamp` on 410) on errors.
    static func response(for decision: APNSDecision, date: Date? = nil) -> HTTP2Response {
        var response = Self.response(for: decision)
        // `date`, as HTTP servers send it: what `apnsctl doctor` measures clock skew against.
        if let date { response.headers.append(HTTP2HeaderField("date", HTTPDate.string(date))) }
        return response
    }

    private static func response(for decision: APNSDecision) -> HTTP2Response {
        guard let reason = decision.reason else {
            var headers = [HTTP2HeaderField(decision.idHeader, decision.apnsID)]
            if let unique = decision.apnsUniqueID { headers.append(HTTP2HeaderField("apns-unique-id", unique)) }
            for header in decision.headers { headers.append(HTTP2HeaderField(header.name, header.value)) }
            if !decision.body.isEmpty { headers.append(HTTP2HeaderField("content-type", "application/json")) }
            return HTTP2Response(status: decision.status, headers: headers, body: decision.body)
        }
        let error = APNSErrorResponse(status: decision.status, reason: reason, timestamp: decision.timestamp)
        return HTTP2Response(
            status: decision.status,
            headers: [HTTP2HeaderField("content-type", "application/json"), HTTP2HeaderField(decision.idHeader, decision.apnsID)],
            body: error.jsonBody()
        )
    }

    /// Every few seconds (or a quarter of the idle timeout): drops closed connections, and sends
    /// GOAWAY {"reason":"IdleTimeout"} to those idle for `idleTimeout`.
    private static func sweepConnections(idleTimeout timeout: Duration?, state: LockedBox<State>, authenticator: TokenAuthenticator?) async {
        let tick = timeout.map { max($0 / 4, .milliseconds(5)) } ?? .seconds(5)
        while !Task.isCancelled {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            let (idle, closed) = state.withLock { state -> ([HTTP2ServerConnection], [UInt64]) in
                var idle: [HTTP2ServerConnection] = []
                var closed: [UInt64] = []
                for (id, entry) in state.connections {
                    if entry.handle.isClosed {
                        closed.append(id)
                    } else if let timeout, !entry.closing, now - entry.lastActivity >= timeout {
                        state.connections[id]?.closing = true
                        idle.append(entry.handle)
                    }
                }
                for id in closed { state.connections[id] = nil }
                return (idle, closed)
            }
            for connection in idle { connection.goAway(errorCode: .noError, debugData: Self.reasonJSON(.idleTimeout)) }
            for id in closed { authenticator?.forget(connectionID: id) }
        }
    }

    // MARK: Tests and tools

    /// Every push accepted so far (with ``LocalAPNSConfiguration/keepsHistory``).
    package var accepted: [AcceptedPush] { self.state.withLock { $0.history } }

    /// How many pushes were accepted, history or not.
    public var acceptedCount: Int { self.state.withLock { $0.acceptedCount } }

    /// How many connections the server accepted so far.
    public var acceptedConnections: Int { self.server.acceptedConnections }

    /// The pushes accepted from now on, as they are accepted (each call makes a new subscription;
    /// the stream ends when the server shuts down).
    package func acceptedPushes() -> AsyncStream<AcceptedPush> {
        let (stream, continuation) = AsyncStream.makeStream(of: AcceptedPush.self)
        let id = self.state.withLock { state -> Int? in
            guard !state.stopping else { return nil }
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [state = self.state] _ in
            _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Applies `fault` to `count` requests, starting after the next `afterRequests` requests.
    public func schedule(_ fault: LocalAPNSFault, afterRequests: Int = 0, count: Int = 1) {
        self.state.withLock { $0.faults.schedule(fault, afterRequests: afterRequests, count: count) }
    }

    /// Drops every fault not yet applied.
    public func clearFaults() {
        self.state.withLock { $0.faults.removeAll() }
    }

    /// Registers or updates a token.
    public func register(token: String, _ record: LocalAPNSTokenRecord) {
        self.state.withLock { $0.judge.tokens[token.lowercased()] = record }
    }

    /// Registers or updates an app.
    public func register(app: LocalAPNSApp) {
        self.state.withLock { $0.judge.apps[app.bundleID] = app }
    }

    /// Registers a channel (as if created through the channel API).
    public func register(channel: LocalAPNSChannel) {
        self.state.withLock { $0.judge.channels[channel.id] = channel }
    }

    /// Registers or updates (for example revokes) a client certificate.
    public func register(certificate: LocalAPNSCertificate) {
        self.state.withLock { $0.judge.certificates[certificate.sha256Fingerprint] = certificate }
    }

    /// The channels that exist now.
    public var channels: [LocalAPNSChannel] { self.state.withLock { Array($0.judge.channels.values) } }

    /// Announces a new stream limit on every open connection.
    public func updateMaxConcurrentStreams(_ limit: UInt32) {
        self.server.updateSettings(Self.apnsSettings(maxConcurrentStreams: limit))
    }

    /// Sends GOAWAY with `{"reason":"Shutdown"}` on every connection (C6), closes them and stops
    /// listening; answers still held (`Listener.responseDelay`, delay faults) are
    /// dropped. Subscriptions to accepted pushes end. Returns when the connections are closed and
    /// the server's background tasks have ended.
    public func shutdown() async {
        let subscribers = self.state.withLock { state in
            state.stopping = true
            let subscribers = Array(state.subscribers.values)
            state.subscribers.removeAll()
            return subscribers
        }
        await self.server.shutdown(goAwayDebugData: Self.reasonJSON(.shutdown))
        // The watcher has seen the last connection; the sweeper sleeps until cancelled.
        self.background.cancel()
        await self.background.value
        for subscriber in subscribers { subscriber.finish() }
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` (RFC 9110 IMF-fixdate), formatted once per second.
enum HTTPDate {
    private static let cache = LockedBox<(second: Int64, text: String)>((-1, ""))

    static func string(_ date: Date) -> String {
        let second = Int64(date.timeIntervalSince1970.rounded(.down))
        if let cached = Self.cache.withLock({ $0.second == second ? $0.text : nil }) { return cached }
        let text = Self.format(second)
        Self.cache.withLock { $0 = (second, text) }
        return text
    }

    static func format(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let weekday = Int((days % 7 + 11) % 7)  // 1970-01-01 was a Thursday
        let names = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(names[weekday]), \(two(day)) \(months[Int(month) - 1]) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)) GMT"
    }
}
