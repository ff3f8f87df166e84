internal import ForgeSupport
public import struct Foundation.Date
public import ForgeAPNsCore

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
    /// Applies one content state to those of `update.ids` that are running with an update token
    /// (state `active` or `stale`), in as few statements as the store can: for each, the content
    /// state, a timestamp of `update.now` or its last one if later, the stale date when one is given
    /// (a `stale` one whose stale date is then ahead becomes `active`), and its version plus one.
    /// Returns those it changed; the others (unknown, not running, no token yet) it leaves as they
    /// are, and the manager updates them one by one.
    ///
    /// A store that has no faster way returns `[]` (the default), and every activity is updated on
    /// its own.
    func applyContentUpdate(_ update: ContentUpdate) async throws -> [AppliedContentUpdate]
    /// The activities whose ``ActivityDelivery/dueAt`` is at or before `date`, earliest first, at
    /// most `limit`: those with a requested push to send, or a lapsed lease to take over. A durable
    /// store keeps `dueAt` in an indexed column; the default reads every activity.
    func dueActivities(at date: Date, limit: Int) async throws -> [ManagedActivity]
    /// The earliest ``ActivityDelivery/dueAt`` of all activities, `nil` when nothing waits.
    func earliestDue() async throws -> Date?
    /// The activities of `group`, in id order. A durable store keeps the group in an indexed
    /// column; the default reads every activity.
    func activities(inGroup group: LiveActivityGroupID) async throws -> [ManagedActivity]
    /// The channel of `group` for `bundleID`, if any.
    func groupChannel(_ group: LiveActivityGroupID, bundleID: APNSBundleID) async throws -> GroupChannel?
    /// Writes `channel` under the same rule as the activity's `save(_:replacing:)`.
    func save(_ channel: GroupChannel, replacing expected: Int?) async throws -> Bool
    /// The channels of `group` (every group's when `nil`), by group then bundle id. The manager
    /// reads them all on each delivery pass: an app has at most 10,000 channels.
    func groupChannels(of group: LiveActivityGroupID?) async throws -> [GroupChannel]
}

/// One content state for many activities (``LiveActivityStore/applyContentUpdate(_:)``).
public struct ContentUpdate: Sendable {
    /// The activities, each once.
    public var ids: [LiveActivityID]
    /// The content state, as JSON.
    public var contentState: [UInt8]
    /// The manager's clock: the timestamp, unless an activity's last one is later.
    public var now: Date
    /// The new stale date, if any.
    public var staleDate: Date?

    public init(ids: [LiveActivityID], contentState: [UInt8], now: Date, staleDate: Date?) {
        self.ids = ids
        self.contentState = contentState
        self.now = now
        self.staleDate = staleDate
    }
}

/// An activity ``LiveActivityStore/applyContentUpdate(_:)`` changed: where its push goes.
public struct AppliedContentUpdate: Sendable {
    public var id: LiveActivityID
    public var updateToken: DeviceToken
    public var bundleID: APNSBundleID
    /// The timestamp it now has: its push's `timestamp`.
    public var timestamp: Date

    public init(id: LiveActivityID, updateToken: DeviceToken, bundleID: APNSBundleID, timestamp: Date) {
        self.id = id
        self.updateToken = updateToken
        self.bundleID = bundleID
        self.timestamp = timestamp
    }
}

extension LiveActivityStore {
    /// None: the manager updates every activity on its own.
    public func applyContentUpdate(_ update: ContentUpdate) async throws -> [AppliedContentUpdate] { [] }

    /// Every activity read and filtered: correct for any store, and as slow as reading them all.
    public func dueActivities(at date: Date, limit: Int) async throws -> [ManagedActivity] {
        Array(try await self.activities().dueActivities(at: date, limit: limit))
    }

    /// Every activity read.
    public func earliestDue() async throws -> Date? {
        try await self.activities().compactMap(\.delivery.dueAt).min()
    }

    /// Every activity read and filtered.
    public func activities(inGroup group: LiveActivityGroupID) async throws -> [ManagedActivity] {
        try await self.activities().filter { $0.group == group }
    }

    /// None: a store that keeps no channels (its groups reach every member through its token).
    public func groupChannel(_ group: LiveActivityGroupID, bundleID: APNSBundleID) async throws -> GroupChannel? { nil }

    /// Refused: this store keeps no channels.
    public func save(_ channel: GroupChannel, replacing expected: Int?) async throws -> Bool {
        throw LiveActivityError(.store, rule: "\(Self.self) keeps no group channels: its groups reach every member through its token")
    }

    /// None.
    public func groupChannels(of group: LiveActivityGroupID?) async throws -> [GroupChannel] { [] }
}

extension Sequence<ManagedActivity> {
    /// Those due at `date`, earliest first (then by id), at most `limit`.
    func dueActivities(at date: Date, limit: Int) -> ArraySlice<ManagedActivity> {
        self.filter { ($0.delivery.dueAt ?? .distantFuture) <= date }
            .sorted { ($0.delivery.dueAt!, $0.id) < ($1.delivery.dueAt!, $1.id) }
            .prefix(Swift.max(0, limit))
    }
}

