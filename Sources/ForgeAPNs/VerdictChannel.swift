internal import ForgeAPNsCore
internal import ForgeSupport

/// A bounded hand-off from the bulk producer to one reader, with back-pressure both ways.
///
/// Verdicts move in whole batches: a worker's array goes into the buffer (as is when the buffer is
/// empty), and the reader takes the whole buffer. No verdict is copied one by one on the way.
/// Neither side gives up when its task is cancelled: a cancelled bulk send still hands every
/// token its verdict, and only ``abandon()`` (nobody reads any more) releases the workers.
///
/// The channel also keeps the bulk send's counts: a batch's counts are added under the lock that
/// hands the batch over, so every verdict is counted exactly once, when it leaves its worker, and a
/// caller can read the counts so far while the bulk runs (``counts``).
final class VerdictChannel: Sendable {
    private enum Party: Sendable { case writer, reader }

    private struct State: WaitingState {
        var buffer: [APNSBulkVerdict?] = []
        /// The verdicts handed over so far (dropped ones included), counted.
        var tally = APNSBulkSummary()
        /// Set at the end: the tally with what only the producer knows (tokens read, duration, why reading stopped).
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

    /// The summary once finished, else the counts of the verdicts handed over so far.
    var counts: APNSBulkSummary { self.state.withLock { $0.summary ?? $0.tally } }

    /// Hands verdicts to the reader, waiting while the buffer is full (a batch may overfill it by
    /// less than one batch: the bound is the capacity plus one batch per worker). `counts` are the
    /// batch's own (``APNSBulkSummary/add(_:)`` over its outcomes), added as the batch goes in.
    func send(_ verdicts: [APNSBulkVerdict?], counts: APNSBulkSummary) async {
        guard !verdicts.isEmpty else { return }
        var counted = false
        var handed = false
        var reader: [WaitList<Party, Bool>.Continuation] = []
        while !handed {
            // Woken when the reader took the buffer (or went away): then look again.
            _ = await self.state.wait(key: .writer, onCancel: nil) { state in
                if !counted {
                    state.tally.addCounts(of: counts)
                    counted = true
                }
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

    /// Ends the stream: its summary is the tally of every verdict handed over, completed by
    /// `complete` (tokens read, duration, why reading stopped). Returns that summary.
    @discardableResult
    func finish(_ complete: (inout APNSBulkSummary) -> Void) -> APNSBulkSummary {
        let (summary, reader) = self.state.withLock { state in
            var summary = state.tally
            complete(&summary)
            state.summary = summary
            return (summary, state.waiters.removeAll { $0 == .reader })
        }
        for waiting in reader { waiting.resume(returning: true) }
        return summary
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
