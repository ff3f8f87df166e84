public import ForgeAPNsCore
internal import ForgeHTTP2

/// What the client sends requests through: its connection pool in production, or a stand-in that
/// answers in-process in unit tests of code that uses the client (`ForgeAPNsTesting`).
///
/// It speaks APNs requests and answers; retries, replays and provider tokens are the client's
/// business (``APNSClient``'s one send engine), connections and streams the transport's.
public protocol APNSTransport: Sendable {
    /// Sends `requests` together (one connection, one wake-up), each with `authorization` (the
    /// provider token's header value, `nil` with certificates), and returns one result per request,
    /// in order. Never retries: a failure says whether APNs may have processed the request.
    func send(
        _ requests: [APNSHTTPRequest], authorization: String?, deadline: ContinuousClock.Instant
    ) async -> [Result<APNSTransportResponse, APNSTransportError>]

    /// Sends one request (a `send`), as the batch method does a batch of one. A transport that
    /// does not implement it gets one that calls the batch method.
    func send(
        _ request: APNSHTTPRequest, authorization: String?, deadline: ContinuousClock.Instant
    ) async -> Result<APNSTransportResponse, APNSTransportError>

    /// How many requests may usefully be in flight now, and how many are worth sending together.
    var capacity: APNSTransportCapacity { get }

    /// Opens a connection now if none is open, and returns once one is ready (``APNSClient/connect(deadline:)``):
    /// `nil` then, or why none could be had by `deadline`. A transport with nothing to open
    /// returns `nil` at once.
    func connect(deadline: ContinuousClock.Instant) async -> APNSTransportError?

    /// The transport's background work (connects, closes, timers). ``APNSClient/run()`` runs it;
    /// it returns once ``shutdown(gracePeriod:)`` has finished.
    func run() async

    /// Stops taking requests; those in flight finish or fail within `gracePeriod`.
    func shutdown(gracePeriod: Duration) async
}

extension APNSTransport {
    /// The batch method with a batch of one.
    public func send(
        _ request: APNSHTTPRequest, authorization: String?, deadline: ContinuousClock.Instant
    ) async -> Result<APNSTransportResponse, APNSTransportError> {
        await self.send([request], authorization: authorization, deadline: deadline)[0]
    }

    /// Nothing to open.
    public func connect(deadline: ContinuousClock.Instant) async -> APNSTransportError? { nil }

    /// No background work.
    public func run() async {}
    /// Nothing to close.
    public func shutdown(gracePeriod: Duration) async {}
}

/// How much a transport can carry now: what bulk sends size their batches and workers by.
public struct APNSTransportCapacity: Hashable, Sendable {
    /// Requests that may usefully be in flight now (open streams, plus a connection's worth while
    /// the pool may still grow).
    public var window: Int
    /// The most requests worth sending together (the streams of one connection).
    public var batch: Int

    /// Creates a capacity.
    public init(window: Int, batch: Int) {
        self.window = max(1, window)
        self.batch = max(1, min(batch, window))
    }
}

/// What APNs answered to one request: its status, headers and body, as received.
public struct APNSTransportResponse: Sendable {
    /// `:status`.
    public var status: Int
    /// The body (empty for 200; `{"reason":…}` for errors).
    public var body: [UInt8]
    private var lookup: Headers

    /// Creates a response.
    public init(status: Int, headers: [APNSHeaderField] = [], body: [UInt8] = []) {
        self.status = status
        self.body = body
        self.lookup = .fields(headers)
    }

    /// The pool's HTTP/2 response, whose headers stay as received until read: a bulk send builds
    /// no strings nobody reads.
    init(_ response: HTTP2Response) {
        self.status = response.status
        self.body = response.body
        self.lookup = .http2(response)
    }

    /// The value of the first header called `name` (lower case).
    public subscript(header name: String) -> String? {
        switch self.lookup {
        case .fields(let fields): return fields.first { $0.name == name }?.value
        case .http2(let response): return response[header: name]
        }
    }

    /// Every header, in order.
    public var headers: [APNSHeaderField] {
        switch self.lookup {
        case .fields(let fields): return fields
        case .http2(let response): return response.headers.map { APNSHeaderField($0.name, $0.value) }
        }
    }

    /// Whether APNs accepted the request (2xx).
    public var isSuccess: Bool { (200..<300).contains(self.status) }

    /// The rejection this response carries, when it is not a 2xx.
    public var rejection: APNSErrorResponse? {
        self.isSuccess ? nil : APNSErrorResponse(status: self.status, headers: self.headers.map { ($0.name, $0.value) }, body: self.body)
    }

    private enum Headers: Sendable {
        case fields([APNSHeaderField])
        case http2(HTTP2Response)
    }
}

/// Why a transport has no answer for a request, and whether APNs may have processed it.
public struct APNSTransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Hashable, Sendable {
        /// APNs certainly did not process it (a refused stream, a stream above a GOAWAY's last
        /// stream id, a request queued on a connection that closed): sending it again is safe.
        case notProcessed
        /// No connection could be made (connect, TLS, ALPN); nothing left.
        case unreachable
        /// It left and the connection failed before the answer: APNs may have processed it.
        case lost
        /// The deadline passed first.
        case deadlineExceeded
        /// The calling task was cancelled.
        case cancelled
        /// The transport was shut down.
        case shutdown
        /// It cannot be sent as it is (a header HTTP/2 refuses).
        case invalidRequest
    }

    /// What happened.
    public var kind: Kind
    /// Whether APNs may have processed the request (always for ``Kind/lost``; for a deadline,
    /// a cancellation or a shutdown, whether the request had left).
    public var mayHaveBeenProcessed: Bool
    /// For ``Kind/unreachable``: trying again soon cannot help (the name does not resolve, the
    /// server's certificate is not trusted).
    public var isPermanent: Bool
    /// What the transport saw, for people.
    public var detail: String

    /// Creates an error.
    public init(_ kind: Kind, mayHaveBeenProcessed: Bool? = nil, isPermanent: Bool = false, detail: String) {
        self.kind = kind
        self.mayHaveBeenProcessed = mayHaveBeenProcessed ?? (kind == .lost)
        self.isPermanent = isPermanent && kind == .unreachable
        self.detail = detail
    }

    public var description: String { self.detail }
}
