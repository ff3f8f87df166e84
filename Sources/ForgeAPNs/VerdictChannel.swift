internal import ForgeAPNsCore
internal import ForgeSupport

/// A bounded hand-off from the bulk producer to one reader, with back-pressure both ways.
///
/// Verdicts move in whole batches: a worker's array goes into the buffer (as is when the buffer is
/// empty), and the reader takes the whole buffer. No verdict is copied one by one on the way.
/// Neither side gives up when its task is cancelled: a cancelled bulk send still hands every
/// token its verdict, and only ``abandon()`` (nobody reads any more) releases the workers.
final class VerdictChannel: Sendable {
    private enum Party: Sendable { case writer, reader }

    private struct State: WaitingState {
        var buffer: [APNSBulkVerdict?] = []
        var summary: APNSBulkSummary?
        /// The reader is gone (the bulk send was released): verdicts are dropped, nobody waits.
        var abandoned = false
        /// Every worker waiting for room (several wait at once when the reader falls behind), and
        /// the reader waiting for verdicts.
        var waiters = WaitList<Party, Bool>()
    }

    private let state = LockedBox(State())
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    var finishedSummary: APNSBulkSummary? { self.state.withLock { $0.summary } }

    /// Hands verdicts to the reader, waiting while the buffer is full (a batch may overfill it by
    /// less than one batch: the bound is the capacity plus one batch per worker).
    func send(_ verdicts: [APNSBulkVerdict?]) async {
        guard !verdicts.isEmpty else { return }
        var handed = false
        var reader: [WaitList<Party, Bool>.Continuation] = []
        while !handed {
            // Woken when the reader took the buffer (or went away): then look again.
            _ = await self.state.wait(key: .writer, onCancel: nil) { state in
                if state.abandoned {
                    handed = true
                    return true
                }
                guard state.buffer.count < self.capacity else { return nil }
                if state.buffer.isEmpty { state.buffer = verdicts } else { state.buffer.append(contentsOf: verdicts) }
                reader = state.waiters.removeAll { $0 == .reader }
                handed = true
                return true
            }
        }
        for waiting in reader { waiting.resume(returning: true) }
    }

    /// The reader went away: drop what is buffered and release every waiting worker.
    func abandon() {
        let writers = self.state.withLock { state in
            state.abandoned = true
            state.buffer = []
            return state.waiters.removeAll { $0 == .writer }
        }
        for writer in writers { writer.resume(returning: true) }
    }

    /// Ends the stream with the counts.
    func finish(_ summary: APNSBulkSummary) {
        let reader = self.state.withLock { state in
            state.summary = summary
            return state.waiters.removeAll { $0 == .reader }
        }
        for waiting in reader { waiting.resume(returning: true) }
    }

    /// Every verdict buffered now (at least one), or `nil` at the end: a reader woken once takes
    /// all that accumulated meanwhile, instead of one wake-up per verdict.
    func nextBatch() async -> [APNSBulkVerdict?]? {
        while true {
            var taken: [APNSBulkVerdict?]?
            var ended = false
            var writers: [WaitList<Party, Bool>.Continuation] = []
            // Woken when a batch arrived or the stream ended: then look again.
            _ = await self.state.wait(key: .reader, onCancel: nil) { state in
                if !state.buffer.isEmpty {
                    taken = state.buffer
                    state.buffer = []
                    writers = state.waiters.removeAll { $0 == .writer }
                    return true
                }
                if state.summary != nil {
                    ended = true
                    return true
                }
                return nil
            }
            for writer in writers { writer.resume(returning: true) }
            if let taken { return taken }
            if ended { return nil }
        }
    }
}
