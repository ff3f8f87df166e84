@testable import ForgeHTTP2

/// A client core and a server core connected by memory: bytes move only when `pump()` is called,
/// so a test controls exactly when each side sees the other's frames.
final class InMemoryPair {
    let client: HTTP2ClientCore
    let server: HTTP2ServerCore
    /// Every request the server received, in order.
    private(set) var received: [HTTP2ServerRequest] = []
    /// Results by request id; a second completion for one id is recorded as a failure of the test.
    private(set) var results: [UInt64: Result<HTTP2Response, HTTP2ClientError>] = [:]
    private(set) var duplicateCompletions = 0
    private var nextID: UInt64 = 1
    /// Answers each request as it arrives when set; otherwise requests wait for `respond`.
    var autoRespond: ((HTTP2ServerRequest) -> HTTP2Response)?
    /// The most streams the server had waiting for a response at once, since the last reset.
    var maxAwaiting = 0

    init(serverSettings: HTTP2Settings = HTTP2Settings(maxConcurrentStreams: 100), answersPings: Bool = true) throws {
        self.client = try HTTP2ClientCore()
        self.server = try HTTP2ServerCore(connectionID: 1, settings: serverSettings, answersPings: answersPings)
        self.server.onRequest = { [unowned self] request in
            self.received.append(request)
            if let autoRespond = self.autoRespond {
                self.server.respond(to: request.streamID, with: autoRespond(request))
            }
            self.maxAwaiting = max(self.maxAwaiting, self.server.awaitingResponse.count)
        }
    }

    /// Queues a request and returns its id.
    @discardableResult
    func send(_ request: HTTP2Request, deadline: UInt64? = nil) -> UInt64 {
        let id = self.nextID
        self.nextID += 1
        self.client.enqueue(
            HTTP2ClientCore.Pending(id: id, request: request, deadline: deadline) { [unowned self] result in
                if self.results[id] != nil { self.duplicateCompletions += 1 }
                self.results[id] = result
            }
        )
        return id
    }

    /// Moves bytes both ways until neither side has anything to say.
    func pump() throws {
        var rounds = 0
        while true {
            rounds += 1
            precondition(rounds < 10_000, "the sessions never settle")
            var toServer: [UInt8] = []
            try self.client.drainOutput(into: &toServer, limit: .max)
            if !toServer.isEmpty { try toServer.withUnsafeBytes { try self.server.receive($0) } }
            var toClient: [UInt8] = []
            try self.server.drainOutput(into: &toClient, limit: .max)
            if !toClient.isEmpty { try toClient.withUnsafeBytes { try self.client.receive($0) } }
            if toServer.isEmpty && toClient.isEmpty { return }
        }
    }
}

func request(_ path: String = "/3/device/abc", body: String = "{}", headers: [HTTP2HeaderField] = []) -> HTTP2Request {
    HTTP2Request(authority: "localhost", path: path, headers: headers, body: Array(body.utf8))
}
