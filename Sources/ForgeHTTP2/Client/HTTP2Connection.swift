import Foundation
#if canImport(Glibc)
import Glibc
#endif
internal import ForgeSupport
internal import Synchronization

/// One HTTP/2 client connection over nghttp2 and OpenSSL, with its own I/O thread.
///
/// ```swift
/// let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "api.push.apple.com"))
/// let response = try await connection.send(request, deadline: .now + .seconds(10))
/// await connection.shutdown(gracePeriod: .seconds(5))
/// ```
///
/// ## Implementation
/// Callers put requests in a lock-protected inbox and wake the thread through a pipe only while it
/// waits in `poll` (one byte per wait, whatever the burst); a running thread looks at its inbox before
/// it waits again. The thread owns the socket, the `SSL`, the nghttp2 session and the stream table
/// (``HTTP2ClientCore``); it resumes each caller's continuation once. When the connection ends, for
/// whatever reason, every queued and open request fails with an error that says whether it may
/// have been processed.
package final class HTTP2Connection: Sendable {
    private let inbox: LockedBox<Inbox>
    private let waker: WakePipe
    /// The host and port, for errors and logs.
    package let endpoint: String
    private let connectionExecutor: ConnectionExecutor
    /// The load the I/O thread publishes.
    private let gauges: ConnectionGauges
    /// The last request id handed out (ids only need to be unique on this connection).
    private let nextID = Atomic<UInt64>(0)
    /// Whether any request got a response on this connection: one that closes before that was
    /// never usable, whatever its handshake said. Set on the I/O thread as the first response
    /// arrives, so it is already true when that thread reports the close.
    package var hasAnswered: Bool { self.gauges.answered.load(ordering: .acquiring) }

    /// The connection's I/O thread as a task executor.
    ///
    /// Tasks that prefer it (`group.addTask(executorPreference: connection.executor) { … }`) run on the
    /// thread that owns the socket: their requests and their responses then cross no thread boundary,
    /// which roughly halves the CPU each request costs. Such tasks must not block: while one runs, the
    /// connection does no I/O. After the connection closes they move to the global executor.
    package var executor: any TaskExecutor { self.connectionExecutor }

    /// Whether the caller runs on this connection's I/O thread (in a job of its executor, or of
    /// an executor that runs jobs there through ``enqueue(_:as:)``).
    package var ownsCurrentThread: Bool { self.connectionExecutor.isCurrent }

    /// Queues `job` to run on this connection's I/O thread as `executor`: how an executor that
    /// spreads tasks over several connections (a pool's) runs them where their requests go.
    /// - Returns: `false` once the connection is closed; the caller runs the job elsewhere.
    package func enqueue(_ job: UnownedJob, as executor: UnownedTaskExecutor) -> Bool {
        self.connectionExecutor.enqueue(job, as: executor)
    }

    /// Whether the caller runs on some open connection's I/O thread (one thread-local read): a
    /// task on the global executor is not, and need not ask each connection.
    package static var callerIsOnAConnectionThread: Bool { CurrentConnectionExecutor.get() != nil }

    /// Queues `job` on the I/O thread the caller runs on, if it runs on a connection's I/O thread:
    /// a task resumed by a response then stays where its next request goes, with no thread hop.
    /// - Returns: `false` when the caller is on no open connection's I/O thread.
    package static func enqueueOnCurrentThread(_ job: UnownedJob, as executor: UnownedTaskExecutor) -> Bool {
        CurrentConnectionExecutor.get()?.enqueue(job, as: executor) ?? false
    }

    private init(endpoint: String, inbox: LockedBox<Inbox>, gauges: ConnectionGauges, waker: WakePipe, executor: ConnectionExecutor) {
        self.gauges = gauges
        self.endpoint = endpoint
        self.inbox = inbox
        self.waker = waker
        self.connectionExecutor = executor
    }

    deinit {
        // Nothing may hang: a connection dropped without shutdown closes at once.
        self.post { $0.command = .close }
    }

    /// Connects, completes the TLS handshake (ALPN h2 required) and exchanges the preface.
    /// - Parameter events: told, on the connection's I/O thread, when the peer's stream limit
    ///   changes, when the peer sends GOAWAY and when the connection closes (not for a failed
    ///   connect, which throws). Keep it short: the connection does no I/O while it runs.
    /// - Throws: ``HTTP2ClientError`` with `connectFailed`, `tlsFailed` or `alpnMismatch`.
    package static func connect(
        _ configuration: HTTP2ClientConfiguration, events: (@Sendable (HTTP2ConnectionEvent) -> Void)? = nil
    ) async throws -> HTTP2Connection {
        if configuration.tls?.verification == .insecureLoopbackOnly, !isLoopbackHost(configuration.host) {
            throw HTTP2ClientError(
                .tlsFailed, mayHaveBeenProcessed: false,
                detail: "insecureLoopbackOnly refuses \(configuration.host): it works for 127.0.0.0/8, ::1 and localhost only",
                permanent: true
            )
        }
        let inbox = LockedBox(Inbox())
        let waker = try Self.makeWaker()
        let gauges = ConnectionGauges()
        let loop = ClientLoop(configuration: configuration, inbox: inbox, gauges: gauges, waker: waker)
        let executor = ConnectionExecutor(inbox: inbox, waker: waker)
        loop.executor = executor
        loop.events = events
        // Cancelling the calling task cuts a TLS handshake short (a server that accepts and then
        // says nothing would otherwise hold the caller for the whole connect timeout).
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                loop.connected = { result in continuation.resume(with: result) }
                startIOThread(named: "forge-h2c:\(configuration.port)") { loop.run() }
            }
        } onCancel: {
            inbox.withLock { $0.connectCancelled = true }
            waker.wake()
        }
        return HTTP2Connection(
            endpoint: "\(configuration.host):\(configuration.port)", inbox: inbox, gauges: gauges, waker: waker,
            executor: executor
        )
    }

    private static func makeWaker() throws -> WakePipe {
        do { return try WakePipe() } catch {
            throw HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "\(error)")
        }
    }

    // MARK: Requests

    /// Sends one request and waits for its response.
    ///
    /// Cancelling the calling task resets the stream (RST_STREAM CANCEL) and throws `cancelled`.
    /// - Parameter deadline: when to give up; the stream is reset then.
    /// - Throws: ``HTTP2ClientError``.
    nonisolated(nonsending) package func send(_ request: consuming HTTP2Request, deadline: ContinuousClock.Instant? = nil) async throws -> HTTP2Response {
        try await self.send(request, monotonicDeadline: deadline.map(MonotonicInstant.init))
    }

    /// ``send(_:deadline:)`` with the deadline on the I/O threads' clock.
    nonisolated(nonsending) package func send(_ request: consuming HTTP2Request, monotonicDeadline deadline: MonotonicInstant?) async throws -> HTTP2Response {
        let id = self.nextID.wrappingAdd(1, ordering: .relaxed).newValue
        let monotonicDeadline = deadline?.nanoseconds
        // Moved into the pending request, not copied: a copy retains each of its fields, and the
        // caller's is released after. Taken inside closure literals: a nested function capturing
        // it put it in a heap box, one allocation per request.
        var request = Optional(request)
        let response = try await withTaskCancellationHandler {
            // Checked in debug builds, unchecked in release ones: see `ResponseContinuation`. The
            // continuation goes with the request to the I/O thread, which resumes it with the answer.
            #if DEBUG
            try await withCheckedThrowingContinuation { continuation in
                self.submit(HTTP2ClientCore.Pending(id: id, request: request.take()!, deadline: monotonicDeadline,
                                                    completion: .continuation(continuation)))
            }
            #else
            try await withUnsafeThrowingContinuation { continuation in
                self.submit(HTTP2ClientCore.Pending(id: id, request: request.take()!, deadline: monotonicDeadline,
                                                    completion: .continuation(continuation)))
            }
            #endif
        } onCancel: {
            self.cancel([id])
        }
        return response
    }

    /// Sends many requests with one wake-up of the I/O thread and one suspension of the caller.
    /// - Returns: one result per request, in order.
    package func sendBatch(
        _ requests: [HTTP2Request],
        deadline: ContinuousClock.Instant? = nil
    ) async -> [Result<HTTP2Response, HTTP2ClientError>] {
        await self.sendBatch(requests, monotonicDeadline: deadline.map(MonotonicInstant.init))
    }

    /// ``sendBatch(_:deadline:)`` with the deadline on the I/O threads' clock.
    package func sendBatch(
        _ requests: [HTTP2Request],
        monotonicDeadline deadline: MonotonicInstant?
    ) async -> [Result<HTTP2Response, HTTP2ClientError>] {
        guard !requests.isEmpty else { return [] }
        let firstID = self.nextID.wrappingAdd(UInt64(requests.count), ordering: .relaxed).newValue - UInt64(requests.count) + 1
        let ids = (0..<UInt64(requests.count)).map { firstID + $0 }
        let monotonicDeadline = deadline?.nanoseconds
        let results = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Result<HTTP2Response, HTTP2ClientError>], Never>) in
                let collector = BatchCollector(count: requests.count) { continuation.resume(returning: $0) }
                let pending = requests.enumerated().map { index, request in
                    HTTP2ClientCore.Pending(id: ids[index], request: request, deadline: monotonicDeadline,
                                            completion: .batch(collector, index: index))
                }
                self.submit(pending)
                if Task.isCancelled { self.cancel(ids) }
            }
        } onCancel: {
            self.cancel(ids)
        }
        return results
    }

    /// The connection's state as its owner sees it.
    package var state: HTTP2ConnectionState { self.inbox.withLock { $0.state } }

    /// Streams open plus requests queued on this connection, as of the I/O thread's last pass.
    package var outstandingCount: Int { self.gauges.outstanding.load(ordering: .relaxed) }

    /// The peer's current `SETTINGS_MAX_CONCURRENT_STREAMS`.
    package var peerMaxConcurrentStreams: UInt32 { self.gauges.peerMaxConcurrentStreams.load(ordering: .relaxed) }

    // MARK: Shutdown

    /// Stops taking requests, lets open streams finish for up to `gracePeriod`, then closes; what is
    /// still open then fails with `shutdown`. Returns when the connection is closed.
    package func shutdown(gracePeriod: Duration) async {
        let deadline = monotonicNanoseconds() &+ UInt64(max(0, Self.nanoseconds(gracePeriod)))
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyClosed = self.inbox.withLock { inbox -> Bool in
                if case .closed = inbox.state { return true }
                inbox.closeWaiters.append { continuation.resume() }
                if inbox.command == nil { inbox.command = .shutdown(deadline: deadline) }
                return false
            }
            if alreadyClosed { continuation.resume() } else { self.waker.wake() }
        }
    }

    /// Closes at once: everything open or queued fails with `shutdown`.
    package func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyClosed = self.inbox.withLock { inbox -> Bool in
                if case .closed = inbox.state { return true }
                inbox.closeWaiters.append { continuation.resume() }
                inbox.command = .close
                return false
            }
            if alreadyClosed { continuation.resume() } else { self.waker.wake() }
        }
    }

    // MARK: Inbox

    /// Hands requests to the I/O thread, or fails them at once when the connection is closed or the
    /// calling task is already cancelled.
    ///
    /// `Task.isCancelled` is read under the same lock that the cancellation handler takes, and the
    /// flag is set before that handler runs: either the request is rejected here, or it reaches the
    /// inbox before its cancellation does, and the I/O thread handles requests before cancellations.
    private func submit(_ pending: [HTTP2ClientCore.Pending]) {
        if let failure = self.submit({ $0.append(contentsOf: pending.lazy.map(Optional.some)) }) {
            for request in pending { request.completion(.failure(failure)) }
        }
    }

    /// One request: moved into the inbox, not copied (a copy retains each of its fields).
    private func submit(_ pending: consuming HTTP2ClientCore.Pending) {
        var slot = Optional(pending)
        if let failure = self.submit({ $0.append(slot.take()!) }) {
            slot!.completion(.failure(failure))
        }
    }

    /// Runs `append` on the inbox's requests unless the connection is closed or the calling task is
    /// cancelled; returns the failure then (nothing was appended).
    ///
    /// The task's own flag, not the inbox's cancellations: a handler that ran before the request
    /// existed put its id there, and the I/O thread may have taken that list (and found no such
    /// request) before this lock was taken.
    private func submit(_ append: (inout [HTTP2ClientCore.Pending?]) -> Void) -> HTTP2ClientError? {
        var failure: HTTP2ClientError?
        let wake = self.inbox.withLock { inbox -> Bool in
            if case .closed(let closedError) = inbox.state {
                failure = closedError
                return false
            }
            if Task.isCancelled {
                failure = HTTP2ClientError(.cancelled, mayHaveBeenProcessed: false, detail: "the calling task was cancelled")
                return false
            }
            append(&inbox.requests)
            return true
        }
        if wake { self.waker.wakeIfWaiting() }
        failure?.mayHaveBeenProcessed = false
        return failure
    }

    private func cancel(_ ids: [UInt64]) {
        self.inbox.withLock { inbox in
            inbox.cancellations.append(contentsOf: ids)
        }
        self.waker.wakeIfWaiting()
    }

    private func post(_ change: (inout Inbox) -> Void) {
        self.inbox.withLock { change(&$0) }
        self.waker.wakeIfWaiting()
    }

    static func nanoseconds(_ duration: Duration) -> Int64 { MonotonicInstant.nanoseconds(duration) }
}

