import ForgeAPNs
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLiveActivitiesPostgres
import ForgeLiveActivitiesSQLite
import ForgeTestSupport
import Foundation
import Logging
import PostgresNIO
import Testing

/// The stores every conformance test runs against.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, sqlite, postgres

    var testDescription: String { self.rawValue }

    /// Runs `body` with `count` stores on one registry: the same in-memory store, stores on one
    /// SQLite file in a temporary folder, or stores with a client each on one PostgreSQL database
    /// of a cluster started for the test.
    func withStores<Result: Sendable>(count: Int = 1, _ body: ([any LiveActivityStore]) async throws -> Result) async throws -> Result {
        switch self {
        case .memory:
            let store = InMemoryLiveActivityStore()
            return try await body(Array(repeating: store, count: count))
        case .sqlite:
            let folder = try TemporaryFolder("la-sqlite")
            defer { folder.remove() }
            let path = folder.url.appendingPathComponent("activities.sqlite").path
            return try await body(try (0..<count).map { _ in try SQLiteLiveActivityStore(path: path) })
        case .postgres:
            return try await withPostgres { _, configuration in
                try await Self.withPostgresStores(count, configuration: configuration, opened: [], body)
            }
        }
    }

    /// Opens `count` stores, each with a client of its own, nested so each client is shut down.
    private static func withPostgresStores<Result: Sendable>(
        _ count: Int, configuration: PostgresClient.Configuration, opened: [any LiveActivityStore],
        _ body: ([any LiveActivityStore]) async throws -> Result
    ) async throws -> Result {
        guard opened.count < count else { return try await body(opened) }
        return try await PostgresLiveActivityStore.withStore(configuration: configuration, logger: quietLogger) { store in
            try await Self.withPostgresStores(count, configuration: configuration, opened: opened + [store], body)
        }
    }
}

let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// Runs `body` with a PostgreSQL cluster started in a temporary folder (stopped after) and a client
/// configuration for its `postgres` database over the Unix socket.
func withPostgres<Result: Sendable>(
    _ body: (PostgresProcess, PostgresClient.Configuration) async throws -> Result
) async throws -> Result {
    let postgres = try await offPool { try PostgresProcess() }
    defer { postgres.stop() }
    let configuration = PostgresClient.Configuration(
        unixSocketPath: "\(postgres.socketDirectory)/.s.PGSQL.\(postgres.port)", username: "forge", password: nil, database: "postgres"
    )
    return try await body(postgres, configuration)
}

private let bundleID = try! APNSBundleID("com.example.shop")
private let installation = try! InstallationID("install-1")
/// A date with a whole number of milliseconds, as the durable stores keep them.
private func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

