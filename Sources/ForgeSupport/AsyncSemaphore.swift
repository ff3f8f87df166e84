/// A counting semaphore for async code: at most `count` holders at a time, waiters served in order.
///
/// ```swift
/// let slots = AsyncSemaphore(64)
/// guard await slots.acquire() else { return }   // cancelled: no slot taken
/// defer { slots.release() }
/// ```
package final class AsyncSemaphore: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var available: Int
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
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
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = self.state.withLock { state in
                    if Task.isCancelled { return false }
                    if state.available > 0, state.waiters.isEmpty {
                        state.available -= 1
                        return true
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// Gives a slot back: to the first waiter, or to the pool.
    package func release() {
        let waiter = self.state.withLock { state -> Waiter? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        waiter?.continuation.resume(returning: true)
    }
}
