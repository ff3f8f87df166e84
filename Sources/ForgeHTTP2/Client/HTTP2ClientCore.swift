#if canImport(Glibc)
import Glibc
#endif

/// The client side of one HTTP/2 connection, without I/O: a queue of requests, the open streams,
/// and the rules for completing each request exactly once.
///
/// ## Function
/// Requests wait in the queue until a stream is free: the number of open streams never exceeds the
/// peer's `SETTINGS_MAX_CONCURRENT_STREAMS` (assumed to be 1 until the first SETTINGS arrive) nor the
/// local cap. A limit that drops while streams are open is simply waited out. After GOAWAY nothing
/// new starts; queued requests fail as `goingAway` (never processed), streams above the last
/// stream id are refused by nghttp2 and fail the same way, the others still complete.
///
/// ## Implementation
/// Confined to one thread (the connection's I/O thread, or a test). Completions are called on that
/// thread, once per request; the table of open streams and the queue are the only owners of
/// completion closures, and every path that removes an entry calls it.
final class HTTP2ClientCore: NGHTTP2SessionDelegate {
    #if DEBUG
    /// How a caller of `HTTP2Connection.send` waits. Checked in debug builds, which every test run
    /// is (ThreadSanitizer's among them: it cannot see the runtime's ordering between an unchecked
    /// resume and the task, and reports a race that is not there). Unchecked in release builds: the
    /// core completes every request exactly once (SessionTests count duplicate completions), and a
    /// checked continuation allocates a canary per request that the I/O thread frees, 7 % of the
    /// CPU of 100 tasks calling `send`.
    typealias ResponseContinuation = CheckedContinuation<HTTP2Response, any Error>
    #else
    typealias ResponseContinuation = UnsafeContinuation<HTTP2Response, any Error>
    #endif

    /// Who hears about a request's result: a closure, or a slot of a batch (no closure context
    /// to allocate per request of a batch).
    enum Completion {
        case single((Result<HTTP2Response, HTTP2ClientError>) -> Void)
        /// A caller suspended on the request (no closure context to allocate per request).
        case continuation(ResponseContinuation)
        case batch(BatchCollector, index: Int)

        func callAsFunction(_ result: Result<HTTP2Response, HTTP2ClientError>) {
            switch self {
            case .single(let body): body(result)
            case .continuation(let continuation): continuation.resume(with: result.mapError { $0 as any Error })
            case .batch(let collector, let index): collector.complete(index, with: result)
            }
        }
    }

    struct Pending {
        var id: UInt64
        var request: HTTP2Request
        /// Monotonic nanoseconds; `nil` for none.
        var deadline: UInt64?
        var completion: Completion

        init(id: UInt64, request: HTTP2Request, deadline: UInt64?, completion: Completion) {
            self.id = id
            self.request = request
            self.deadline = deadline
            self.completion = completion
        }

        init(id: UInt64, request: HTTP2Request, deadline: UInt64?,
             completion: @escaping (Result<HTTP2Response, HTTP2ClientError>) -> Void) {
            self.init(id: id, request: request, deadline: deadline, completion: .single(completion))
        }
    }

    private struct OpenStream {
        var id: UInt64
        var deadline: UInt64?
        var completion: Completion
        var status: Int?
        var headers = RawHeaders()
        var body: [UInt8] = []
    }

    /// Why the connection is going away, once it is.
    struct GoAway {
        var lastStreamID: Int32
        var errorCode: HTTP2ErrorCode
        var debugData: [UInt8]
        var receivedFromPeer: Bool
    }

    private var session: NGHTTP2Session!
    // The queue and the stream table are touched several times per request, by this thread only,
    // and never while another access to them is open (completions run after an entry is removed;
    // a `modify` closure touches only its stream). The runtime's exclusivity check on each access
    // cost about 3 % of a bulk send's CPU, so it is off for these two.
    @exclusivity(unchecked) private var queue = PendingQueue()
    @exclusivity(unchecked) private var streams = StreamTable<OpenStream>()
    private(set) var goAway: GoAway?
    /// The most streams this side opens at once, whatever the peer allows.
    var localStreamCap: Int
    /// Set when the connection failed; every later request fails with it.
    private(set) var terminalError: HTTP2ClientError?
    /// Called when a PING acknowledgement arrives.
    var onPingAck: ((UInt64) -> Void)?
    /// Called when the peer's SETTINGS arrive (after they were applied).
    var onSettings: (() -> Void)?
    /// Called once, before the first whole response is handed over: the connection has worked.
    var onFirstAnswer: (() -> Void)?
    /// Called when the peer's GOAWAY arrives, before any request it ends fails.
    var onGoAway: (() -> Void)?

