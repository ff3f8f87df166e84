internal import struct Foundation.Date
internal import ForgeSupport

/// The device's record of events, with waiters and streams that see new entries.
final class Timeline: Sendable {
    private struct Waiter {
        var predicate: @Sendable (DeviceEvent) -> Bool
        var continuation: CheckedContinuation<TimelineEntry?, Never>
    }

    private struct State {
        /// The entries kept: the newest, from sequence `offset` on.
        var entries: [TimelineEntry] = []
        var offset = 0
        var nextWaiterID = 0
        var waiters: [Int: Waiter] = [:]
        var nextStreamID = 0
        var streams: [Int: AsyncStream<TimelineEntry>.Continuation] = [:]
    }

    private let state = LockedBox(State())
    /// How many entries are kept (the oldest are forgotten beyond it); `nil` keeps every one.
    let retention: Int?

    init(retention: Int? = nil) {
        self.retention = retention
    }

    var entries: [TimelineEntry] { self.state.withLock { $0.entries } }

    /// Appends an event and wakes the waiters and streams it concerns.
    @discardableResult
    func record(_ event: DeviceEvent, date: @autoclosure () -> Date) -> TimelineEntry {
        let (entry, woken, streams) = self.state.withLock { state in
            let entry = TimelineEntry(sequence: state.offset + state.entries.count, date: date(), event: event)
            state.entries.append(entry)
            // Trimmed in batches (a quarter of the retention at a time), not on every entry.
            if let retention = self.retention, state.entries.count > retention + max(1, retention / 4) {
                let excess = state.entries.count - retention
                state.entries.removeFirst(excess)
                state.offset += excess
            }
            let matching = state.waiters.filter { $0.value.predicate(event) }
            for id in matching.keys { state.waiters.removeValue(forKey: id) }
            return (entry, matching.map(\.value.continuation), Array(state.streams.values))
        }
        woken.forEach { $0.resume(returning: entry) }
        streams.forEach { $0.yield(entry) }
        return entry
    }

    /// The first entry at or after `position`, past or future, whose event matches; `nil` if the task
    /// is cancelled first.
    func first(from position: Int, where predicate: @escaping @Sendable (DeviceEvent) -> Bool) async -> TimelineEntry? {
        let id = self.state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        // Set under the state lock by the cancellation handler, so that one that runs before the
        // waiter is registered still ends the wait. Lock order: `state`, then `cancelled`.
        let cancelled = LockedBox(false)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resume = self.state.withLock { state -> TimelineEntry?? in
                    if let entry = state.entries.dropFirst(max(0, position - state.offset)).first(where: { predicate($0.event) }) {
                        return .some(entry)
                    }
                    if cancelled.withLock({ $0 }) { return .some(nil) }
                    state.waiters[id] = Waiter(predicate: predicate, continuation: continuation)
                    return .none
                }
                if let resume { continuation.resume(returning: resume) }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> Waiter? in
                cancelled.withLock { $0 = true }
                return state.waiters.removeValue(forKey: id)
            }
            waiter?.continuation.resume(returning: nil)
        }
    }

    /// A stream of the entries recorded from now on.
    func stream() -> AsyncStream<TimelineEntry> {
        let (stream, continuation) = AsyncStream.makeStream(of: TimelineEntry.self)
        let id = self.state.withLock { state in
            state.nextStreamID += 1
            state.streams[state.nextStreamID] = continuation
            return state.nextStreamID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }
}