/// An activity in `state`, every optional field set (`full`) or none.
private func activity(_ id: String, state: ActivityState, full: Bool) throws -> ManagedActivity {
    var activity = ManagedActivity(
        id: try LiveActivityID(id), bundleID: bundleID, attributesType: "OrderAttributes", installation: full ? installation : nil,
        state: state, startedAt: date(1_700_000_000_123), version: 7
    )
    guard full else { return activity }
    activity.updateToken = try DeviceToken(String(repeating: "ab", count: 40))
    activity.channelID = try APNSChannelID("dHN0LTU2ZTE0MTdlLTEwYzgtNDFmZi04ZWM1LTc0NjhkMGEyNzdlMQ==")
    activity.lastContentState = Array(#"{"status":"packed","eta":20, "note":"é\u0000"}"#.utf8)
    activity.lastTimestamp = date(1_700_000_060_001)
    activity.staleDate = date(1_700_003_600_999)
    activity.held = HeldPush(
        event: "end", contentState: [0x7B, 0x7D, 0x00, 0xFF], dismissalDate: date(1_700_007_200_500), requestedAt: date(1_700_000_061_002)
    )
    activity.reportSequence = Int64.max
    activity.why = "APNs answered Unregistered for its update token"
    activity.attributes = Array(#"{"order":"17","gift":true}"#.utf8)
    activity.renewal = Renewal(replacedToken: try DeviceToken(String(repeating: "cd", count: 32)), startedAt: date(1_700_000_070_003))
    activity.renewals = 3
    // The history's words as they come: quotes, a backslash, a newline, a control character, not ASCII.
    activity.record("registered", #"started by the app, "quoted" \ back"# + "\nnext line\u{1}", at: date(1_700_000_000_001))
    activity.record("dead", "APNs answered Unregistered — 410 ✓", at: date(-62_135_596_800_000))
    activity.delivery.waiting = PendingPush(
        kind: .update, contentState: [0x7B, 0x7D, 0x00, 0xFF], staleDate: date(1_700_000_090_004),
        alert: Array(#"{"body":{"loc-key":"B","loc-args":["1"]},"title":"Goal"}"#.utf8), relevanceScore: 0.25, importance: .alerting,
        requestedAt: date(1_700_000_080_005), attempts: 2
    )
    activity.delivery.inFlight = InFlightPush(
        push: PendingPush(kind: .end, contentState: Array("{}".utf8), dismissalDate: date(1_700_000_095_006), requestedAt: date(1_700_000_081_007)),
        owner: "manager-ä1", leaseUntil: date(1_700_000_111_008), priority: 10, timestamp: date(1_700_000_081_009)
    )
    activity.delivery.lastSentAt = date(1_700_000_079_010)
    activity.delivery.dueAt = date(1_700_000_111_008)
    activity.delivery.alertingSent = [date(1_700_000_070_011), date(1_700_000_075_012)]
    (activity.delivery.requested, activity.delivery.sent, activity.delivery.superseded) = (9, 4, 3)
    (activity.delivery.downgraded, activity.delivery.failed, activity.delivery.mayHaveBeenDeliveredTwice) = (2, 1, 1)
    return activity
}

private func key(_ attributesType: String) -> PushToStartKey {
    PushToStartKey(installation: installation, bundleID: bundleID, attributesType: attributesType)
}

private func pushToStart(_ attributesType: String, full: Bool) throws -> PushToStartRecord {
    PushToStartRecord(
        key: key(attributesType), token: try DeviceToken(String(repeating: full ? "5a" : "5b", count: 32)),
        environment: full ? .production : .sandbox, confirmedAt: date(1_700_000_000_777), sequence: full ? -3 : nil,
        deadReason: full ? "BadDeviceToken" : nil, startsSent: full ? [date(1_700_000_000_001), date(-1_000_000_000_002)] : [], version: 3
    )
}

/// `record` as a store gives it back after a write that set `version`.
private func stored<Record>(_ record: Record, version: Int) -> Record where Record: VersionedRecord {
    var record = record
    record.version = version
    return record
}

private protocol VersionedRecord { var version: Int { get set } }
extension ManagedActivity: VersionedRecord {}
extension PushToStartRecord: VersionedRecord {}
extension GroupChannel: VersionedRecord {}

/// A channel id (padded base64) told apart by `number`.
private func channelID(_ number: Int) throws -> APNSChannelID {
    try APNSChannelID(Data("channel-\(number)".utf8).base64EncodedString())
}

/// Every phase a channel goes through, a create with and without the channels listed before it.
private func channelPhases() throws -> [GroupChannel.Phase] {
    [
        .creating(owner: "manager-ä1", since: date(1_700_000_000_321), listedBefore: [try channelID(1), try channelID(2)]),
        .creating(owner: "", since: date(-1_000_000_000_002), listedBefore: []),
        .open(try channelID(3)), .closing(try channelID(4)), .deleted(try channelID(5)),
    ]
}

/// A channel of `group` for `bundle` in `phase`: its pacing, counts and backoff set (`full`) or none.
private func groupChannel(_ group: String, bundle: String = "com.example.shop", phase: GroupChannel.Phase, full: Bool) throws -> GroupChannel {
    var channel = GroupChannel(group: try LiveActivityGroupID(group), bundleID: try APNSBundleID(bundle), phase: phase, version: 5)
    guard full else { return channel }
    channel.delivery.waiting = PendingPush(
        kind: .update, contentState: Array(#"{"score":"2-1","note":"é\u0000"}"#.utf8), staleDate: date(1_700_000_090_004),
        alert: Array(#"{"title":"Goal"}"#.utf8), relevanceScore: 0.75, importance: .alerting, requestedAt: date(1_700_000_080_005), attempts: 1
    )
    channel.delivery.inFlight = InFlightPush(
        push: PendingPush(kind: .update, contentState: Array(#"{"score":"1-1"}"#.utf8), requestedAt: date(1_700_000_081_007)),
        owner: "manager-2", leaseUntil: date(1_700_000_111_008), priority: 10, timestamp: date(1_700_000_081_009)
    )
    channel.delivery.lastSentAt = date(1_700_000_079_010)
    channel.delivery.dueAt = date(1_700_000_111_008)
    channel.delivery.alertingSent = [date(1_700_000_070_011)]
    (channel.delivery.requested, channel.delivery.sent, channel.delivery.superseded) = (12, 7, 4)
    (channel.delivery.downgraded, channel.delivery.failed, channel.delivery.mayHaveBeenDeliveredTwice) = (1, 3, 2)
    channel.throttled = 6
    channel.backoffUntil = date(1_700_000_112_500)
    channel.throttledInARow = 2
    return channel
}

@Suite("LiveActivityStore conformance: in memory, SQLite and PostgreSQL", .serialized, .timeLimit(.minutes(3)))
struct LiveActivityStoreConformanceTests {
    @Test("Every field round-trips: each state (dead with its reason), a held end with its dismissal date, every optional nil", arguments: StoreKind.allCases)
    func roundTrip(kind: StoreKind) async throws {
        try await kind.withStores { stores in
            let store = stores[0]
            let states: [ActivityState] = [.starting, .active, .stale, .ending, .ended, .dead(reason: "Unregistered")]
            var written: [ManagedActivity] = []
            for (index, state) in states.enumerated() {
                for full in [true, false] {
                    let activity = try activity("order-\(index)-\(full)", state: state, full: full)
                    #expect(try await store.save(activity, replacing: nil))
                    written.append(stored(activity, version: 1))
                }
            }
            for activity in written {
                #expect(try await store.activity(activity.id) == activity)
            }
            #expect(try await store.activities() == written.sorted { $0.id < $1.id })
            // A held update without a dismissal date, and an emptied field written over a set one.
            var changed = try #require(try await store.activity(try LiveActivityID("order-0-true")))
            changed.held = HeldPush(event: "update", contentState: Array("{}".utf8), dismissalDate: nil, requestedAt: date(1_700_000_000_000))
            changed.channelID = nil
            changed.lastContentState = []
            #expect(try await store.save(changed, replacing: 1))
            #expect(try await store.activity(changed.id) == stored(changed, version: 2))

            for full in [true, false] {
                let record = try pushToStart(full ? "OrderAttributes" : "DeliveryAttributes", full: full)
                #expect(try await store.save(record, replacing: nil))
                #expect(try await store.pushToStart(record.key) == stored(record, version: 1))
            }
            #expect(try await store.activity(try LiveActivityID("order-missing")) == nil)
            #expect(try await store.pushToStart(key("MissingAttributes")) == nil)
        }
    }

    @Test("An activity's group and a push-to-start token's channel capability round-trip; activities(inGroup:) is the members in id order", arguments: StoreKind.allCases)
    func groups(kind: StoreKind) async throws {
        try await kind.withStores { stores in
            let store = stores[0]
            let match = try LiveActivityGroupID("match-42")
            let other = try LiveActivityGroupID("match-43")
            var full = try activity("m-full", state: .active, full: true)
            full.group = match
            #expect(try await store.save(full, replacing: nil))
            #expect(try await store.activity(full.id) == stored(full, version: 1))
            for (id, group) in [("m-b", match), ("m-a", match), ("m-c", other), ("m-d", nil), ("M-e", match)] as [(String, LiveActivityGroupID?)] {
                var record = try activity(id, state: .active, full: false)
                record.group = group
                #expect(try await store.save(record, replacing: nil))
                #expect(try await store.activity(record.id)?.group == group)
            }
            #expect(try await store.activities(inGroup: match).map(\.id.rawValue) == ["M-e", "m-a", "m-b", "m-full"])
            #expect(try await store.activities(inGroup: match).last == stored(full, version: 1))
            #expect(try await store.activities(inGroup: other).map(\.id.rawValue) == ["m-c"])
            #expect(try await store.activities(inGroup: try LiveActivityGroupID("match-44")).isEmpty)
            // Out of one group, into another, removed: the index follows.
            var moved = try #require(try await store.activity(try LiveActivityID("m-b")))
            moved.group = nil
            #expect(try await store.save(moved, replacing: 1))
            #expect(try await store.activity(moved.id)?.group == nil)
            var joined = try #require(try await store.activity(try LiveActivityID("m-d")))
            joined.group = other
            #expect(try await store.save(joined, replacing: 1))
            try await store.removeActivity(try LiveActivityID("m-a"))
            #expect(try await store.activities(inGroup: match).map(\.id.rawValue) == ["M-e", "m-full"])
            #expect(try await store.activities(inGroup: other).map(\.id.rawValue) == ["m-c", "m-d"])

            var capable = try pushToStart("OrderAttributes", full: true)
            capable.channels = true
            #expect(try await store.save(capable, replacing: nil))
            #expect(try await store.pushToStart(capable.key) == stored(capable, version: 1))
            var older = capable
            older.channels = false
            #expect(try await store.save(older, replacing: 1))
            #expect(try await store.pushToStart(capable.key) == stored(older, version: 2))
            let plain = try pushToStart("DeliveryAttributes", full: false)
            #expect(try await store.save(plain, replacing: nil))
            #expect(try await store.pushToStart(plain.key)?.channels == false)
        }
    }

    @Test("A group channel is a compare-and-set record per group and app: new with nil, refused with a wrong version, its version counted", arguments: StoreKind.allCases)
    func groupChannelCompareAndSet(kind: StoreKind) async throws {
        try await kind.withStores { stores in
            let store = stores[0]
            let first = try groupChannel("match-42", phase: .creating(owner: "manager-1", since: date(1_700_000_000_000), listedBefore: []), full: false)
            #expect(try await store.groupChannel(first.group, bundleID: first.bundleID) == nil)
            #expect(!(try await store.save(first, replacing: 1)), "a version for a channel that does not exist")
            #expect(try await store.groupChannel(first.group, bundleID: first.bundleID) == nil)
            #expect(try await store.save(first, replacing: nil))
            #expect(try await store.groupChannel(first.group, bundleID: first.bundleID) == stored(first, version: 1))
            var opened = first
            opened.phase = .open(try channelID(7))
            #expect(!(try await store.save(opened, replacing: nil)), "nil expected on an existing channel")
            #expect(!(try await store.save(opened, replacing: 2)), "a version never written")
            #expect(!(try await store.save(opened, replacing: 0)))
            #expect(try await store.groupChannel(first.group, bundleID: first.bundleID) == stored(first, version: 1))
            #expect(try await store.save(opened, replacing: 1))
            #expect(try await store.groupChannel(first.group, bundleID: first.bundleID) == stored(opened, version: 2))
            var closing = opened
            closing.phase = .closing(try channelID(7))
            #expect(!(try await store.save(closing, replacing: 1)), "a stale version")
            #expect(try await store.save(closing, replacing: 2))
            #expect(try await store.groupChannel(first.group, bundleID: first.bundleID)?.version == 3)
            // The same group's channel for another app is another record.
            let other = try groupChannel("match-42", bundle: "com.example.tv", phase: .open(try channelID(8)), full: true)
            #expect(!(try await store.save(other, replacing: 3)))
            #expect(try await store.save(other, replacing: nil))
            #expect(try await store.groupChannel(other.group, bundleID: other.bundleID) == stored(other, version: 1))
            #expect(try await store.groupChannel(first.group, bundleID: first.bundleID) == stored(closing, version: 3))
        }
    }

    @Test("A group channel round-trips in every phase, with its pacing, counts and backoff or none", arguments: StoreKind.allCases)
    func groupChannelRoundTrip(kind: StoreKind) async throws {
        try await kind.withStores { stores in
            let store = stores[0]
            for (index, phase) in try channelPhases().enumerated() {
                for full in [true, false] {
                    let channel = try groupChannel("match-\(index)-\(full)", phase: phase, full: full)
                    #expect(try await store.save(channel, replacing: nil))
                    #expect(try await store.groupChannel(channel.group, bundleID: channel.bundleID) == stored(channel, version: 1), "\(phase) \(full)")
                    // Written over: every field from the other record's.
                    let next = try groupChannel(channel.group.rawValue, phase: phase, full: !full)
                    #expect(try await store.save(next, replacing: 1))
                    #expect(try await store.groupChannel(channel.group, bundleID: channel.bundleID) == stored(next, version: 2), "\(phase) \(!full)")
                }
            }
            // Dates finer than a millisecond: a durable store keeps the milliseconds.
            var fine = try groupChannel(
                "match-fine", phase: .creating(owner: "m", since: Date(timeIntervalSince1970: 1_700_000_000.123_456), listedBefore: []), full: true
            )
            fine.backoffUntil = Date(timeIntervalSince1970: 1_700_000_100.987_654)
            fine.delivery.dueAt = Date(timeIntervalSince1970: 1_700_000_050.000_4)
            #expect(try await store.save(fine, replacing: nil))
            let read = try #require(try await store.groupChannel(fine.group, bundleID: fine.bundleID))
            guard case .creating(_, let since, _) = read.phase else {
                Issue.record("\(read.phase) is not a create")
                return
            }
            #expect(since.storedMilliseconds == 1_700_000_000_123)
            #expect(read.backoffUntil?.storedMilliseconds == 1_700_000_100_988)
            #expect(read.delivery.dueAt?.storedMilliseconds == 1_700_000_050_000)
        }
    }

    @Test("groupChannels: every group's by group then bundle id, or one group's by bundle id", arguments: StoreKind.allCases)
    func groupChannelsOrder(kind: StoreKind) async throws {
        try await kind.withStores { stores in
            let store = stores[0]
            #expect(try await store.groupChannels(of: nil).isEmpty)
            let open = GroupChannel.Phase.open(try channelID(1))
            let groups = ["match-b", "match-a", "Match-c", "match-10"]
            let bundles = ["com.example.tv", "com.example.app", "com.Example.shop"]
            for group in groups {
                for bundle in bundles {
                    #expect(try await store.save(try groupChannel(group, bundle: bundle, phase: open, full: false), replacing: nil))
                }
            }
            let all = try await store.groupChannels(of: nil).map { "\($0.group.rawValue) \($0.bundleID.rawValue)" }
            #expect(all == [
                "Match-c com.Example.shop", "Match-c com.example.app", "Match-c com.example.tv",
                "match-10 com.Example.shop", "match-10 com.example.app", "match-10 com.example.tv",
                "match-a com.Example.shop", "match-a com.example.app", "match-a com.example.tv",
                "match-b com.Example.shop", "match-b com.example.app", "match-b com.example.tv",
            ])
            let one = try await store.groupChannels(of: try LiveActivityGroupID("match-a"))
            #expect(one.map(\.bundleID.rawValue) == ["com.Example.shop", "com.example.app", "com.example.tv"])
            #expect(one.allSatisfy { $0.group.rawValue == "match-a" && $0.version == 1 && $0.phase == open })
            #expect(try await store.groupChannels(of: try LiveActivityGroupID("match-z")).isEmpty)
        }
    }

    @Test("Compare-and-set: a stale or unknown version and a nil expected on an existing record write nothing; removal", arguments: StoreKind.allCases)
    func compareAndSet(kind: StoreKind) async throws {
        try await kind.withStores { stores in
            let store = stores[0]
            let first = try activity("order-17", state: .starting, full: false)
            #expect(try await store.save(first, replacing: nil))
            var second = first
            second.state = .active
            #expect(!(try await store.save(second, replacing: nil)), "nil expected on an existing record")
            #expect(try await store.activity(first.id) == stored(first, version: 1))
            #expect(try await store.save(second, replacing: 1))
            var stale = first
            stale.state = .ended
            #expect(!(try await store.save(stale, replacing: 1)), "a stale version")
            #expect(!(try await store.save(stale, replacing: 3)), "a version never written")
            #expect(try await store.activity(first.id) == stored(second, version: 2))
            let unknown = try activity("order-18", state: .active, full: false)
            #expect(!(try await store.save(unknown, replacing: 1)), "a version for a record that does not exist")
            #expect(try await store.activity(unknown.id) == nil)

            try await store.removeActivity(first.id)
            try await store.removeActivity(first.id)
            #expect(try await store.activity(first.id) == nil)
            #expect(try await store.activities().isEmpty)
            #expect(!(try await store.save(second, replacing: 2)), "the removed record's version")
            #expect(try await store.save(second, replacing: nil))
            #expect(try await store.activity(first.id)?.version == 1)

            let token = try pushToStart("OrderAttributes", full: false)
            #expect(try await store.save(token, replacing: nil))
            #expect(!(try await store.save(token, replacing: nil)))
            var confirmed = token
            confirmed.confirmedAt = date(1_700_000_100_000)
            #expect(try await store.save(confirmed, replacing: 1))
            #expect(!(try await store.save(token, replacing: 1)))
            #expect(try await store.pushToStart(token.key) == stored(confirmed, version: 2))
            // Another attributes type of the same installation is another record.
            let other = try pushToStart("DeliveryAttributes", full: true)
            #expect(!(try await store.save(other, replacing: 2)))
            #expect(try await store.save(other, replacing: nil))
            #expect(try await store.pushToStart(token.key)?.version == 2)
        }
    }

    @Test(
        "applyContentUpdate changes the running activities with a token as the in-memory reference does, and nothing else",
        arguments: [StoreKind.sqlite, .postgres]
    )
    func contentUpdate(kind: StoreKind) async throws {
        // Every state, with and without a token, a last timestamp behind and ahead of the clock,
        // a stale one whose new stale date is ahead and one whose is not given.
        var records: [ManagedActivity] = []
        for (index, state) in [ActivityState.starting, .active, .stale, .ending, .ended, .dead(reason: "Unregistered")].enumerated() {
            for full in [true, false] {
                var record = try activity("order-\(index)-\(full)", state: state, full: full)
                record.version = 0
                if !full { record.lastTimestamp = date(1_800_000_000_000) }
                records.append(record)
            }
        }
        let now = date(1_700_000_100_000)
        let reference = InMemoryLiveActivityStore()
        for staleDate in [date(1_700_009_000_000), nil, date(1_699_000_000_000)] as [Date?] {
            try await kind.withStores { stores in
                let store = stores[0]
                for record in records {
                    #expect(try await store.save(record, replacing: nil))
                    _ = try await reference.save(record, replacing: nil)
                }
                let ids = records.map(\.id) + [try LiveActivityID("order-unknown")]
                let update = ContentUpdate(ids: ids, contentState: Array(#"{"status":"near"}"#.utf8), now: now, staleDate: staleDate)
                let applied = try await store.applyContentUpdate(update)
                let expected = try await reference.applyContentUpdate(update)
                #expect(Set(applied.map(\.id)) == Set(expected.map(\.id)) && applied.count == expected.count)
                #expect(Set(applied.map(\.id.rawValue)) == ["order-1-true", "order-2-true"], "running, with a token")
                for change in applied {
                    let reference = try #require(expected.first { $0.id == change.id })
                    #expect(change.updateToken == reference.updateToken && change.bundleID == reference.bundleID && change.timestamp == reference.timestamp)
                }
                for record in records {
                    #expect(try await store.activity(record.id) == reference.activity(record.id), "\(kind) \(record.id), stale date \(String(describing: staleDate))")
                }
                for record in records { try await reference.removeActivity(record.id) }
            }
        }
    }

    @Test("dueActivities: those due by the date, earliest first then by id, at most the limit; earliestDue", arguments: StoreKind.allCases)
    func due(kind: StoreKind) async throws {
        try await kind.withStores { stores in
            let store = stores[0]
            #expect(try await store.earliestDue() == nil)
            let dues: [(String, Int64?)] = [("a", 5_000), ("b", nil), ("c", 1_000), ("d", 5_000), ("e", 9_000), ("f", 1_000)]
            for (id, due) in dues {
                var record = try activity(id, state: .active, full: false)
                record.delivery.dueAt = due.map(date)
                record.delivery.requested = due == nil ? 0 : 1
                #expect(try await store.save(record, replacing: nil))
            }
            #expect(try await store.earliestDue() == date(1_000))
            #expect(try await store.dueActivities(at: date(5_000), limit: 10).map(\.id.rawValue) == ["c", "f", "a", "d"])
            #expect(try await store.dueActivities(at: date(5_000), limit: 3).map(\.id.rawValue) == ["c", "f", "a"])
            #expect(try await store.dueActivities(at: date(999), limit: 10).isEmpty)
            // Nothing due any more: out of the index.
            var done = try #require(try await store.activity(try LiveActivityID("c")))
            done.delivery.dueAt = nil
            #expect(try await store.save(done, replacing: 1))
            #expect(try await store.dueActivities(at: date(1_000), limit: 10).map(\.id.rawValue) == ["f"])
        }
    }

    @Test("dueActivities after due dates moved: each activity once, at its latest due date; a removed one is gone", arguments: StoreKind.allCases)
    func dueMoved(kind: StoreKind) async throws {
        try await kind.withStores { stores in
            let store = stores[0]
            for (id, due) in [("a", Int64(1_000)), ("b", 2_000), ("c", 3_000)] {
                var record = try activity(id, state: .active, full: false)
                record.delivery.dueAt = date(due)
                #expect(try await store.save(record, replacing: nil))
            }
            // a: later, then back to where it was; b: earlier than a; c: removed.
            for (id, due) in [("a", Int64(4_000)), ("a", 1_000), ("b", 500), ("a", 1_000)] {
                var record = try #require(try await store.activity(try LiveActivityID(id)))
                record.delivery.dueAt = date(due)
                #expect(try await store.save(record, replacing: record.version))
            }
            try await store.removeActivity(try LiveActivityID("c"))
            #expect(try await store.earliestDue() == date(500))
            #expect(try await store.dueActivities(at: date(5_000), limit: 10).map(\.id.rawValue) == ["b", "a"])
            #expect(try await store.dueActivities(at: date(5_000), limit: 1).map(\.id.rawValue) == ["b"])
            // Read twice: a read takes nothing out of the index.
            #expect(try await store.dueActivities(at: date(5_000), limit: 10).map(\.id.rawValue) == ["b", "a"])
            for id in ["a", "b"] {
                var record = try #require(try await store.activity(try LiveActivityID(id)))
                record.delivery.dueAt = nil
                #expect(try await store.save(record, replacing: record.version))
            }
            #expect(try await store.earliestDue() == nil)
            #expect(try await store.dueActivities(at: date(5_000), limit: 10).isEmpty)
        }
    }

    @Test("activities() is in id order (LiveActivityID's <: by Unicode scalars, case first)", arguments: StoreKind.allCases)
    func order(kind: StoreKind) async throws {
        try await kind.withStores { stores in
            let ids = ["order-2", "Order-1", "order-10", "a", "_x", "é-1", "z", "B", "order-1", "e-2"]
            for id in ids {
                #expect(try await stores[0].save(try activity(id, state: .active, full: false), replacing: nil))
            }
            let expected = try ids.map { try LiveActivityID($0) }.sorted()
            #expect(try await stores[0].activities().map(\.id) == expected)
            #expect(expected.map(\.rawValue) == ["B", "Order-1", "_x", "a", "e-2", "order-1", "order-10", "order-2", "z", "é-1"])
        }
    }

    @Test("Two stores on one registry, 50 read-modify-writes each way at once: none is lost", arguments: StoreKind.allCases)
    func noLostUpdate(kind: StoreKind) async throws {
        try await kind.withStores(count: 2) { stores in
            let id = try LiveActivityID("counter")
            var counter = try activity(id.rawValue, state: .active, full: false)
            counter.reportSequence = 0
            #expect(try await stores[0].save(counter, replacing: nil))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    let store = stores[index % 2]
                    group.addTask {
                        while true {
                            var current = try #require(try await store.activity(id))
                            let version = current.version
                            current.reportSequence = (current.reportSequence ?? 0) + 1
                            if try await store.save(current, replacing: version) { return }
                        }
                    }
                }
                try await group.waitForAll()
            }
            let final = try #require(try await stores[1].activity(id))
            #expect(final.reportSequence == 50 && final.version == 51)
        }
    }

    @Test("Two managers on one registry start the same 50 ids at once: exactly one start request per id", arguments: StoreKind.allCases)
    func racingManagers(kind: StoreKind) async throws {
        let fixture = try InProcess()
        try await kind.withStores(count: 2) { stores in
            // 50 starts on one install: a start budget that takes them all (the race is the point here).
            var configuration = LiveActivityManager.Configuration()
            configuration.startBudget = UpdateBudget(count: 100, window: .seconds(3600))
            let managers = stores.map { LiveActivityManager(client: fixture.client, store: $0, clock: fixture.clock, configuration: configuration) }
            try await managers[0].report(.pushToStartToken(
                key("OrderAttributes"), token: try DeviceToken(String(repeating: "5a", count: 32)), sequence: nil, environment: .sandbox
            ))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for round in 0..<50 {
                    for manager in managers {
                        group.addTask {
                            try await manager.start(
                                activity: try LiveActivityID("order-\(round)"), installation: installation, bundleID: bundleID,
                                attributesType: "OrderAttributes", attributes: OrderAttributes(order: "\(round)"),
                                contentState: OrderState(status: "new", eta: 5),
                                alert: APNSLiveActivityAlert(title: "Order", body: .plain("\(round)"))
                            )
                        }
                    }
                }
                try await group.waitForAll()
            }
            let collapseIDs = fixture.sent.compactMap { request in request.headers.first { $0.name == "apns-collapse-id" }?.value }
            #expect(collapseIDs.count == 50 && Set(collapseIDs).count == 50, "\(collapseIDs.sorted())")
            #expect(try await stores[1].activities().count == 50)
        }
    }
}
