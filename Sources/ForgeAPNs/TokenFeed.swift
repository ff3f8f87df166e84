internal import ForgeAPNsCore
internal import ForgeSupport

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
