internal import struct Foundation.Date
internal import ForgeSupport

/// The device's record of events, with waiters and streams that see new entries.
final class Timeline: Sendable {
    /// What a waiter waits for: the first event its predicate picks.
    typealias Predicate = @Sendable (DeviceEvent) -> Bool

    private struct State: WaitingState {
        /// The entries kept: the newest, from sequence `offset` on.
        var entries: [TimelineEntry] = []
        var offset = 0
        /// Each waits for the first event its predicate picks, and gets that entry.
        var waiters = WaitList<Predicate, TimelineEntry?>()
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
            return (entry, state.waiters.removeAll { $0(event) }, Array(state.streams.values))
        }
        woken.forEach { $0.resume(returning: entry) }
        streams.forEach { $0.yield(entry) }
        return entry
    }

    /// The first entry at or after `position`, past or future, whose event matches; `nil` if the task
    /// is cancelled first.
    func first(from position: Int, where predicate: @escaping Predicate) async -> TimelineEntry? {
        await self.state.wait(key: predicate, onCancel: .some(nil)) { state in
            let past = state.entries.dropFirst(max(0, position - state.offset)).first { predicate($0.event) }
            return past.map { .some($0) }
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