    init(settings: HTTP2Settings = HTTP2Settings(), localStreamCap: Int = 1000) throws {
        self.localStreamCap = localStreamCap
        self.session = try NGHTTP2Session(role: .client, settings: settings, initialPeerMaxConcurrentStreams: 1, owner: .client(self))
    }

    // MARK: State

    /// Streams open now.
    var openStreamCount: Int { self.streams.count }
    /// Requests waiting for a stream.
    var queuedCount: Int { self.queue.count }
    /// The peer's current stream limit.
    var peerMaxConcurrentStreams: UInt32 { self.session.peerMaxConcurrentStreams }
    /// Whether the session can go on reading or writing.
    var isActive: Bool { self.terminalError == nil && (self.session.wantsRead || self.session.wantsWrite) }
    /// The session's allocator (for tests).
    var sessionAllocator: SessionAllocator { self.session.allocator }
    /// Whether nothing is open or queued.
    var isIdle: Bool { self.openStreamCount == 0 && self.queue.count == 0 }

    // MARK: Requests

    /// Queues a request; it starts as soon as a stream is free.
    func enqueue(_ pending: consuming Pending) {
        if let deadline = pending.deadline { self.earliestDeadline = min(self.earliestDeadline ?? deadline, deadline) }
        if let error = self.terminalError ?? self.goAwayErrorForNewRequests() {
            pending.completion(.failure(error))
            return
        }
        // Nothing waiting and a stream free: start it now, without a trip through the queue.
        if self.queue.count == 0, self.openStreamCount < self.streamLimit {
            self.start(pending)
            return
        }
        self.queue.append(pending)
        self.startQueuedRequests()
    }

    /// The most streams open at once now: the peer's limit and the local cap.
    private var streamLimit: Int { min(Int(self.session.peerMaxConcurrentStreams), self.localStreamCap) }

    private func start(_ pending: consuming Pending) {
        do {
            let streamID = try self.session.submitRequest(pending.request)
            self.streams.insert(OpenStream(id: pending.id, deadline: pending.deadline, completion: pending.completion), for: streamID)
        } catch {
            // A header the peer would refuse, found while copying it: nothing was sent.
            pending.completion(.failure(HTTP2ClientError(.invalidRequest, mayHaveBeenProcessed: false, detail: "\(error)")))
        }
    }

    /// Submits queued requests while the peer's limit and the local cap allow.
    func startQueuedRequests() {
        guard self.terminalError == nil, self.goAway == nil, self.queue.count > 0 else { return }
        let limit = self.streamLimit
        while self.openStreamCount < limit, let pending = self.queue.popFirst() {
            self.start(pending)
        }
    }

    /// Cancels a request: a queued one is dropped, an open stream is reset with CANCEL.
    func cancel(requestID: UInt64, error: HTTP2ClientError) {
        self.remove(requestID: requestID, error: error)
        self.startQueuedRequests()
    }

    private func remove(requestID: UInt64, error: HTTP2ClientError) {
        if let pending = self.queue.remove(id: requestID) {
            var error = error
            error.mayHaveBeenProcessed = false
            pending.completion(.failure(error))
            return
        }
        // Cancellation is rare: a scan of the open streams costs less than a second table kept for it.
        guard let streamID = self.streams.firstID(where: { $0.id == requestID }) else { return }
        self.reset(streamID, error: error)
    }

    /// Resets an open stream with CANCEL and fails its request with `error`.
    private func reset(_ streamID: Int32, error: HTTP2ClientError) {
        guard let stream = self.streams.removeValue(for: streamID) else { return }
        self.session.submitReset(streamID: streamID, errorCode: .cancel)
        stream.completion(.failure(error))
    }

    /// No request's deadline is earlier than this (it may be earlier than any left: a scan then updates it).
    private var earliestDeadline: UInt64?

