internal import ForgeSupport

/// The pending time-limited work of one kind (service extensions, background budgets), with the
/// closure that ends each when its time runs out.
final class ExpiryRegistry: Sendable {
    private struct State {
        var nextID = 0
        var pending: [Int: @Sendable () -> Void] = [:]
    }

    private let state = LockedBox(State())

    init() {}

    /// Registers work; `expire` runs if its time runs out before ``remove(_:)``.
    func register(_ expire: @escaping @Sendable () -> Void) -> Int {
        self.state.withLock { state in
            state.nextID += 1
            state.pending[state.nextID] = expire
            return state.nextID
        }
    }

    /// Forgets finished work.
    func remove(_ id: Int) {
        _ = self.state.withLock { $0.pending.removeValue(forKey: id) }
    }

    /// Ends one piece of work now, if it is still pending.
    func expire(_ id: Int) {
        let expire = self.state.withLock { $0.pending.removeValue(forKey: id) }
        expire?()
    }

    /// Ends all pending work now, oldest first.
    /// - Returns: how many were pending.
    func expireAll() -> Int {
        let all = self.state.withLock { state -> [@Sendable () -> Void] in
            defer { state.pending = [:] }
            return state.pending.sorted { $0.key < $1.key }.map(\.value)
        }
        all.forEach { $0() }
        return all.count
    }

    /// How many are pending.
    var count: Int { self.state.withLock { $0.pending.count } }
}
