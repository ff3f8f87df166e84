public import ForgeAPNs
public import ForgeAPNsCore

/// A transport that answers in-process with a function: no sockets, no TLS, no background work.
/// For unit tests of code that sends with ``APNSClient``; `ForgeLoopback` runs the real thing end
/// to end.
///
/// ```swift
/// let client = try APNSClient(configuration: configuration, transport: APNSInProcessTransport { request in
///     APNSTransportResponse(status: 200, headers: [APNSHeaderField("apns-id", "…")])
/// })
/// try await withAPNSClient(client) { client in … }
/// ```
public struct APNSInProcessTransport: APNSTransport {
    private let handler: @Sendable (APNSHTTPRequest) async throws -> APNSTransportResponse
    /// The window reported to bulk sends.
    public let window: Int

    /// Creates a transport that answers every request with `handler`. The request it sees carries
    /// the `authorization` header first (with token authentication). A thrown
    /// ``APNSTransportError`` is the transport's failure as is; any other error reads as a request
    /// lost after it left (APNs may have processed it).
    public init(window: Int = 100, handler: @escaping @Sendable (APNSHTTPRequest) async throws -> APNSTransportResponse) {
        self.window = max(1, window)
        self.handler = handler
    }

    public var capacity: APNSTransportCapacity { APNSTransportCapacity(window: self.window, batch: self.window) }

    public func send(
        _ requests: [APNSHTTPRequest], authorization: String?, deadline: ContinuousClock.Instant
    ) async -> [Result<APNSTransportResponse, APNSTransportError>] {
        var results: [Result<APNSTransportResponse, APNSTransportError>] = []
        results.reserveCapacity(requests.count)
        for var request in requests {
            if let authorization { request.headers.insert(APNSHeaderField("authorization", authorization), at: 0) }
            do {
                results.append(.success(try await self.handler(request)))
            } catch let error as APNSTransportError {
                results.append(.failure(error))
            } catch is CancellationError {
                results.append(.failure(APNSTransportError(.cancelled, detail: "the handler was cancelled")))
            } catch {
                results.append(.failure(APNSTransportError(.lost, detail: "\(error)")))
            }
        }
        return results
    }
}