extension ManagedActivity {
    /// ``LiveActivityStore/applyContentUpdate(_:)`` on one record: whether it applies, and the record after.
    mutating func applyContentUpdate(_ update: ContentUpdate) -> AppliedContentUpdate? {
        guard self.state == .active || self.state == .stale, let token = self.updateToken else { return nil }
        let timestamp = max(update.now, self.lastTimestamp ?? update.now)
        self.lastContentState = update.contentState
        self.lastTimestamp = timestamp
        if let staleDate = update.staleDate { self.staleDate = staleDate }
        if self.state == .stale, (self.staleDate ?? .distantPast) > update.now { self.state = .active }
        self.version += 1
        return AppliedContentUpdate(id: self.id, updateToken: token, bundleID: self.bundleID, timestamp: timestamp)
    }
}

/// A channel's key in a store.
struct GroupChannelKey: Hashable {
    var group: LiveActivityGroupID
    var bundleID: APNSBundleID
}

/// A store in the process's memory: for tests, and for a single process that can lose its
/// registry on restart. Due activities are found through an index of their due dates, not by
/// reading every activity.
public final class InMemoryLiveActivityStore: LiveActivityStore {
    private struct State {
        var activities: [LiveActivityID: ManagedActivity] = [:]
        var pushToStart: [PushToStartKey: PushToStartRecord] = [:]
        var channels: [GroupChannelKey: GroupChannel] = [:]
        var due = DueIndex()

        /// Whether `entry` still says when its activity is due.
        func isCurrent(_ entry: DueIndex.Entry) -> Bool {
            self.activities[entry.id]?.delivery.dueAt == entry.dueAt
        }

        /// Indexes `activity`'s due date when it changed from `previous`; rebuilds the index when
        /// stale entries outnumber the activities.
        mutating func index(_ activity: ManagedActivity, previous: Date?) {
            guard let dueAt = activity.delivery.dueAt, dueAt != previous else { return }
            self.due.insert(DueIndex.Entry(dueAt: dueAt, id: activity.id))
            if self.due.count > 2 * self.activities.count + 64 {
                self.due.rebuild(self.activities.values.compactMap { activity in
                    activity.delivery.dueAt.map { DueIndex.Entry(dueAt: $0, id: activity.id) }
                })
            }
        }
    }

    private let state = LockedBox(State())

    public init() {}

    public func activity(_ id: LiveActivityID) async throws -> ManagedActivity? {
        self.state.withLock { $0.activities[id] }
    }

    public func save(_ activity: ManagedActivity, replacing expected: Int?) async throws -> Bool {
        self.state.withLock { state in
            let previous = state.activities[activity.id]
            guard previous?.version == expected else { return false }
            var stored = activity
            stored.version = (expected ?? 0) + 1
            state.activities[activity.id] = stored
            state.index(stored, previous: previous?.delivery.dueAt)
            return true
        }
    }

    public func removeActivity(_ id: LiveActivityID) async throws {
        _ = self.state.withLock { $0.activities.removeValue(forKey: id) }
    }

    public func activities() async throws -> [ManagedActivity] {
        self.state.withLock { Array($0.activities.values) }.sorted { $0.id < $1.id }
    }

    public func applyContentUpdate(_ update: ContentUpdate) async throws -> [AppliedContentUpdate] {
        self.state.withLock { state in
            update.ids.compactMap { id in state.activities[id]?.applyContentUpdate(update) }
        }
    }

    /// The index's entries in order, stale ones dropped, until `limit` or one due after `date`;
    /// the entries found are put back.
    public func dueActivities(at date: Date, limit: Int) async throws -> [ManagedActivity] {
        self.state.withLock { state in
            var found: [ManagedActivity] = []
            var seen = Set<LiveActivityID>()
            while found.count < limit, let first = state.due.first, first.dueAt <= date {
                state.due.removeFirst()
                // A stale entry, or a second one of the same due date (the date changed and came back).
                guard state.isCurrent(first), seen.insert(first.id).inserted, let activity = state.activities[first.id] else { continue }
                found.append(activity)
            }
            for activity in found { state.due.insert(DueIndex.Entry(dueAt: activity.delivery.dueAt!, id: activity.id)) }
            return found
        }
    }

    public func earliestDue() async throws -> Date? {
        self.state.withLock { state in
            while let first = state.due.first {
                if state.isCurrent(first) { return first.dueAt }
                state.due.removeFirst()
            }
            return nil
        }
    }

    public func pushToStart(_ key: PushToStartKey) async throws -> PushToStartRecord? {
        self.state.withLock { $0.pushToStart[key] }
    }

    public func activities(inGroup group: LiveActivityGroupID) async throws -> [ManagedActivity] {
        self.state.withLock { $0.activities.values.filter { $0.group == group } }.sorted { $0.id < $1.id }
    }

    public func groupChannel(_ group: LiveActivityGroupID, bundleID: APNSBundleID) async throws -> GroupChannel? {
        self.state.withLock { $0.channels[GroupChannelKey(group: group, bundleID: bundleID)] }
    }

    public func save(_ channel: GroupChannel, replacing expected: Int?) async throws -> Bool {
        self.state.withLock { state in
            let key = GroupChannelKey(group: channel.group, bundleID: channel.bundleID)
            guard state.channels[key]?.version == expected else { return false }
            var stored = channel
            stored.version = (expected ?? 0) + 1
            state.channels[key] = stored
            return true
        }
    }

    public func groupChannels(of group: LiveActivityGroupID?) async throws -> [GroupChannel] {
        self.state.withLock { state in state.channels.values.filter { group == nil || $0.group == group } }
            .sorted { ($0.group, $0.bundleID.rawValue) < ($1.group, $1.bundleID.rawValue) }
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
