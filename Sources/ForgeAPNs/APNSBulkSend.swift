public import ForgeAPNsCore
internal import ForgeSupport
internal import Logging

/// What happened to one token of a bulk send. Every token gets exactly one.
public struct APNSBulkVerdict: Sendable {
    /// The outcome.
    public enum Outcome: Sendable {
        /// APNs accepted the push.
        case accepted(APNSSendResult)
        /// APNs rejected it (reason and timestamp in the error), or the token was malformed.
        case rejected(APNSError)
        /// Sending failed after the retries the policy allows (transport, deadline).
        case failed(APNSError)
        /// Not sent: the bulk send was cancelled or the client shut down first.
        case notSent(APNSError)
    }

    /// The token as given.
    public var token: String
    /// Its position in the input, from 0.
    public var index: Int
    /// The outcome.
    public var outcome: Outcome

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
    /// Failed after retries.
    public var failed = 0
    /// Not sent (cancelled or shut down).
    public var notSent = 0
    /// Accepted after a retry whose earlier attempt may also have been delivered.
    public var possiblyDeliveredTwice = 0
    /// Wall time from start to the last verdict.
    public var duration: Duration = .zero
    /// Set when the token sequence itself threw: tokens after that point were never read.
    public var inputError: String?

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
        if let inputError = self.inputError { text += "; input stopped: \(inputError)" }
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
    private let producer: LockedBox<Task<Void, Never>?>

    init(channel: VerdictChannel, start: @escaping @Sendable (VerdictChannel) async -> Void) {
        self.channel = channel
        self.producer = LockedBox(nil)
        let task = Task { await start(channel) }
        self.producer.withLock { $0 = task }
    }

    /// Stops sending: tokens not sent yet get ``APNSBulkVerdict/Outcome/notSent(_:)``.
    public func cancel() { self.producer.withLock { $0 }?.cancel() }

    /// The counts, once the last verdict is out (nil before).
    public var summary: APNSBulkSummary? { self.channel.finishedSummary }

    /// Waits for the end, discarding verdicts not read, and returns the counts.
    public func summary() async -> APNSBulkSummary {
        while await self.channel.next() != nil {}
        return self.channel.finishedSummary ?? APNSBulkSummary()
    }

    public func makeAsyncIterator() -> Iterator { Iterator(channel: self.channel) }

    /// Reads verdicts; cancelling the reading task cancels the bulk send.
    public struct Iterator: AsyncIteratorProtocol {
        let channel: VerdictChannel

        public mutating func next() async -> APNSBulkVerdict? { await self.channel.next() }
    }
}

/// A bounded hand-off from the bulk producer to one reader, with back-pressure both ways.
final class VerdictChannel: Sendable {
    private struct State {
        var buffer: [APNSBulkVerdict] = []
        var head = 0
        var summary: APNSBulkSummary?
        var reader: CheckedContinuation<APNSBulkVerdict?, Never>?
        var writer: CheckedContinuation<Void, Never>?
    }

    private let state = LockedBox(State())
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    var finishedSummary: APNSBulkSummary? { self.state.withLock { $0.summary } }

