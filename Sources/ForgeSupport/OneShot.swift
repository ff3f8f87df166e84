/// A value set once, by whichever path gets there first, and awaited by any number of tasks.
///
/// ```swift
/// let outcome = OneShot<Result>()
/// // the work, or an expiry, whichever is first:
/// outcome.resolve(.finished)
/// // elsewhere:
/// let result = await outcome.value
/// ```
///
/// ``resolve(_:)`` wakes every waiter with the value; later calls change nothing. ``value`` waits
/// however long that takes, even in a cancelled task; ``value(resolvingOnCancel:)`` resolves the
/// one-shot itself when its task is cancelled (before or while it waits), for a signal that the
/// end of the waiting task should also fire.
package final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, Never>])
        case resolved(Value)
    }

    private let state = LockedBox(State.waiting([]))

    package init() {}

    /// Sets the value if it is not set yet, and wakes the waiters.
    /// - Returns: whether this call set it.
    @discardableResult
    package func resolve(_ value: Value) -> Bool {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Value, Never>]? in
            guard case .waiting(let waiters) = state else { return nil }
            state = .resolved(value)
            return waiters
        }
        waiters?.forEach { $0.resume(returning: value) }
        return waiters != nil
    }

    /// Whether the value is set.
    package var isResolved: Bool {
        self.state.withLock { state in
            if case .resolved = state { return true }
            return false
        }
    }

    /// The value, once set.
    package var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let resolved = self.state.withLock { state -> Value? in
                    switch state {
                    case .resolved(let value):
                        return value
                    case .waiting(let waiters):
                        state = .waiting(waiters + [continuation])
                        return nil
                    }
                }
                if let resolved { continuation.resume(returning: resolved) }
            }
        }
    }

    /// The value, once set; if the calling task is cancelled first (before or while it waits),
    /// `onCancel` is set, unless another value came first, and returned.
    package func value(resolvingOnCancel onCancel: Value) async -> Value {
        await withTaskCancellationHandler {
            if Task.isCancelled { self.resolve(onCancel) }
            return await self.value
        } onCancel: {
            self.resolve(onCancel)
        }
    }
}