/// What a connection tells its owner as it happens (``HTTP2Connection/connect(_:events:)``).
package enum HTTP2ConnectionEvent: Hashable, Sendable {
    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS is now this (also reported once after connecting).
    case maximumConcurrentStreams(Int)
    /// The peer sent GOAWAY: nothing new starts on the connection. Sent before the requests it
    /// refuses fail, so an owner that picks connections stops offering this one first.
    case goAway(errorCode: HTTP2ErrorCode)
    /// The connection closed: nothing more starts on it. Sent before the requests it ends get their
    /// results (and the last event sent).
    case closed(HTTP2ClientError)
}

/// What callers hand to the I/O thread, under the lock.
struct Inbox {
    /// The caller of `connect` was cancelled: the handshake gives up.
    var connectCancelled = false
    enum Command {
        case shutdown(deadline: UInt64)
        case close
    }

    /// Optional so that the I/O thread moves each one out in place (`take()`): reordering or popping
    /// an array of requests copies each, retaining and releasing every field.
    var requests: [HTTP2ClientCore.Pending?] = []
    var cancellations: [UInt64] = []
    var command: Command?
    var state: HTTP2ConnectionState = .active
    var closeWaiters: [() -> Void] = []

    /// Jobs to run on the I/O thread, each with the executor it runs as: the connection's own, or a
    /// pool's that spreads tasks over its connections.
    var jobs: [(job: UnownedJob, executor: UnownedTaskExecutor)] = []
    /// Whether anything waits for the I/O thread.
    var hasWork: Bool { !self.requests.isEmpty || !self.cancellations.isEmpty || !self.jobs.isEmpty || self.command != nil }
}

