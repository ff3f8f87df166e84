internal import ForgeAPNsCore
internal import ForgeSupport

/// The token sequence, shared by a bulk send's workers: one reads at a time (an iterator is not
/// concurrent), a few tokens per turn; the coordinator hears about progress to add workers.
final class TokenFeed: Sendable {
    private enum Wait: Sendable {
        /// A worker waiting for the reading turn.
        case turn
        /// The coordinator waiting for progress.
        case progress
    }

    private struct State: WaitingState {
        /// A worker holds the reading turn.
        var reading = false
        var done = false
        var taken = 0
        var inputError: String?
        var reported = 0
        /// The bulk was cancelled before the sequence ended: the rest was never read.
        var stoppedReading = false
        var waiters = WaitList<Wait, Bool>()
    }

    private let state = LockedBox(State())
    private let reading: ReadingSwitch
    // Touched only by the worker holding the reading turn.
    private nonisolated(unsafe) var next: () async throws -> BulkToken?

    /// - Parameter read: turns each element into a bulk token (for strings: parses it, once).
    init<Iterator: AsyncIteratorProtocol>(
        _ iterator: Iterator, reading: ReadingSwitch, read: @escaping @Sendable (Iterator.Element) -> BulkToken
    ) {
        nonisolated(unsafe) var iterator = iterator
        self.next = { try await iterator.next().map(read) }
        self.reading = reading
    }

    var taken: Int { self.state.withLock { $0.taken } }
    var inputError: String? { self.state.withLock { $0.inputError } }
    var stoppedReading: Bool { self.state.withLock { $0.stoppedReading } }

    /// Up to `count` tokens with their positions, or `nil` when the sequence is over.
    func take(_ count: Int) async -> [(Int, BulkToken)]? {
        // The reading turn, in the order the workers came, cancelled or not: a cancelled worker
        // reads nothing (below) and passes the turn on.
        var done = false
        var first = 0
        _ = await self.state.wait(key: .turn, onCancel: nil) { state in
            guard !state.reading else { return nil }
            state.reading = true
            return true
        }
        self.state.withLock { state in (done, first) = (state.done, state.taken) }
        var batch: [(Int, BulkToken)] = []
        var ended = done
        var failure: String?
        var cancelled = false
        if !done {
            batch.reserveCapacity(count)
            while batch.count < count {
                // A cancelled or stopped bulk reads no further: the tokens already read get their verdicts.
                if Task.isCancelled || self.reading.isStopped {
                    cancelled = true
                    ended = true
                    break
                }
                do {
                    guard let token = try await self.next() else {
                        ended = true
                        break
                    }
                    batch.append((first + batch.count, token))
                } catch {
                    failure = "\(error)"
                    ended = true
                    break
                }
            }
        }
        let (turn, progress) = self.state.withLock { state in
            state.taken += batch.count
            if ended { state.done = true }
            if let failure, state.inputError == nil { state.inputError = failure }
            if cancelled { state.stoppedReading = true }
            var progress: [WaitList<Wait, Bool>.Continuation] = []
            if state.done || state.taken - state.reported >= 64 {
                state.reported = state.taken
                progress = state.waiters.removeAll { $0 == .progress }
            }
            // The turn goes straight to the next worker in line (`reading` stays set), or is free.
            let turn = state.waiters.removeFirst { $0 == .turn }
            if turn == nil { state.reading = false }
            return (turn, progress)
        }
        turn?.resume(returning: true)
        for waiting in progress { waiting.resume(returning: !ended) }
        return batch.isEmpty && ended ? nil : batch
    }

    /// Returns `true` after more tokens were taken, `false` once the sequence is over (or the
    /// waiting task is cancelled).
    func waitForProgress() async -> Bool {
        await self.state.wait(key: .progress) { state in state.done ? false : nil }
    }
}

/// A token as the bulk send's feed hands it out: a device token, or the text of one that is not,
/// with why (it gets a `rejected` verdict, unsent).
enum BulkToken: Sendable {
    case valid(DeviceToken)
    case invalid(String, APNSValidationError)

    /// Parses `text`, once.
    init(parsing text: String) {
        do throws(APNSValidationError) {
            self = .valid(try DeviceToken(text))
        } catch {
            self = .invalid(text, error)
        }
    }

    /// The token as its verdict names it: the hex string, or the text as given.
    var text: String {
        switch self {
        case .valid(let token): return token.hexString
        case .invalid(let text, _): return text
        }
    }
}
