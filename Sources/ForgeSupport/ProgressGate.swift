import Synchronization

/// A count that only grows, and tasks that wait for it to reach a target: how far a consumer has
/// come (verdicts committed, say) for a producer that may run at most a window ahead of it.
///
/// ```swift
/// let committed = ProgressGate()
/// // producer, before handing out item n:
/// guard await committed.wait(untilReached: n - window) else { return nil }  // released or cancelled
/// // consumer, after committing k items:
/// committed.advance(by: k)
/// ```
///
/// Any number of tasks may wait, each for its own target; ``advance(by:)`` resumes those whose
/// target is reached, ``release()`` resumes every one (and every later wait) with `false`, and a
/// waiting task that is cancelled returns `false` at once. ``hasReached(_:)`` and ``isReleased``
/// read atomics, so a producer can check on every item without taking the lock.
package final class ProgressGate: Sendable {
    private struct State: WaitingState {
        var reached = 0
        var released = false
        var waiters = Waiters()
    }

    private let state = LockedBox(State())
    private let reachedCount = Atomic<Int>(0)
    private let releasedFlag = Atomic<Bool>(false)

    package init() {}

    /// How far the count has come.
    package var reached: Int { self.reachedCount.load(ordering: .acquiring) }

    /// Whether ``release()`` was called.
    package var isReleased: Bool { self.releasedFlag.load(ordering: .acquiring) }

    /// How many tasks are waiting (for tests and diagnostics).
    package var waiting: Int { self.state.withLock { $0.waiters.count } }

    /// Whether the count has reached `target`, without waiting.
    package func hasReached(_ target: Int) -> Bool { self.reached >= target }

    /// Waits until the count reaches `target`: `true` then; `false` when the gate is released first
    /// or the calling task is cancelled (before the call or while it waits).
    package func wait(untilReached target: Int) async -> Bool {
        if self.hasReached(target) { return true }
        return await self.state.wait(key: target) { state in
            if state.reached >= target { return true }
            return state.released ? false : nil
        }
    }

    /// Adds `count` (at least 0) and resumes the waiters whose target is reached.
    package func advance(by count: Int) {
        precondition(count >= 0, "a ProgressGate only grows")
        let ready = self.state.withLock { state in
            state.reached += count
            self.reachedCount.store(state.reached, ordering: .releasing)
            let reached = state.reached
            return state.waiters.removeAll { $0 <= reached }
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    /// Stops the gate: every waiter, and every later wait for a target not yet reached, returns `false`.
    package func release() {
        let waiting = self.state.withLock { state in
            state.released = true
            self.releasedFlag.store(true, ordering: .releasing)
            return state.waiters.removeAll { _ in true }
        }
        for continuation in waiting { continuation.resume(returning: false) }
    }
}