/// What the I/O thread publishes of a connection's load on every pass, for pool pickers.
final class ConnectionGauges: Sendable {
    let outstanding = Atomic<Int>(0)
    let peerMaxConcurrentStreams = Atomic<UInt32>(1)
    /// False from the peer's GOAWAY or the close on.
    let isActive = Atomic<Bool>(true)
    /// True from the first whole response on: written by the I/O thread before it reports a close.
    let answered = Atomic<Bool>(false)
}

/// Gathers the results of a batch and delivers them once, in order.
///
/// Each result goes straight into its own slot; the atomic count of slots still empty tells the
/// last completion that it may hand over the whole array. Completions come from the I/O thread (or,
/// all of them, from the caller when a closed connection refuses the batch); the check against a
/// second completion of one slot is a plain read, so it relies on that.
final class BatchCollector: @unchecked Sendable {
    // @unchecked Sendable: each slot is written once, by its request's completion, and read only by
    // the completion that brings `remaining` to zero; the atomic orders those accesses.
    typealias Outcome = Result<HTTP2Response, HTTP2ClientError>
    private let slots: UnsafeMutableBufferPointer<Outcome>
    private let filled: UnsafeMutableBufferPointer<Bool>
    private let remaining: Atomic<Int>
    private let done: ([Outcome]) -> Void

