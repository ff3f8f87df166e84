/// A counting semaphore for async code: at most `count` holders at a time, waiters served in order.
///
/// ```swift
/// let slots = AsyncSemaphore(64)
/// guard await slots.acquire() else { return }   // cancelled: no slot taken
/// defer { slots.release() }
/// ```
package final class AsyncSemaphore: Sendable {
    private struct State: WaitingState {
        var available: Int
        var waiters = Waiters()
    }

    private let state: LockedBox<State>

    /// - Parameter count: how many may hold it at once (at least 0).
    package init(_ count: Int) {
        precondition(count >= 0, "a semaphore's count cannot be negative")
        self.state = LockedBox(State(available: count))
    }

    /// Slots free now (for tests and diagnostics).
    package var available: Int { self.state.withLock { $0.available } }

    /// Tasks waiting for a slot (for tests and diagnostics).
    package var waiting: Int { self.state.withLock { $0.waiters.count } }

    /// Takes a slot, waiting for one if none is free: `true` then; `false`, with no slot taken, when
    /// the calling task is cancelled before or while it waits.
    package func acquire() async -> Bool {
        await self.state.wait(key: 0) { state in
            guard state.available > 0, state.waiters.isEmpty else { return nil }
            state.available -= 1
            return true
        }
    }

    /// Gives a slot back: to the first waiter, or to the pool.
    package func release() {
        let waiter = self.state.withLock { state in
            guard let first = state.waiters.removeFirst() else {
                state.available += 1
                return nil as CheckedContinuation<Bool, Never>?
            }
            return first
        }
        waiter?.resume(returning: true)
    }
}
