internal import ForgeSupport

/// A value set once by whichever path gets there first (the work, the expiry), awaited by the device.
final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, Never>])
        case resolved(Value)
    }

    private let state = LockedBox(State.waiting([]))

    init() {}

    /// Sets the value if it is not set yet, and wakes the waiters.
    /// - Returns: whether this call set it.
    @discardableResult
    func resolve(_ value: Value) -> Bool {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Value, Never>]? in
            guard case .waiting(let waiters) = state else { return nil }
            state = .resolved(value)
            return waiters
        }
        waiters?.forEach { $0.resume(returning: value) }
        return waiters != nil
    }

    /// The value, once set.
    var value: Value {
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

    /// Awaits the value; calls `expire` if the value is not set when `limit` (if any) runs out, or
    /// when the waiting task is cancelled (the real-time and the shutdown paths of the expiry that
    /// tests trigger by hand). `expire` must set the value.
    func value(limit: Duration?, expire: @escaping @Sendable () -> Void) async -> Value {
        await withTaskCancellationHandler {
            guard let limit else { return await self.value }
            return await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        try await Task.sleep(for: limit)
                        expire()
                    } catch {
                        // Cancelled: the value came first.
                    }
                }
                let value = await self.value
                group.cancelAll()
                return value
            }
        } onCancel: {
            expire()
        }
    }
}
