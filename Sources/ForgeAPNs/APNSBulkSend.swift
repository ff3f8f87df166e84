public import ForgeAPNsCore
internal import ForgeHTTP2
internal import ForgeSupport
internal import Logging
internal import Synchronization
internal import Tracing

/// What happened to one token of a bulk send. Every token gets exactly one.
public struct APNSBulkVerdict: Sendable {
    /// The outcome.
    ///
    /// | outcome | meaning | ``mayHaveBeenDelivered`` |
    /// |---|---|---|
    /// | `accepted` | APNs answered 2xx | an earlier copy may have been delivered too |
    /// | `rejected` | APNs' final answer was an error (or the token was malformed) | an earlier copy may have been delivered |
    /// | `failed` | no answer, and a copy left that APNs may have processed | always |
    /// | `notSent` | APNs certainly processed no copy: a resend cannot deliver it twice | never |
    public enum Outcome: Sendable {
        /// APNs accepted the push.
        case accepted(APNSSendResult)
        /// APNs rejected it (reason and timestamp in the error), or the token was malformed.
        case rejected(APNSError)
        /// No answer, after the retries the policy allows, and a copy may have reached APNs
        /// (its connection died after sending it, or its deadline passed while it was out).
        case failed(APNSError)
        /// APNs processed no copy: the endpoint could not be reached, every copy was refused
        /// unprocessed, or the send was cancelled or shut down before it left.
        case notSent(APNSError)

        /// The verdict of a push that APNs did not accept: its rejection, or `failed` / `notSent`
        /// as the error says whether a copy may have been delivered.
        public init(_ error: APNSError) {
            switch error.kind {
            case .rejected, .invalidNotification: self = .rejected(error)
            default: self = error.mayHaveBeenDelivered ? .failed(error) : .notSent(error)
            }
        }

        /// The error of a push APNs did not accept (`failed` or `notSent`); `nil` otherwise.
        public var failure: APNSError? {
            switch self {
            case .failed(let error), .notSent(let error): return error
            case .accepted, .rejected: return nil
            }
        }

        /// Whether a copy may have reached APNs without its answer being known: for an accepted
        /// push, a second delivery is possible.
        public var mayHaveBeenDelivered: Bool {
            switch self {
            case .accepted(let result): return result.mayHaveBeenDeliveredTwice
            case .rejected(let error), .failed(let error), .notSent(let error): return error.mayHaveBeenDelivered
            }
        }
    }

    /// The token as given.
    public var token: String
    /// Its position in the input, from 0.
    public var index: Int
    /// The outcome.
    public var outcome: Outcome

    public init(token: String, index: Int, outcome: Outcome) {
        self.token = token
        self.index = index
        self.outcome = outcome
    }

    /// Whether a copy may have reached APNs without its answer being known (see ``Outcome``).
    public var mayHaveBeenDelivered: Bool { self.outcome.mayHaveBeenDelivered }

    /// Whether APNs accepted it.
    public var isAccepted: Bool {
        if case .accepted = self.outcome { return true }
        return false
    }
}

/// Counts of a finished bulk send.
public struct APNSBulkSummary: Sendable, CustomStringConvertible {
    /// Tokens read.
    public var total = 0
    /// Accepted by APNs.
    public var accepted = 0
    /// Rejected, by reason (`BadDeviceToken`, `Unregistered`, … and `InvalidToken` for malformed input).
    public var rejected: [String: Int] = [:]
    /// No answer, and a copy may have been delivered.
    public var failed = 0
    /// Certainly not processed by APNs (unreachable, refused, cancelled or shut down first).
    public var notSent = 0
    /// Verdicts of any outcome whose push may have been delivered without its answer being known
    /// (``APNSBulkVerdict/mayHaveBeenDelivered``): every `failed` one, and accepted or rejected
    /// ones that an earlier lost copy may have duplicated.
    public var mayHaveBeenDelivered = 0
    /// Wall time from start to the last verdict.
    public var duration: Duration = .zero
    /// Set when the token sequence itself threw: tokens after that point were never read.
    public var inputError: String?
    /// Set when the bulk send was cancelled before the token sequence ended: ``total`` tokens
    /// were read (each has its verdict), the rest never were.
    public var stoppedReading = false

