internal import ForgeSupport

/// Where the registry lives: activities by id and push-to-start tokens by key, each record with a
/// version that every write compares and increases, so that two managers on one store never both
/// apply a change made from the same reading (the second sees `false` and reads again).
public protocol LiveActivityStore: Sendable {
    /// The activity with `id`, if any.
    func activity(_ id: LiveActivityID) async throws -> ManagedActivity?
    /// Writes `activity` when the stored record's version is `expected` (`nil`: when there is none),
    /// with version `expected + 1` (1 for a new one); `false`, writing nothing, otherwise.
    func save(_ activity: ManagedActivity, replacing expected: Int?) async throws -> Bool
    /// Removes the activity with `id` (nothing when there is none).
    func removeActivity(_ id: LiveActivityID) async throws
    /// Every activity, in id order.
    func activities() async throws -> [ManagedActivity]
    /// The push-to-start token for `key`, if any.
    func pushToStart(_ key: PushToStartKey) async throws -> PushToStartRecord?
    /// Writes `record` under the same rule as the activity's `save(_:replacing:)`.
    func save(_ record: PushToStartRecord, replacing expected: Int?) async throws -> Bool
    /// The activities with these ids that exist, in any order (a bulk update reads them at once).
    func activities(_ ids: [LiveActivityID]) async throws -> [ManagedActivity]
    /// Each write as `save(_:replacing:)` makes it, each its own compare-and-set; whether each was
    /// written, in order. A store may commit them together.
    func save(_ writes: [(activity: ManagedActivity, replacing: Int?)]) async throws -> [Bool]
}

extension LiveActivityStore {
    /// One read an id, in order.
    public func activities(_ ids: [LiveActivityID]) async throws -> [ManagedActivity] {
        var found: [ManagedActivity] = []
        for id in ids {
            if let activity = try await self.activity(id) { found.append(activity) }
        }
        return found
    }

    /// One save a write, in order.
    public func save(_ writes: [(activity: ManagedActivity, replacing: Int?)]) async throws -> [Bool] {
        var written: [Bool] = []
        written.reserveCapacity(writes.count)
        for write in writes { written.append(try await self.save(write.activity, replacing: write.replacing)) }
        return written
    }
}

/// A store in the process's memory: for tests, and for a single process that can lose its
/// registry on restart.
public final class InMemoryLiveActivityStore: LiveActivityStore {
    private struct State {
        var activities: [LiveActivityID: ManagedActivity] = [:]
        var pushToStart: [PushToStartKey: PushToStartRecord] = [:]
    }

    private let state = LockedBox(State())

    public init() {}

    public func activity(_ id: LiveActivityID) async throws -> ManagedActivity? {
        self.state.withLock { $0.activities[id] }
    }

    public func save(_ activity: ManagedActivity, replacing expected: Int?) async throws -> Bool {
        self.state.withLock { state in
            guard state.activities[activity.id]?.version == expected else { return false }
            var stored = activity
            stored.version = (expected ?? 0) + 1
            state.activities[activity.id] = stored
            return true
        }
    }

    public func removeActivity(_ id: LiveActivityID) async throws {
        _ = self.state.withLock { $0.activities.removeValue(forKey: id) }
    }

    public func activities() async throws -> [ManagedActivity] {
        self.state.withLock { Array($0.activities.values) }.sorted { $0.id < $1.id }
    }

    public func activities(_ ids: [LiveActivityID]) async throws -> [ManagedActivity] {
        self.state.withLock { state in ids.compactMap { state.activities[$0] } }
    }

    public func save(_ writes: [(activity: ManagedActivity, replacing: Int?)]) async throws -> [Bool] {
        self.state.withLock { state in
            writes.map { write in
                guard state.activities[write.activity.id]?.version == write.replacing else { return false }
                var stored = write.activity
                stored.version = (write.replacing ?? 0) + 1
                state.activities[stored.id] = stored
                return true
            }
        }
    }

    public func pushToStart(_ key: PushToStartKey) async throws -> PushToStartRecord? {
        self.state.withLock { $0.pushToStart[key] }
    }

    public func save(_ record: PushToStartRecord, replacing expected: Int?) async throws -> Bool {
        self.state.withLock { state in
            guard state.pushToStart[record.key]?.version == expected else { return false }
            var stored = record
            stored.version = (expected ?? 0) + 1
            state.pushToStart[record.key] = stored
            return true
        }
    }
}