    init(count: Int, done: @escaping ([Outcome]) -> Void) {
        self.slots = .allocate(capacity: count)
        self.filled = .allocate(capacity: count)
        self.filled.initialize(repeating: false)
        self.remaining = Atomic(count)
        self.done = done
    }

    deinit {
        // Delivered results were moved out; anything left (a batch that never finished) is released here.
        if self.remaining.load(ordering: .acquiring) > 0 {
            // Its caller would wait for ever: every path that drops a request must complete it.
            assertionFailure("a batch was released before all of its requests completed")
            for index in self.slots.indices where self.filled[index] { (self.slots.baseAddress! + index).deinitialize(count: 1) }
        }
        self.slots.deallocate()
        self.filled.deallocate()
    }

    func complete(_ index: Int, with result: Outcome) {
        precondition(!self.filled[index], "a request completed twice")
        self.filled[index] = true
        (self.slots.baseAddress! + index).initialize(to: result)
        guard self.remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
        let count = self.slots.count
        let results = [Outcome](unsafeUninitializedCapacity: count) { buffer, initialized in
            _ = buffer.moveInitialize(fromContentsOf: self.slots)
            initialized = count
        }
        self.done(results)
    }
}

/// Runs jobs on a connection's I/O thread, between its passes over the socket.
final class ConnectionExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: the job queue lives in the lock-protected inbox.
    private let inbox: LockedBox<Inbox>
    private let waker: WakePipe
    /// The I/O thread (`pthread_t`), once it runs; 0 before.
    private let loopThread = Atomic<UInt>(0)

    init(inbox: LockedBox<Inbox>, waker: WakePipe) {
        self.inbox = inbox
        self.waker = waker
    }

    /// Called by the I/O thread when it starts: jobs queued from this thread stay on it.
    func noteLoopThread() {
        self.loopThread.store(UInt(pthread_self()), ordering: .releasing)
        CurrentConnectionExecutor.set(self)
    }

    /// Called by the I/O thread when it ends.
    func noteLoopEnded() {
        CurrentConnectionExecutor.set(nil)
    }

    /// Whether the caller runs on the connection's I/O thread.
    var isCurrent: Bool { self.loopThread.load(ordering: .acquiring) == UInt(pthread_self()) }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if !self.enqueue(job, as: self.asUnownedTaskExecutor()) {
            // Nothing would run it here any more.
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
        }
    }

    /// Queues `job` to run on the I/O thread as `executor`; `false` once the connection is closed.
    func enqueue(_ job: UnownedJob, as executor: UnownedTaskExecutor) -> Bool {
        let closed = self.inbox.withLock { inbox -> Bool in
            if case .closed = inbox.state { return true }
            inbox.jobs.append((job, executor))
            return false
        }
        // A job queued on the I/O thread itself finds it running: no wake-up.
        if !closed { self.waker.wakeIfWaiting() }
        return !closed
    }
}


/// The connection executor of the I/O thread the caller runs on, in a thread-specific slot.
private enum CurrentConnectionExecutor {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "pthread_key_create failed")
        return key
    }()

    /// Sets the current thread's executor; the I/O thread holds it strongly while it runs.
    static func set(_ executor: ConnectionExecutor?) {
        pthread_setspecific(self.key, executor.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) })
    }

    static func get() -> ConnectionExecutor? {
        guard let pointer = pthread_getspecific(self.key) else { return nil }
        return Unmanaged<ConnectionExecutor>.fromOpaque(pointer).takeUnretainedValue()
    }
}