    /// Creates empty counts.
    public init() {}

    /// Rejections of every reason.
    public var rejectedCount: Int { self.rejected.values.reduce(0, +) }

    public var description: String {
        var text = "\(self.total) tokens: \(self.accepted) accepted, \(self.rejectedCount) rejected"
        if !self.rejected.isEmpty {
            text += " (" + self.rejected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
        text += ", \(self.failed) failed, \(self.notSent) not sent"
        if self.mayHaveBeenDelivered > 0 { text += "; \(self.mayHaveBeenDelivered) may have been delivered" }
        if let inputError = self.inputError { text += "; input stopped: \(inputError)" }
        if self.stoppedReading { text += "; cancelled: tokens after the first \(self.total) were not read" }
        return text
    }
}

/// A bulk send in progress: iterate it for the verdicts (in completion order), then read
/// ``summary``; or call ``summary()`` to wait for the end without looking at verdicts.
///
/// Memory stays bounded: tokens are read as the window allows, at most a few thousand verdicts
/// wait for the reader, and the payload is encoded once.
public final class APNSBulkSend: AsyncSequence, Sendable {
    public typealias Element = APNSBulkVerdict

    let channel: VerdictChannel
    private let cancellation = StopSignal()
    private let reading = ReadingSwitch()

    /// Starts `start` as a child task of the client's ``APNSClient/run()``; a client already shut
    /// down ends the bulk at once, having read no token.
    init(channel: VerdictChannel, client: APNSClient, start: @escaping @Sendable (VerdictChannel, ReadingSwitch) async -> Void) {
        self.channel = channel
        let cancellation = self.cancellation
        let reading = self.reading
        let started = client.runInBackground {
            // The producer, until it ends or the bulk send is cancelled.
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await start(channel, reading) }
                group.addTask { await cancellation.wait() }
                await group.next()
                group.cancelAll()
            }
        }
        if !started {
            var summary = APNSBulkSummary()
            summary.inputError = "the client is shut down: no token was read"
            channel.finish(summary)
        }
    }

    /// Stops sending now: tokens not sent yet get ``APNSBulkVerdict/Outcome/notSent(_:)``, and pushes
    /// in flight are given up on: they get `failed` (kind `cancelled`, may have been delivered)
    /// unless their answer is in. See ``stop()`` for the gentle way.
    public func cancel() { self.cancellation.fire() }

    /// Reads no more tokens, and lets the pushes already on their way finish: each still gets its
    /// answer, retries included, within its deadline. The sequence ends once they have; the summary
    /// says that reading stopped (``APNSBulkSummary/stoppedReading``), and `total` counts the tokens read.
    public func stop() { self.reading.stop() }

    /// A bulk send nobody holds any more is cancelled, and its workers stop waiting for a reader.
    deinit {
        self.cancellation.fire()
        self.channel.abandon()
    }

    /// The counts, once the last verdict is out (nil before).
    public var summary: APNSBulkSummary? { self.channel.finishedSummary }

    /// Waits for the end, discarding verdicts not read, and returns the counts.
    /// Cancelling the waiting task cancels the bulk send (the summary then counts what was not sent).
    public func summary() async -> APNSBulkSummary {
        await withTaskCancellationHandler {
            while await self.channel.nextBatch() != nil {}
        } onCancel: {
            self.cancel()
        }
        return self.channel.finishedSummary ?? APNSBulkSummary()
    }

    public func makeAsyncIterator() -> Iterator { Iterator(owner: self) }

    /// Reads verdicts; cancelling the reading task cancels the bulk send.
    public struct Iterator: AsyncIteratorProtocol {
        /// Keeps the bulk send alive while its verdicts are read (`for await v in try client.sendBulk(…)`
        /// holds nothing else).
        let owner: APNSBulkSend
        /// Optional so that each verdict is moved out (`take()`), not copied: a copy retains its
        /// token and its outcome's fields, and the batch releases them again later, on another thread.
        private var batch: [APNSBulkVerdict?] = []
        private var position = 0

        init(owner: APNSBulkSend) { self.owner = owner }

        public mutating func next() async -> APNSBulkVerdict? {
            if self.position == self.batch.count {
                let owner = self.owner
                let next = await withTaskCancellationHandler {
                    await owner.channel.nextBatch()
                } onCancel: {
                    owner.cancel()
                }
                guard let batch = next else { return nil }
                self.batch = batch
                self.position = 0
            }
            defer { self.position += 1 }
            return self.batch[self.position].take()
        }

        /// The verdicts not read yet of the batch at hand, or the next batch whole (at least one
        /// verdict), or `nil` at the end: for a reader that handles verdicts a batch at a time.
        package mutating func nextBatch() async -> [APNSBulkVerdict?]? {
            if self.position < self.batch.count {
                defer {
                    self.batch = []
                    self.position = 0
                }
                return self.position == 0 ? self.batch : Array(self.batch[self.position...])
            }
            let owner = self.owner
            let next = await withTaskCancellationHandler {
                await owner.channel.nextBatch()
            } onCancel: {
                owner.cancel()
            }
            self.batch = []
            self.position = 0
            return next
        }
    }
}

