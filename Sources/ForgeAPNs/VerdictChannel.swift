internal import ForgeAPNsCore
internal import ForgeSupport

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
