/// The tasks waiting on one of ForgeSupport's primitives, each with a key (a target, a place in
/// line), kept under the primitive's lock. A waiting task that is cancelled leaves at once with
/// `false` (``LockedBox/wait(key:decide:)``).
package struct Waiters: Sendable {
    private var entries: [(id: UInt64, key: Int, continuation: CheckedContinuation<Bool, Never>)] = []
    private var nextID: UInt64 = 0

    package init() {}

    /// How many wait.
    package var count: Int { self.entries.count }

    package var isEmpty: Bool { self.entries.isEmpty }

    fileprivate mutating func reserve() -> UInt64 {
        self.nextID += 1
        return self.nextID
    }

    fileprivate mutating func append(_ id: UInt64, key: Int, _ continuation: CheckedContinuation<Bool, Never>) {
        self.entries.append((id, key, continuation))
    }

    fileprivate mutating func remove(_ id: UInt64) -> CheckedContinuation<Bool, Never>? {
        guard let index = self.entries.firstIndex(where: { $0.id == id }) else { return nil }
        return self.entries.remove(at: index).continuation
    }

    /// Takes out the waiters whose key passes `test`, in the order they came; resume each one,
    /// after the lock is let go.
    package mutating func removeAll(where test: (Int) -> Bool) -> [CheckedContinuation<Bool, Never>] {
        let taken = self.entries.filter { test($0.key) }.map(\.continuation)
        self.entries.removeAll { test($0.key) }
        return taken
    }

    /// Takes out the first waiter, if any.
    package mutating func removeFirst() -> CheckedContinuation<Bool, Never>? {
        self.entries.isEmpty ? nil : self.entries.removeFirst().continuation
    }
}

/// A primitive's state that holds its waiters.
package protocol WaitingState: SendableMetatype {
    var waiters: Waiters { get set }
}

extension LockedBox where Value: WaitingState {
    /// Waits under this lock's rules: `decide` (called under the lock) answers at once with `true`
    /// or `false`, or `nil` to wait among the waiters with `key` until someone resumes the task. A task
    /// cancelled before or while it waits returns `false`, without calling `decide` if it was
    /// cancelled before, and leaves `waiters`.
    package func wait(key: Int, decide: (inout Value) -> Bool?) async -> Bool {
        let id = self.withLock { $0.waiters.reserve() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now: Bool? = self.withLock { value in
                    // Cancelled before this point: the handler below found no waiter to resume.
                    if Task.isCancelled { return false }
                    if let answer = decide(&value) { return answer }
                    value.waiters.append(id, key: key, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            self.withLock { $0.waiters.remove(id) }?.resume(returning: false)
        }
    }
}
