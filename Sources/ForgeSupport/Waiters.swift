/// The tasks waiting on one of ForgeSupport's primitives, each with a key (a target, a place in
/// line, a predicate) and the continuation that gives it its answer, kept under the primitive's
/// lock (``LockedBox/wait(key:onCancel:decide:)``).
package struct WaitList<Key: Sendable, Answer: Sendable>: Sendable {
    package typealias Continuation = CheckedContinuation<Answer, Never>

    private var entries: [(id: UInt64, key: Key, continuation: Continuation)] = []
    private var nextID: UInt64 = 0

    package init() {}

    /// How many wait.
    package var count: Int { self.entries.count }

    package var isEmpty: Bool { self.entries.isEmpty }

    fileprivate mutating func reserve() -> UInt64 {
        self.nextID += 1
        return self.nextID
    }

    fileprivate mutating func append(_ id: UInt64, key: Key, _ continuation: Continuation) {
        self.entries.append((id, key, continuation))
    }

    fileprivate mutating func remove(_ id: UInt64) -> Continuation? {
        guard let index = self.entries.firstIndex(where: { $0.id == id }) else { return nil }
        return self.entries.remove(at: index).continuation
    }

    /// Takes out the waiters whose key passes `test`, in the order they came; resume each one,
    /// after the lock is let go.
    package mutating func removeAll(where test: (Key) -> Bool) -> [Continuation] {
        guard !self.entries.isEmpty else { return [] }
        var taken: [Continuation] = []
        self.entries.removeAll { entry in
            guard test(entry.key) else { return false }
            taken.append(entry.continuation)
            return true
        }
        return taken
    }

    /// Takes out the first waiter, if any.
    package mutating func removeFirst() -> Continuation? {
        self.entries.isEmpty ? nil : self.entries.removeFirst().continuation
    }

    /// Takes out the first waiter whose key passes `test`, if any.
    package mutating func removeFirst(where test: (Key) -> Bool) -> Continuation? {
        guard let index = self.entries.firstIndex(where: { test($0.key) }) else { return nil }
        return self.entries.remove(at: index).continuation
    }
}

/// The waiters of the primitives that answer `true` (the wait is over) or `false` (released or
/// cancelled), keyed by a number.
package typealias Waiters = WaitList<Int, Bool>

/// A primitive's state that holds its waiters.
package protocol WaitingState: SendableMetatype {
    associatedtype WaitKey: Sendable
    associatedtype WaitAnswer: Sendable
    var waiters: WaitList<WaitKey, WaitAnswer> { get set }
}

extension LockedBox where Value: WaitingState {
    /// Waits under this lock's rules: `decide` (called under the lock) answers at once, or returns
    /// `nil` to wait among the waiters with `key` until someone takes the task out of ``WaitingState/waiters``
    /// and resumes it. `decide` may be called twice (a first look before the wait is set up); it
    /// must change nothing when it returns `nil`.
    ///
    /// With `onCancel`, a task cancelled before or while it waits returns `onCancel` and leaves the
    /// waiters (`decide` is not called when it was cancelled before). Without it, cancellation is
    /// ignored: the task waits for its answer like any other (for a turn that must not be skipped,
    /// or a result that must not be lost).
    package func wait(
        key: Value.WaitKey, onCancel: Value.WaitAnswer?, decide: (inout Value) -> Value.WaitAnswer?
    ) async -> Value.WaitAnswer {
        if let onCancel, Task.isCancelled { return onCancel }
        // The common case answers at once: no continuation, no cancellation handler.
        let first = self.withLock { value -> (answer: Value.WaitAnswer?, id: UInt64) in
            if let answer = decide(&value) { return (answer, 0) }
            return (nil, value.waiters.reserve())
        }
        if let answer = first.answer { return answer }
        let id = first.id
        guard let onCancel else {
            return await withCheckedContinuation { (continuation: CheckedContinuation<Value.WaitAnswer, Never>) in
                let now: Value.WaitAnswer? = self.withLock { value in
                    if let answer = decide(&value) { return answer }
                    value.waiters.append(id, key: key, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value.WaitAnswer, Never>) in
                let now: Value.WaitAnswer? = self.withLock { value in
                    // Cancelled before this point: the handler below found no waiter to resume.
                    if Task.isCancelled { return onCancel }
                    if let answer = decide(&value) { return answer }
                    value.waiters.append(id, key: key, continuation)
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            self.withLock { $0.waiters.remove(id) }?.resume(returning: onCancel)
        }
    }
}

extension LockedBox where Value: WaitingState, Value.WaitAnswer == Bool {
    /// ``wait(key:onCancel:decide:)`` for a yes-or-no answer, `false` when the task is cancelled.
    package func wait(key: Value.WaitKey, decide: (inout Value) -> Bool?) async -> Bool {
        await self.wait(key: key, onCancel: false, decide: decide)
    }
}
