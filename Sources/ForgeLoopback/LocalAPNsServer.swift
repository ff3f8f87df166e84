public import ForgeAPNsCore
public import ForgeHTTP2
public import struct Foundation.Date
internal import ForgeSupport

/// A push the local server accepted.
public struct AcceptedPush: Sendable {
    /// When it was judged.
    public var date: Date
    /// The device token.
    public var token: String
    /// The push type (alert when the header was absent).
    public var pushType: APNSPushType
    /// Every header, in order.
    public var headers: [HTTP2HeaderField]
    /// The payload.
    public var payload: [UInt8]
    /// The `apns-id` answered.
    public var apnsID: String
    /// The connection it came on.
    public var connectionID: UInt64
}

/// A local APNs-compatible HTTP/2 server on loopback: it judges each request as APNs does
/// (``APNsJudge``), answers with Apple's statuses, reasons and headers, and records every accepted
/// push so a test can await it.
///
/// This first slice judges request shape, payload and token state; token and certificate
/// authentication, broadcasts, channels and fault plans come next.
public final class LocalAPNsServer: Sendable {
    /// The port it listens on.
    public var port: Int { self.server.port }
    /// Every accepted push, as it is accepted.
    public let acceptedPushes: AsyncStream<AcceptedPush>
    private let server: HTTP2Server
    private let judge: LockedBox<APNsJudge>
    private let recorded: LockedBox<[AcceptedPush]>

    private init(server: HTTP2Server, judge: LockedBox<APNsJudge>, recorded: LockedBox<[AcceptedPush]>,
                 acceptedPushes: AsyncStream<AcceptedPush>) {
        self.server = server
        self.judge = judge
        self.recorded = recorded
        self.acceptedPushes = acceptedPushes
    }

    /// Starts a server.
    /// - Parameters:
    ///   - configuration: how to judge.
    ///   - http2: where to listen and with what TLS (127.0.0.1, port 0, h2c by default).
    ///   - tokens: the registered tokens.
    ///   - authenticator: token authentication (A1-A8); `nil` accepts pushes without a provider token.
    public static func start(
        _ configuration: LocalAPNsConfiguration = LocalAPNsConfiguration(),
        http2: HTTP2ServerConfiguration = HTTP2ServerConfiguration(),
        tokens: [String: LocalAPNsTokenRecord] = [:],
        authenticator: TokenAuthenticator? = nil
    ) throws -> LocalAPNsServer {
        let judge = LockedBox(APNsJudge(configuration: configuration, tokens: tokens))
        let recorded = LockedBox<[AcceptedPush]>([])
        let (stream, continuation) = AsyncStream.makeStream(of: AcceptedPush.self)
        let server = try HTTP2Server.start(http2) { request, _ in
            let judged = APNsJudge.Request(
                method: request.method, path: request.path,
                headers: request.headers.map { (name: $0.name, value: $0.value) }, body: request.body
            )
            let verdict = judge.withLock { $0 }.judge(judged, connectionID: request.connectionID, authenticator: authenticator)
            if verdict.isAccepted {
                let push = AcceptedPush(
                    date: Date(), token: String(request.path.dropFirst("/3/device/".count)),
                    pushType: request[header: "apns-push-type"].flatMap(APNSPushType.init(rawValue:)) ?? .alert,
                    headers: request.headers, payload: request.body, apnsID: verdict.apnsID, connectionID: request.connectionID
                )
                recorded.withLock { $0.append(push) }
                continuation.yield(push)
            }
            return Self.response(for: verdict)
        }
        return LocalAPNsServer(server: server, judge: judge, recorded: recorded, acceptedPushes: stream)
    }

    /// The HTTP/2 response APNs gives for `verdict`: `apns-id` always; `apns-unique-id` on sandbox
    /// successes; `content-type: application/json` and `{"reason":…}` (+ `timestamp` on 410) on errors.
    static func response(for verdict: APNsVerdict) -> HTTP2Response {
        guard let reason = verdict.reason else {
            var headers = [HTTP2HeaderField("apns-id", verdict.apnsID)]
            if let unique = verdict.apnsUniqueID { headers.append(HTTP2HeaderField("apns-unique-id", unique)) }
            return HTTP2Response(status: 200, headers: headers)
        }
        let error = APNSErrorResponse(status: verdict.status, reason: reason, timestamp: verdict.timestamp)
        return HTTP2Response(
            status: verdict.status,
            headers: [HTTP2HeaderField("content-type", "application/json"), HTTP2HeaderField("apns-id", verdict.apnsID)],
            body: error.jsonBody()
        )
    }

    /// Every push accepted so far.
    public var accepted: [AcceptedPush] { self.recorded.withLock { $0 } }

    /// Registers or updates a token.
    public func register(token: String, _ record: LocalAPNsTokenRecord) {
        self.judge.withLock { $0.tokens[token.lowercased()] = record }
    }

    /// Stops the server.
    public func shutdown() async { await self.server.shutdown() }
}
