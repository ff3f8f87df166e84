public import ForgeHTTP2

/// What the client sends requests through: the connection pool in production, or an in-process
/// function in unit tests of code that uses the client (``APNSClient/init(configuration:transport:)``).
public protocol APNSTransport: Sendable {
    /// Sends one request. Errors are ``HTTP2ClientError``s, which say whether the request may have
    /// been processed; the client decides about retries.
    func send(_ request: HTTP2Request, deadline: ContinuousClock.Instant) async throws -> HTTP2Response

    /// Sends several requests at once, one result each, in order, without retries or replays:
    /// the bulk sender's fast path (one wake-up per batch instead of per request). The default
    /// sends them one by one.
    func sendBatch(_ requests: [HTTP2Request], deadline: ContinuousClock.Instant) async -> [Result<HTTP2Response, any Error>]

    /// How many requests may usefully be in flight now (the bulk sender's window).
    var window: Int { get }

    /// Closes connections; in-flight requests finish or fail within `gracePeriod`.
    func shutdown(gracePeriod: Duration) async
}

extension APNSTransport {
    public func sendBatch(_ requests: [HTTP2Request], deadline: ContinuousClock.Instant) async -> [Result<HTTP2Response, any Error>] {
        var results: [Result<HTTP2Response, any Error>] = []
        results.reserveCapacity(requests.count)
        for request in requests {
            do {
                results.append(.success(try await self.send(request, deadline: deadline)))
            } catch {
                results.append(.failure(error))
            }
        }
        return results
    }
}

/// A transport that answers in-process with a function: no sockets, no TLS. For unit tests of
/// code that sends with ``APNSClient``; the loopback mode runs the real thing end to end.
public struct APNSInProcessTransport: APNSTransport {
    private let handler: @Sendable (HTTP2Request) async throws -> HTTP2Response
    /// The window reported to bulk sends.
    public let window: Int

    /// Creates a transport that answers every request with `handler`.
    public init(window: Int = 100, handler: @escaping @Sendable (HTTP2Request) async throws -> HTTP2Response) {
        self.window = window
        self.handler = handler
    }

    public func send(_ request: HTTP2Request, deadline: ContinuousClock.Instant) async throws -> HTTP2Response {
        try await self.handler(request)
    }

    public func shutdown(gracePeriod: Duration) async {}
}