    /// Fails every request whose deadline is at or before `now` (monotonic nanoseconds): queued ones
    /// as never processed, open ones as possibly processed (their streams are reset).
    /// - Returns: the earliest deadline still pending, for the I/O loop's timeout.
    @discardableResult
    func expireDeadlines(now: UInt64) -> UInt64? {
        // Scanning every request on every pass of the loop cost O(in flight) per wake-up; the
        // earliest deadline ever enqueued bounds when a scan can find anything.
        guard let known = self.earliestDeadline, known <= now else { return self.earliestDeadline }
        var earliest: UInt64?
        var expiredStreams: [Int32] = []
        self.streams.forEach { streamID, stream in
            guard let deadline = stream.deadline else { return }
            if deadline <= now { expiredStreams.append(streamID) } else { earliest = min(earliest ?? deadline, deadline) }
        }
        // One pass over the queue, however many expire at once (a whole bulk batch shares a deadline).
        let expiredQueued = self.queue.removeAll { pending in
            guard let deadline = pending.deadline else { return false }
            if deadline <= now { return true }
            earliest = min(earliest ?? deadline, deadline)
            return false
        }
        self.earliestDeadline = earliest
        guard !expiredStreams.isEmpty || !expiredQueued.isEmpty else { return earliest }
        // Remove them all before starting anything queued, so an expired request never starts.
        let error = HTTP2ClientError(.deadlineExceeded, mayHaveBeenProcessed: true, detail: "the request's deadline passed")
        for streamID in expiredStreams { self.reset(streamID, error: error) }
        for pending in expiredQueued {
            var queuedError = error
            queuedError.mayHaveBeenProcessed = false
            pending.completion(.failure(queuedError))
        }
        self.startQueuedRequests()
        return earliest
    }

    /// Fails everything, queued and open, with `error`. Open streams may have been processed unless
    /// `error` says nothing was (the peer never sent its preface); queued ones never left.
    func fail(with error: HTTP2ClientError) {
        if self.terminalError == nil { self.terminalError = error }
        for (_, stream) in self.streams.removeAll() {
            stream.completion(.failure(error))
        }
        while let pending = self.queue.popFirst() {
            var queuedError = error
            queuedError.mayHaveBeenProcessed = false
            pending.completion(.failure(queuedError))
        }
    }

    // MARK: Connection control

    func receive(_ bytes: UnsafeRawBufferPointer) throws { try self.session.receive(bytes) }

    @discardableResult
    func drainOutput(into buffer: inout [UInt8], limit: Int = 64 * 1024) throws -> Bool {
        try self.session.drainOutput(into: &buffer, limit: limit)
    }

    var wantsWrite: Bool { self.session.wantsWrite }

    func sendPing(payload: UInt64) { self.session.submitPing(payload: payload) }

    /// Starts a graceful close from this side: no new streams, GOAWAY to the peer.
    func beginShutdown() {
        guard self.goAway == nil else { return }
        self.goAway = GoAway(lastStreamID: 0, errorCode: .noError, debugData: [], receivedFromPeer: false)
        try? self.session.submitGoAway(lastStreamID: 0, errorCode: .noError, debugData: [])
        self.failQueued(with: HTTP2ClientError(.shutdown, mayHaveBeenProcessed: false, detail: "the connection is shutting down"))
    }

    private func failQueued(with error: HTTP2ClientError) {
        while let pending = self.queue.popFirst() { pending.completion(.failure(error)) }
    }

    private func goAwayErrorForNewRequests() -> HTTP2ClientError? {
        guard let goAway = self.goAway else { return nil }
        if !goAway.receivedFromPeer {
            return HTTP2ClientError(.shutdown, mayHaveBeenProcessed: false, detail: "the connection is shutting down")
        }
        return HTTP2ClientError(
            .goingAway, mayHaveBeenProcessed: false, http2ErrorCode: goAway.errorCode,
            detail: String(decoding: goAway.debugData, as: UTF8.self)
        )
    }

    // MARK: NGHTTP2SessionDelegate

    func session(_ session: NGHTTP2Session, didBeginHeadersOn streamID: Int32) {}

    func session(_ session: NGHTTP2Session, didReceiveHeader name: UnsafeBufferPointer<UInt8>,
                 value: UnsafeBufferPointer<UInt8>, neverIndexed: Bool, on streamID: Int32) {
        if name.count == 7 && name.elementsEqual(":status".utf8) {
            self.streams.modify(streamID) { $0.status = Self.parseStatus(value) }
        } else {
            self.streams.modify(streamID) { $0.headers.append(name: name, value: value) }
        }
    }

    func session(_ session: NGHTTP2Session, didReceiveData data: UnsafeRawBufferPointer, on streamID: Int32) {
        self.streams.modify(streamID) { $0.body.append(contentsOf: data) }
    }