/// A bounded hand-off from the bulk producer to one reader, with back-pressure both ways.
///
/// Verdicts move in whole batches: a worker's array goes to the waiting reader, or into the buffer
/// (as is when the buffer is empty), and the reader takes the whole buffer. No verdict is copied
/// one by one on the way.
final class VerdictChannel: Sendable {
    private struct State {
        var buffer: [APNSBulkVerdict?] = []
        var summary: APNSBulkSummary?
        var reader: CheckedContinuation<[APNSBulkVerdict?]?, Never>?
        /// Every worker waiting for room (several wait at once when the reader falls behind).
        var writers: [CheckedContinuation<Void, Never>] = []
        /// The reader is gone (the bulk send was released): verdicts are dropped, nobody waits.
        var abandoned = false
    }

    private let state = LockedBox(State())
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    var finishedSummary: APNSBulkSummary? { self.state.withLock { $0.summary } }

    /// Hands verdicts to the reader, waiting while the buffer is full (a batch may overfill it by
    /// less than one batch: the bound is the capacity plus one batch per worker).
    func send(_ verdicts: [APNSBulkVerdict?]) async {
        guard !verdicts.isEmpty else { return }
        enum Action { case delivered(CheckedContinuation<[APNSBulkVerdict?]?, Never>), buffered, full }
        while true {
            let action = self.state.withLock { state -> Action in
                if state.abandoned { return .buffered }
                guard state.buffer.count < self.capacity else { return .full }
                if let reader = state.reader {
                    // A reader waits only on an empty buffer: the batch goes to it whole.
                    state.reader = nil
                    return .delivered(reader)
                }
                if state.buffer.isEmpty { state.buffer = verdicts } else { state.buffer.append(contentsOf: verdicts) }
                return .buffered
            }
            switch action {
            case .delivered(let reader):
                reader.resume(returning: verdicts)
                return
            case .buffered:
                return
            case .full:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = self.state.withLock { state -> Bool in
                        if state.abandoned || state.buffer.count < self.capacity { return true }
                        state.writers.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    /// The reader went away: drop what is buffered and release every waiting worker.
    func abandon() {
        let writers = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.abandoned = true
            state.buffer = []
            defer { state.writers.removeAll() }
            return state.writers
        }
        for writer in writers { writer.resume() }
    }

    /// Ends the stream with the counts.
    func finish(_ summary: APNSBulkSummary) {
        let reader = self.state.withLock { state -> CheckedContinuation<[APNSBulkVerdict?]?, Never>? in
            state.summary = summary
            defer { state.reader = nil }
            return state.buffer.isEmpty ? state.reader : nil
        }
        reader?.resume(returning: nil)
    }

    /// Every verdict buffered now (at least one), or `nil` at the end: a reader woken once takes
    /// all that accumulated meanwhile, instead of one wake-up per verdict.
    func nextBatch() async -> [APNSBulkVerdict?]? {
        enum Take { case values([APNSBulkVerdict?], [CheckedContinuation<Void, Never>]), end, wait }
        let taken = self.state.withLock { state -> Take in
            if !state.buffer.isEmpty {
                let values = state.buffer
                state.buffer = []
                let writers = state.writers
                state.writers.removeAll()
                return .values(values, writers)
            }
            return state.summary == nil ? .wait : .end
        }
        switch taken {
        case .values(let values, let writers):
            for writer in writers { writer.resume() }
            return values
        case .end:
            return nil
        case .wait:
            // Resumed with a worker's batch, or with nil at the end (or when something arrived
            // between the check above and this registration: then look again).
            let handed = await withCheckedContinuation { (continuation: CheckedContinuation<[APNSBulkVerdict?]?, Never>) in
                let ready = self.state.withLock { state -> Bool in
                    if !state.buffer.isEmpty || state.summary != nil { return true }
                    state.reader = continuation
                    return false
                }
                if ready { continuation.resume(returning: nil) }
            }
            if let handed { return handed }
            return await self.nextBatch()
        }
    }
}

extension APNSClient {
    /// The most tokens a bulk worker sends together (one wake-up of the connection and one of the
    /// worker per batch).
    static let maximumBulkBatch = 64

    /// The batch each of `workers` bulk workers takes now: the window shared by at least four, so
    /// `workers` batches never exceed it whenever the workers were started; at most what one
    /// connection offers, so a batch never waits for streams on its connection.
    func bulkBatch(workers: Int, capacity: APNSTransportCapacity) -> Int {
        max(1, min(Self.maximumBulkBatch, capacity.batch, capacity.window / max(4, workers)))
    }

    /// How many workers fill the window now, each with one batch in flight. The window follows the
    /// transport: the open connections' streams, and one connection's worth more while the pool may
    /// grow, so that work waits and the pool opens the next connection.
    func bulkWorkersWanted(capacity: APNSTransportCapacity) -> Int {
        max(1, capacity.window / self.bulkBatch(workers: 4, capacity: capacity))
    }

    /// Sends `notification` to every token of `tokens` (hex strings, read lazily), as many at once
    /// as the pool's open streams allow, and reports one verdict per token.
    /// - Throws: ``APNSError`` of kind `invalidNotification` before anything is sent, when the
    ///   notification breaks a rule.
    /// - Parameters:
    ///   - bufferedVerdicts: verdicts that may wait for the reader before sending pauses.
    ///   - apnsIDs: the `apns-id` of the token at each index, for sends that may be repeated (see
    ///     ``APNSID/init(campaign:index:)``); by default the notification's own, or APNs' choice.
    public func sendBulk<Tokens: AsyncSequence & Sendable>(
        _ notification: some APNSNotification, to tokens: Tokens, deadline: ContinuousClock.Instant? = nil,
        bufferedVerdicts: Int = 2048, apnsIDs: (@Sendable (_ index: Int) -> APNSID)? = nil
    ) throws(APNSError) -> APNSBulkSend where Tokens.Element == String {
        let prepared: APNSPreparedNotification
        do {
            prepared = try notification.prepared()
        } catch {
            throw APNSError(kind: .invalidNotification, detail: "\(error.field) \(error.rule)")
        }
        return self.sendBulk(prepared, to: tokens, deadline: deadline, bufferedVerdicts: bufferedVerdicts, apnsIDs: apnsIDs)
    }

    /// Sends an already prepared notification (validated and encoded once) to every token of
    /// `tokens`; see ``sendBulk(_:to:deadline:bufferedVerdicts:)-(_,Tokens,_,_)``.
    public func sendBulk<Tokens: AsyncSequence & Sendable>(
        _ prepared: APNSPreparedNotification, to tokens: Tokens, deadline: ContinuousClock.Instant? = nil,
        bufferedVerdicts: Int = 2048, apnsIDs: (@Sendable (_ index: Int) -> APNSID)? = nil
    ) -> APNSBulkSend where Tokens.Element == String {
        // The bulk's span is a child of the caller's span, though its work runs under the client's run().
        let context = self.tracer == nil ? .topLevel : ServiceContext.current ?? .topLevel
        return APNSBulkSend(channel: VerdictChannel(capacity: max(1, bufferedVerdicts)), client: self) { channel, reading in
            await self.runBulk(
                prepared, tokens: tokens, deadline: deadline, apnsIDs: apnsIDs, channel: channel, reading: reading, context: context
            )
        }
    }

    /// Sends `notification` to an array of tokens; see ``sendBulk(_:to:deadline:)-(_,Tokens,_)``.
    public func sendBulk(
        _ notification: some APNSNotification, to tokens: [DeviceToken], deadline: ContinuousClock.Instant? = nil
    ) throws(APNSError) -> APNSBulkSend {
        try self.sendBulk(notification, to: TokenList(tokens: tokens), deadline: deadline)
    }

    /// Sends an already prepared notification to an array of tokens.
    public func sendBulk(
        _ prepared: APNSPreparedNotification, to tokens: [DeviceToken], deadline: ContinuousClock.Instant? = nil
    ) -> APNSBulkSend {
        self.sendBulk(prepared, to: TokenList(tokens: tokens), deadline: deadline)
    }

    private func runBulk<Tokens: AsyncSequence>(
        _ prepared: APNSPreparedNotification, tokens: Tokens, deadline: ContinuousClock.Instant?,
        apnsIDs: (@Sendable (Int) -> APNSID)?, channel: VerdictChannel, reading: ReadingSwitch, context: ServiceContext
    ) async where Tokens.Element == String {
        // One span for the whole bulk, none per push: a million tokens make one span.
        let span = self.tracer?.startSpan(ClientTracing.bulkSpan, context: context, ofKind: .client)
        defer { span?.end() }
        if let span, span.isRecording { ClientTracing.describe(pushType: prepared.pushType, topic: prepared.topic.rawValue, on: span) }
        // Workers, not a task per token: each worker takes a few tokens at a time from the shared
        // feed, sends them one by one and hands each verdict over, so a token costs no task
        // creation and no wake-up of a coordinator. More workers start as the pool's open streams
        // grow (one until the first push succeeds, then the server's limit), up to the cap.
        let feed = TokenFeed(tokens.makeAsyncIterator(), reading: reading)
        // One topic, one credential: its pool sizes the workers. With none serving the topic, every
        // token is rejected unsent (one worker is enough for that).
        let route: Result<CredentialRoute, APNSError>
        do throws(APNSError) {
            route = .success(try self.route(forBundleID: CredentialTable.bundleID(of: prepared)))
        } catch {
            route = .failure(error)
        }
        let tally = LockedBox(APNSBulkSummary())
        let started = ContinuousClock.now
        // Workers are only ever added; each sizes its next batch by how many there are now.
        let workers = LockedBox(0)
        await withTaskGroup(of: Void.self) { group in
            func spawn() {
                workers.withLock { $0 += 1 }
                group.addTask {
                    await self.bulkWorker(
                        prepared, route: route, feed: feed, workers: workers, deadline: deadline, apnsIDs: apnsIDs, channel: channel,
                        tally: tally
                    )
                }
            }
            spawn()
            while await feed.waitForProgress() {
                // Requests in flight follow the pool's open streams, up to the cap; a worker keeps a batch in flight.
                guard case .success(let route) = route else { continue }
                let wanted = self.bulkWorkersWanted(capacity: route.transport.capacity)
                while workers.withLock({ $0 }) < wanted { spawn() }
            }
        }
        var summary = tally.withLock { $0 }
        summary.total = feed.taken
        summary.inputError = feed.inputError
        summary.stoppedReading = feed.stoppedReading
        summary.duration = .now - started
        ((try? route.get())?.logger ?? self.logger).info("bulk send finished", metadata: [
            "apns.push_type": "\(prepared.pushType)", "apns.total": "\(summary.total)", "apns.accepted": "\(summary.accepted)",
            "apns.rejected": "\(summary.rejectedCount)", "apns.failed": "\(summary.failed)", "apns.not_sent": "\(summary.notSent)",
        ])
        if let span, span.isRecording { ClientTracing.record(summary, on: span) }
        channel.finish(summary)
    }

    /// Sends the feed's tokens in batches (``bulkBatch(workers:capacity:)``) through the send engine,
    /// which owns retries, replays and provider-token renewal: a bulk send is batching, nothing more.
    private func bulkWorker(
        _ prepared: APNSPreparedNotification, route: Result<CredentialRoute, APNSError>, feed: TokenFeed, workers: LockedBox<Int>,
        deadline: ContinuousClock.Instant?, apnsIDs: (@Sendable (Int) -> APNSID)?, channel: VerdictChannel,
        tally: LockedBox<APNSBulkSummary>
    ) async {
        func batchSize() -> Int {
            guard case .success(let route) = route else { return Self.maximumBulkBatch }
            return self.bulkBatch(workers: workers.withLock { $0 }, capacity: route.transport.capacity)
        }
        while let batch = await feed.take(batchSize()) {
            var outcomes = [APNSBulkVerdict.Outcome?](repeating: nil, count: batch.count)
            var requests: [APNSHTTPRequest] = []
            var slots: [Int] = []
            requests.reserveCapacity(batch.count)
            slots.reserveCapacity(batch.count)
            for (slot, item) in batch.enumerated() {
                if Task.isCancelled {
                    outcomes[slot] = .notSent(APNSError(kind: .cancelled, detail: "the bulk send was cancelled"))
                    continue
                }
                do throws(APNSValidationError) {
                    requests.append(prepared.request(to: try DeviceToken(item.1), apnsID: apnsIDs?(item.0)))
                    slots.append(slot)
                } catch {
                    outcomes[slot] = .rejected(APNSError(kind: .invalidNotification, detail: "\(error.field) \(error.rule)"))
                }
            }
            if !requests.isEmpty {
                let results: [Result<APNSSendResult, APNSError>]
                switch route {
                case .success(let route):
                    results = await self.execute(
                        requests, pushType: prepared.pushType, route: route,
                        deadline: MonotonicInstant.deadline(deadline, orAfter: self.configuration.timeouts.request, from: .now)
                    )
                case .failure(let error):
                    results = Array(repeating: .failure(error), count: requests.count)
                }
                for (position, slot) in slots.enumerated() {
                    switch results[position] {
                    case .success(let result): outcomes[slot] = .accepted(result)
                    case .failure(let error): outcomes[slot] = APNSBulkVerdict.Outcome(error)
                    }
                }
            }
            // Counted and handed over once per batch: one lock each, not one per token.
            var verdicts: [APNSBulkVerdict?] = []
            verdicts.reserveCapacity(batch.count)
            var counts = APNSBulkSummary()
            for (slot, item) in batch.enumerated() {
                let outcome = outcomes[slot].take() ?? .failed(APNSError(kind: .transport, mayHaveBeenDelivered: true, detail: "no outcome"))
                if outcome.mayHaveBeenDelivered { counts.mayHaveBeenDelivered += 1 }
                switch outcome {
                case .accepted:
                    counts.accepted += 1
                case .rejected(let error):
                    counts.rejected[error.reason?.rawValue ?? "InvalidToken", default: 0] += 1
                case .failed:
                    counts.failed += 1
                case .notSent:
                    counts.notSent += 1
                }
                verdicts.append(APNSBulkVerdict(token: item.1, index: item.0, outcome: outcome))
            }
            tally.withLock { summary in
                summary.accepted += counts.accepted
                summary.mayHaveBeenDelivered += counts.mayHaveBeenDelivered
                summary.failed += counts.failed
                summary.notSent += counts.notSent
                summary.rejected.merge(counts.rejected, uniquingKeysWith: +)
            }
            await channel.send(verdicts)
        }
    }
}

/// Fires once; ``wait()`` returns then, or when its task is cancelled.
final class StopSignal: Sendable {
    private let state = LockedBox<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func fire() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = self.state.withLock { state -> Bool in
                    if state.fired { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            self.fire()
        }
    }
}

/// Turned off by ``APNSBulkSend/stop()``: the bulk reads no further token.
final class ReadingSwitch: Sendable {
    private let stopped = Atomic<Bool>(false)

    func stop() { self.stopped.store(true, ordering: .relaxed) }

    /// Read once per token: an atomic load, no lock.
    var isStopped: Bool { self.stopped.load(ordering: .relaxed) }
}

/// The token sequence, shared by a bulk send's workers: one reads at a time (an iterator is not
/// concurrent), a few tokens per turn; the coordinator hears about progress to add workers.
final class TokenFeed: Sendable {
    private struct State {
        var reading = false
        var readers: [CheckedContinuation<Void, Never>] = []
        var done = false
        var taken = 0
        var inputError: String?
        var progressWaiter: CheckedContinuation<Bool, Never>?
        var reported = 0
        /// The bulk was cancelled before the sequence ended: the rest was never read.
        var stoppedReading = false
    }

    private let state = LockedBox(State())
    private let reading: ReadingSwitch
    // Touched only by the worker holding the reading turn.
    private nonisolated(unsafe) var next: () async throws -> String?

    init<Iterator: AsyncIteratorProtocol>(_ iterator: Iterator, reading: ReadingSwitch) where Iterator.Element == String {
        nonisolated(unsafe) var iterator = iterator
        self.next = { try await iterator.next() }
        self.reading = reading
    }

    var taken: Int { self.state.withLock { $0.taken } }
    var inputError: String? { self.state.withLock { $0.inputError } }
    var stoppedReading: Bool { self.state.withLock { $0.stoppedReading } }

    /// Up to `count` tokens with their positions, or `nil` when the sequence is over.
    func take(_ count: Int) async -> [(Int, String)]? {
        await self.acquireTurn()
        var batch: [(Int, String)] = []
        let done = self.state.withLock { $0.done }
        var ended = done
        var failure: String?
        var cancelled = false
        if !done {
            batch.reserveCapacity(count)
            let first = self.state.withLock { $0.taken }
            while batch.count < count {
                // A cancelled or stopped bulk reads no further: the tokens already read get their verdicts.
                if Task.isCancelled || self.reading.isStopped {
                    cancelled = true
                    ended = true
                    break
                }
                do {
                    guard let text = try await self.next() else {
                        ended = true
                        break
                    }
                    batch.append((first + batch.count, text))
                } catch {
                    failure = "\(error)"
                    ended = true
                    break
                }
            }
        }
        let (reader, progress) = self.state.withLock { state -> (CheckedContinuation<Void, Never>?, CheckedContinuation<Bool, Never>?) in
            state.taken += batch.count
            if ended { state.done = true }
            if let failure, state.inputError == nil { state.inputError = failure }
            if cancelled { state.stoppedReading = true }
            var progress: CheckedContinuation<Bool, Never>?
            if state.done || state.taken - state.reported >= 64 {
                state.reported = state.taken
                progress = state.progressWaiter
                state.progressWaiter = nil
            }
            let reader = state.readers.isEmpty ? nil : state.readers.removeFirst()
            if reader == nil { state.reading = false }
            return (reader, progress)
        }
        reader?.resume()
        progress?.resume(returning: !ended)
        return batch.isEmpty && ended ? nil : batch
    }

    /// Returns `true` after more tokens were taken, `false` once the sequence is over.
    func waitForProgress() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let now = self.state.withLock { state -> Bool? in
                if state.done { return false }
                state.progressWaiter = continuation
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    private func acquireTurn() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = self.state.withLock { state -> Bool in
                if state.reading {
                    state.readers.append(continuation)
                    return false
                }
                state.reading = true
                return true
            }
            if now { continuation.resume() }
        }
    }
}

/// An array of tokens as an async sequence of hex strings.
struct TokenList: AsyncSequence, Sendable {
    typealias Element = String
    let tokens: [DeviceToken]

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[DeviceToken]>
        mutating func next() async -> String? { self.base.next()?.hexString }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: self.tokens.makeIterator()) }
}
