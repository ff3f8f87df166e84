internal import ForgeAPNsCore
internal import ForgeSupport
internal import Synchronization

/// Fires once; ``wait()`` returns then, or when its task is cancelled.
final class StopSignal: Sendable {
    private let state = LockedBox<(fired: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func fire() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.fired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = self.state.withLock { state -> Bool in
                    if state.fired { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            self.fire()
        }
    }
}

/// Turned off by ``APNSBulkSend/stop()``: the bulk reads no further token.
final class ReadingSwitch: Sendable {
    private let stopped = Atomic<Bool>(false)

    func stop() { self.stopped.store(true, ordering: .relaxed) }

    /// Read once per token: an atomic load, no lock.
    var isStopped: Bool { self.stopped.load(ordering: .relaxed) }
}