    /// Hands a verdict to the reader, waiting while the buffer is full.
    func send(_ verdict: APNSBulkVerdict) async {
        enum Action { case delivered(CheckedContinuation<APNSBulkVerdict?, Never>), buffered, full }
        while true {
            let action = self.state.withLock { state -> Action in
                if let reader = state.reader {
                    state.reader = nil
                    return .delivered(reader)
                }
                if state.buffer.count - state.head < self.capacity {
                    state.buffer.append(verdict)
                    return .buffered
                }
                return .full
            }
            switch action {
            case .delivered(let reader):
                reader.resume(returning: verdict)
                return
            case .buffered:
                return
            case .full:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = self.state.withLock { state -> Bool in
                        if state.buffer.count - state.head < self.capacity { return true }
                        state.writer = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    /// Ends the stream with the counts.
    func finish(_ summary: APNSBulkSummary) {
        let reader = self.state.withLock { state -> CheckedContinuation<APNSBulkVerdict?, Never>? in
            state.summary = summary
            defer { state.reader = nil }
            return state.buffer.count > state.head ? nil : state.reader
        }
        reader?.resume(returning: nil)
    }

    func next() async -> APNSBulkVerdict? {
        enum Take { case value(APNSBulkVerdict, CheckedContinuation<Void, Never>?), end, wait }
        let take = self.state.withLock { state -> Take in
            if state.head < state.buffer.count {
                let value = state.buffer[state.head]
                state.head += 1
                if state.head > 4096, state.head * 2 > state.buffer.count {
                    state.buffer.removeFirst(state.head)
                    state.head = 0
                }
                let writer = state.writer
                state.writer = nil
                return .value(value, writer)
            }
            return state.summary == nil ? .wait : .end
        }
        switch take {
        case .value(let value, let writer):
            writer?.resume()
            return value
        case .end:
            return nil
        case .wait:
            return await withCheckedContinuation { (continuation: CheckedContinuation<APNSBulkVerdict?, Never>) in
                let immediate = self.state.withLock { state -> Take in
                    if state.head < state.buffer.count {
                        let value = state.buffer[state.head]
                        state.head += 1
                        let writer = state.writer
                        state.writer = nil
                        return .value(value, writer)
                    }
                    if state.summary != nil { return .end }
                    state.reader = continuation
                    return .wait
                }
                switch immediate {
                case .value(let value, let writer):
                    writer?.resume()
                    continuation.resume(returning: value)
                case .end:
                    continuation.resume(returning: nil)
                case .wait:
                    break
                }
            }
        }
    }
}

extension APNSClient {
    /// The most sends one bulk keeps in flight, whatever the pool offers.
    static let maximumBulkWindow = 128

    /// Sends `notification` to every token of `tokens` (hex strings, read lazily), as many at once
    /// as the pool's open streams allow, and reports one verdict per token.
    /// - Throws: ``APNSError`` of kind `invalidNotification` before anything is sent, when the
    ///   notification breaks a rule.
    public func sendBulk<Tokens: AsyncSequence & Sendable>(
        _ notification: some APNSNotification, to tokens: Tokens, deadline: ContinuousClock.Instant? = nil
    ) throws(APNSError) -> APNSBulkSend where Tokens.Element == String {
        let prepared: APNSPreparedNotification
        do {
            prepared = try notification.prepared()
        } catch {
            throw APNSError(kind: .invalidNotification, detail: "\(error.field) \(error.rule)")
        }
        return APNSBulkSend(channel: VerdictChannel(capacity: 2048)) { channel in
            await self.runBulk(prepared, tokens: tokens, deadline: deadline, channel: channel)
        }
    }

    /// Sends `notification` to an array of tokens; see ``sendBulk(_:to:deadline:)-(_,Tokens,_)``.
    public func sendBulk(
        _ notification: some APNSNotification, to tokens: [DeviceToken], deadline: ContinuousClock.Instant? = nil
    ) throws(APNSError) -> APNSBulkSend {
        try self.sendBulk(notification, to: TokenList(tokens: tokens), deadline: deadline)
    }

    private func runBulk<Tokens: AsyncSequence>(
        _ prepared: APNSPreparedNotification, tokens: Tokens, deadline: ContinuousClock.Instant?, channel: VerdictChannel
    ) async where Tokens.Element == String {
        var summary = APNSBulkSummary()
        let started = ContinuousClock.now
        func record(_ verdict: APNSBulkVerdict) {
            switch verdict.outcome {
            case .accepted(let result):
                summary.accepted += 1
                if result.mayHaveBeenDeliveredTwice { summary.possiblyDeliveredTwice += 1 }
            case .rejected(let error):
                summary.rejected[error.reason?.rawValue ?? "InvalidToken", default: 0] += 1
            case .failed:
                summary.failed += 1
            case .notSent:
                summary.notSent += 1
            }
        }
        await withTaskGroup(of: APNSBulkVerdict.self) { group in
            var inFlight = 0
            var index = 0
            var iterator = tokens.makeAsyncIterator()
            while true {
                let text: String?
                do {
                    text = try await iterator.next()
                } catch {
                    summary.inputError = "\(error)"
                    break
                }
                guard let text else { break }
                defer { index += 1 }
                summary.total += 1
                if Task.isCancelled {
                    let verdict = APNSBulkVerdict(token: text, index: index, outcome: .notSent(APNSError(kind: .cancelled, detail: "the bulk send was cancelled")))
                    record(verdict)
                    await channel.send(verdict)
                    continue
                }
                guard let token = try? DeviceToken(text) else {
                    var error = APNSError(kind: .invalidNotification, detail: "not a device token")
                    if let invalid = Result(catching: { () throws(APNSValidationError) in try DeviceToken(text) }).failureValue {
                        error.detail = "\(invalid.field) \(invalid.rule)"
                    }
                    let verdict = APNSBulkVerdict(token: text, index: index, outcome: .rejected(error))
                    record(verdict)
                    await channel.send(verdict)
                    continue
                }
                while inFlight >= min(max(self.window, 1), Self.maximumBulkWindow), let done = await group.next() {
                    inFlight -= 1
                    record(done)
                    await channel.send(done)
                }
                let position = index
                group.addTask {
                    do throws(APNSError) {
                        let result = try await self.send(prepared, to: token, deadline: deadline)
                        return APNSBulkVerdict(token: text, index: position, outcome: .accepted(result))
                    } catch {
                        switch error.kind {
                        case .rejected: return APNSBulkVerdict(token: text, index: position, outcome: .rejected(error))
                        case .cancelled, .shutdown: return APNSBulkVerdict(token: text, index: position, outcome: .notSent(error))
                        default: return APNSBulkVerdict(token: text, index: position, outcome: .failed(error))
                        }
                    }
                }
                inFlight += 1
            }
            while let done = await group.next() {
                record(done)
                await channel.send(done)
            }
        }
        summary.duration = .now - started
        self.logger.info("bulk send finished", metadata: [
            "apns.push_type": "\(prepared.pushType)", "apns.total": "\(summary.total)", "apns.accepted": "\(summary.accepted)",
            "apns.rejected": "\(summary.rejectedCount)", "apns.failed": "\(summary.failed)", "apns.not_sent": "\(summary.notSent)",
        ])
        channel.finish(summary)
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

extension Result {
    fileprivate var failureValue: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