    func session(_ session: NGHTTP2Session, didReceive frame: NGHTTP2Frame) {
        switch frame {
        case .settings(isAck: false):
            self.onSettings?()
            self.startQueuedRequests()
        case .goAway(let lastStreamID, let errorCode, let debugData):
            self.goAway = GoAway(lastStreamID: lastStreamID, errorCode: errorCode, debugData: debugData, receivedFromPeer: true)
            self.onGoAway?()
            if let error = self.goAwayErrorForNewRequests() { self.failQueued(with: error) }
        case .ping(isAck: true, let payload):
            self.onPingAck?(payload)
        default:
            break
        }
    }

    func session(_ session: NGHTTP2Session, didCloseStream streamID: Int32, errorCode: HTTP2ErrorCode) {
        guard let stream = self.streams.removeValue(for: streamID) else { return }
        if errorCode == .noError, let status = stream.status {
            if let onFirstAnswer = self.onFirstAnswer {
                self.onFirstAnswer = nil
                onFirstAnswer()
            }
            stream.completion(.success(HTTP2Response(status: status, rawHeaders: stream.headers, body: stream.body)))
        } else if errorCode == .refusedStream, let goAway, goAway.receivedFromPeer, streamID > goAway.lastStreamID {
            stream.completion(.failure(HTTP2ClientError(
                .goingAway, mayHaveBeenProcessed: false, http2ErrorCode: goAway.errorCode,
                detail: String(decoding: goAway.debugData, as: UTF8.self)
            )))
        } else if errorCode == .refusedStream {
            stream.completion(.failure(HTTP2ClientError(.refusedStream, mayHaveBeenProcessed: false, http2ErrorCode: errorCode)))
        } else {
            stream.completion(.failure(HTTP2ClientError(
                .streamReset, mayHaveBeenProcessed: true, http2ErrorCode: errorCode,
                detail: stream.status == nil ? "reset before a response" : "reset during the response"
            )))
        }
        self.startQueuedRequests()
    }

    func session(_ session: NGHTTP2Session, didFailToSendOn streamID: Int32, error: Int32) {
        // nghttp2 also closes such a stream (on_stream_close follows), which completes it.
    }

    private static func parseStatus(_ value: UnsafeBufferPointer<UInt8>) -> Int? {
        guard value.count == 3 else { return nil }
        var status = 0
        for byte in value {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            status = status * 10 + Int(byte - 0x30)
        }
        return status
    }
}

/// A FIFO of pending requests with O(1) append and pop, and removal by id for cancellation.
struct PendingQueue {
    private var storage: [HTTP2ClientCore.Pending?] = []
    private var head = 0
    private(set) var count = 0

    // Requests move in and out (`consuming`, `take()`): a copy retains every field of the request.
    mutating func append(_ pending: consuming HTTP2ClientCore.Pending) {
        self.storage.append(pending)
        self.count += 1
    }

    mutating func popFirst() -> HTTP2ClientCore.Pending? {
        while self.head < self.storage.count {
            let element = self.storage[self.head].take()
            self.head += 1
            if let element {
                self.count -= 1
                self.compactIfNeeded()
                return element
            }
        }
        self.compactIfNeeded()
        return nil
    }

    mutating func remove(id: UInt64) -> HTTP2ClientCore.Pending? {
        guard let index = self.storage[self.head...].firstIndex(where: { $0?.id == id }) else { return nil }
        self.count -= 1
        return self.storage[index].take()
    }

    /// Takes out every waiting request `shouldRemove` picks, in one pass.
    mutating func removeAll(where shouldRemove: (HTTP2ClientCore.Pending) -> Bool) -> [HTTP2ClientCore.Pending] {
        var removed: [HTTP2ClientCore.Pending] = []
        for index in self.head..<self.storage.count {
            guard let pending = self.storage[index], shouldRemove(pending) else { continue }
            removed.append(pending)
            self.storage[index] = nil
            self.count -= 1
        }
        self.compactIfNeeded()
        return removed
    }

    private mutating func compactIfNeeded() {
        if self.head == self.storage.count {
            self.storage.removeAll(keepingCapacity: true)
            self.head = 0
        } else if self.head > 1024 && self.head * 2 > self.storage.count {
            self.storage.removeFirst(self.head)
            self.head = 0
        }
    }
}
