import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLiveActivitiesPostgres
import ForgeLiveActivitiesSQLite
import ForgeTestSupport
import Foundation
import GRDB
import Testing

/// Whether `error` is a store error whose rule says every part of `parts`.
private func isStoreError(_ error: any Error, saying parts: String...) -> Bool {
    guard let error = error as? LiveActivityError, error.code == .store else { return false }
    return parts.allSatisfy { error.rule.contains($0) }
}

/// What schema version 4 added to an SQLite store, dropped (SQLite drops no indexed column: the index first).
private let schema4Additions = """
    DROP INDEX live_activities_group; ALTER TABLE live_activities DROP COLUMN group_id;
    ALTER TABLE live_activity_push_to_start DROP COLUMN channels; DROP TABLE live_activity_group_channels;
    """

@Suite("SQLiteLiveActivityStore: files that are not its own, a newer schema, a reopened file", .timeLimit(.minutes(1)))
struct SQLiteLiveActivityStoreFileTests {
    @Test("Another SQLite database, another application's file, or a file that is not SQLite: refused naming the file, left as it was")
    func foreignFiles() throws {
        let folder = try TemporaryFolder("la-foreign")
        defer { folder.remove() }
        let notes = folder.url.appendingPathComponent("notes.sqlite").path
        try DatabaseQueue(path: notes).write { db in
            try db.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('keep me')")
        }
        let other = folder.url.appendingPathComponent("other.sqlite").path
        try DatabaseQueue(path: other).writeWithoutTransaction { db in try db.execute(sql: "PRAGMA application_id = 1234") }
        let text = try folder.file("activities.txt", contents: String(repeating: "order-17 is not a database\n", count: 200))
        let cases = [(notes, "an SQLite database of something else"), (other, "application_id 1234"), (text, "not an SQLite database")]
        for (path, why) in cases {
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect { try SQLiteLiveActivityStore(path: path) } throws: { error in
                isStoreError(error, saying: "'\(path)' is not a Live Activity store", why, "left as it was")
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "\(path) changed")
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        }
    }

    @Test("A store of a newer schema is refused naming both versions, and left as it was; an older build's file is reopened with its data")
    func schemaVersion() async throws {
        let folder = try TemporaryFolder("la-schema")
        defer { folder.remove() }
        let path = folder.url.appendingPathComponent("activities.sqlite").path
        let activity = ManagedActivity(
            id: try LiveActivityID("order-17"), bundleID: try APNSBundleID("com.example.shop"), attributesType: "OrderAttributes",
            installation: nil, state: .active, startedAt: Date(timeIntervalSince1970: 1_700_000_000)
        )
        #expect(try await SQLiteLiveActivityStore(path: path).save(activity, replacing: nil))
        // Reopened (a restart): the record is there.
        #expect(try await SQLiteLiveActivityStore(path: path).activity(activity.id)?.version == 1)

        let newer = SQLiteLiveActivityStore.schemaVersion + 1
        try await DatabaseQueue(path: path).writeWithoutTransaction { db in try db.execute(sql: "PRAGMA user_version = \(newer)") }
        #expect { try SQLiteLiveActivityStore(path: path) } throws: { error in
            isStoreError(error, saying: "'\(path)'", "schema version \(newer)", "this build's \(SQLiteLiveActivityStore.schemaVersion)")
        }
        let version = try await DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        #expect(version == newer)
    }

    @Test("A file of schema version 1 (before the history and the delivery) is brought up to date with its records, which then keep both")
    func migratesVersion1() async throws {
        let folder = try TemporaryFolder("la-schema")
        defer { folder.remove() }
        let path = folder.url.appendingPathComponent("activities.sqlite").path
        var activity = ManagedActivity(
            id: try LiveActivityID("order-17"), bundleID: try APNSBundleID("com.example.shop"), attributesType: "OrderAttributes",
            installation: nil, state: .active, startedAt: Date(timeIntervalSince1970: 1_700_000_000)
        )
        #expect(try await SQLiteLiveActivityStore(path: path).save(activity, replacing: nil))
        // The file as the first schema had it: no history, delivery, due_at_ms or group_id column, no
        // channels column or group channels table, user_version 1.
        try await DatabaseQueue(path: path).writeWithoutTransaction { db in
            try db.execute(
                sql: """
                    \(schema4Additions)
                    DROP INDEX live_activities_due; ALTER TABLE live_activities DROP COLUMN due_at_ms;
                    ALTER TABLE live_activities DROP COLUMN delivery; ALTER TABLE live_activities DROP COLUMN history; ALTER TABLE live_activity_push_to_start DROP COLUMN starts_sent_ms;
                    PRAGMA user_version = 1
                    """
            )
        }
        let store = try SQLiteLiveActivityStore(path: path)
        let read = try #require(try await store.activity(activity.id))
        #expect(read.version == 1 && read.history.isEmpty)
        activity.record("update_token", "0123abcd…", at: Date(timeIntervalSince1970: 1_700_000_060))
        activity.record("dead", "APNs said \"Unregistered\"\n\\ ✓\u{7}", at: Date(timeIntervalSince1970: 1_700_000_061.5))
        activity.delivery.waiting = PendingPush(kind: .update, contentState: Array("{}".utf8), requestedAt: Date(timeIntervalSince1970: 1_700_000_062))
        activity.delivery.dueAt = Date(timeIntervalSince1970: 1_700_000_062)
        #expect(try await store.save(activity, replacing: 1))
        #expect(try await store.activity(activity.id)?.history == activity.history)
        #expect(try await store.activity(activity.id)?.delivery == activity.delivery)
        #expect(try await store.dueActivities(at: Date(timeIntervalSince1970: 1_700_000_063), limit: 5).map(\.id) == [activity.id])
        let ledger = PushToStartRecord(
            key: PushToStartKey(installation: try InstallationID("i-1"), bundleID: try APNSBundleID("com.example.shop"), attributesType: "OrderAttributes"),
            token: try DeviceToken(String(repeating: "5a", count: 32)), environment: .sandbox, confirmedAt: Date(timeIntervalSince1970: 1_700_000_000),
            sequence: nil, startsSent: [Date(timeIntervalSince1970: 1_700_000_001)]
        )
        #expect(try await store.save(ledger, replacing: nil))
        #expect(try await store.pushToStart(ledger.key)?.startsSent == ledger.startsSent)
        // The column is JSON as Foundation reads it.
        let column = try await DatabaseQueue(path: path).read { db in try Data.fetchOne(db, sql: "SELECT history FROM live_activities") }
        let bytes = try #require(column)
        let parsed = try #require(try JSONSerialization.jsonObject(with: bytes) as? [[String: Any]])
        #expect(parsed.map { $0["event"] as? String } == ["update_token", "dead"])
        #expect(parsed.last?["detail"] as? String == "APNs said \"Unregistered\"\n\\ ✓\u{7}")
        #expect(parsed.last?["at_ms"] as? Int == 1_700_000_061_500)
        let version = try await DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "PRAGMA user_version") }
        #expect(version == SQLiteLiveActivityStore.schemaVersion)
    }

    @Test("A file of schema version 3 (before groups) gets the group column and index, the channels column and the channels table, and keeps its rows")
    func migratesVersion3() async throws {
        let folder = try TemporaryFolder("la-schema")
        defer { folder.remove() }
        let path = folder.url.appendingPathComponent("activities.sqlite").path
        var activity = ManagedActivity(
            id: try LiveActivityID("order-17"), bundleID: try APNSBundleID("com.example.shop"), attributesType: "OrderAttributes",
            installation: nil, state: .active, startedAt: Date(timeIntervalSince1970: 1_700_000_000)
        )
        let token = PushToStartRecord(
            key: PushToStartKey(installation: try InstallationID("i-1"), bundleID: try APNSBundleID("com.example.shop"), attributesType: "OrderAttributes"),
            token: try DeviceToken(String(repeating: "5a", count: 32)), environment: .sandbox, confirmedAt: Date(timeIntervalSince1970: 1_700_000_000),
            sequence: nil
        )
        do {
            let store = try SQLiteLiveActivityStore(path: path)
            #expect(try await store.save(activity, replacing: nil))
            #expect(try await store.save(token, replacing: nil))
        }
        // The file as schema version 3 had it.
        try await DatabaseQueue(path: path).writeWithoutTransaction { db in
            try db.execute(sql: "\(schema4Additions) PRAGMA user_version = 3")
        }
        let store = try SQLiteLiveActivityStore(path: path)
        let read = try #require(try await store.activity(activity.id))
        #expect(read.version == 1 && read.group == nil)
        #expect(try await store.pushToStart(token.key)?.channels == false)
        #expect(try await store.pushToStart(token.key)?.version == 1)
        let schema = try await DatabaseQueue(path: path).read { db in
            (
                try Int.fetchOne(db, sql: "PRAGMA user_version"),
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE name LIKE 'live_activit%' ORDER BY name")
            )
        }
        #expect(schema.0 == 4)
        #expect(schema.1.contains("live_activities_group") && schema.1.contains("live_activity_group_channels"), "\(schema.1)")

        let match = try LiveActivityGroupID("match-42")
        activity.group = match
        #expect(try await store.save(activity, replacing: 1))
        #expect(try await store.activities(inGroup: match).map(\.id) == [activity.id])
        var capable = token
        capable.channels = true
        #expect(try await store.save(capable, replacing: 1))
        #expect(try await store.pushToStart(token.key)?.channels == true)
        let channel = GroupChannel(group: match, bundleID: activity.bundleID, phase: .open(try APNSChannelID("Y2hhbm5lbC0x")))
        #expect(try await store.save(channel, replacing: nil))
        #expect(try await store.groupChannels(of: nil).map(\.phase) == [channel.phase])
        // A plain query sees the query plan use the group index.
        let plan = try await DatabaseQueue(path: path).read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT id FROM live_activities WHERE group_id = 'match-42' ORDER BY id")
                .map { $0["detail"] as String }
        }
        #expect(plan.joined().contains("live_activities_group"), "\(plan)")
    }

    @Test("A store opened with durability normal is the same WAL file: its saves compare and set, and a store with full reads them")
    func normalDurability() async throws {
        let folder = try TemporaryFolder("la-normal")
        defer { folder.remove() }
        let path = folder.url.appendingPathComponent("activities.sqlite").path
        let activity = ManagedActivity(
            id: try LiveActivityID("order-17"), bundleID: try APNSBundleID("com.example.shop"), attributesType: "OrderAttributes",
            installation: nil, state: .active, startedAt: Date(timeIntervalSince1970: 1_700_000_000)
        )
        let store = try SQLiteLiveActivityStore(path: path, durability: .normal)
        #expect(try await store.save(activity, replacing: nil))
        #expect(try await !store.save(activity, replacing: nil))
        #expect(try await SQLiteLiveActivityStore(path: path).activity(activity.id)?.version == 1)
        let mode = try await DatabaseQueue(path: path).read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
    }
}

/// What schema version 4 added to a PostgreSQL store, dropped (the group index goes with its column).
private let postgresSchema4Additions =
    "ALTER TABLE live_activities DROP COLUMN group_id; ALTER TABLE live_activity_push_to_start DROP COLUMN channels; "
    + "DROP TABLE live_activity_group_channels; "

@Suite("PostgresLiveActivityStore: a newer schema", .serialized, .timeLimit(.minutes(2)))
struct PostgresLiveActivityStoreSchemaTests {
    @Test("A database whose Live Activity schema is newer than the build's is refused naming both versions")
    func newerSchema() async throws {
        try await withPostgres { postgres, configuration in
            try await PostgresLiveActivityStore.withStore(configuration: configuration, logger: quietLogger) { _ in }
            let newer = PostgresLiveActivityStore.schemaVersion + 1
            _ = try await offPool { try postgres.psql("INSERT INTO live_activity_schema (version) VALUES (\(newer))") }
            await #expect {
                try await PostgresLiveActivityStore.withStore(configuration: configuration, logger: quietLogger) { _ in }
            } throws: { error in
                isStoreError(error, saying: "schema is version \(newer)", "this build's \(PostgresLiveActivityStore.schemaVersion)")
            }
        }
    }

    @Test("A database of schema version 1 (before the history and the delivery) is brought up to date with its records")
    func migratesVersion1() async throws {
        try await withPostgres { postgres, configuration in
            let first = ManagedActivity(
                id: try LiveActivityID("order-17"), bundleID: try APNSBundleID("com.example.shop"), attributesType: "OrderAttributes",
                installation: nil, state: .active, startedAt: Date(timeIntervalSince1970: 1_700_000_000)
            )
            try await PostgresLiveActivityStore.withStore(configuration: configuration, logger: quietLogger) { store async throws in
                #expect(try await store.save(first, replacing: nil))
            }
            _ = try await offPool {
                try postgres.psql(
                    "ALTER TABLE live_activities DROP COLUMN history, DROP COLUMN delivery, DROP COLUMN due_at_ms; "
                        + "ALTER TABLE live_activity_push_to_start DROP COLUMN starts_sent_ms; \(postgresSchema4Additions)"
                        + "DELETE FROM live_activity_schema WHERE version > 1"
                )
            }
            var later = first
            later.record("update_token", "0123abcd…", at: Date(timeIntervalSince1970: 1_700_000_060))
            later.delivery.waiting = PendingPush(kind: .end, contentState: Array("{}".utf8), requestedAt: Date(timeIntervalSince1970: 1_700_000_061))
            later.delivery.dueAt = Date(timeIntervalSince1970: 1_700_000_061)
            let activity = later
            try await PostgresLiveActivityStore.withStore(configuration: configuration, logger: quietLogger) { store async throws in
                #expect(try await store.activity(activity.id)?.history == [])
                #expect(try await store.save(activity, replacing: 1))
                #expect(try await store.activity(activity.id)?.history == activity.history)
                #expect(try await store.activity(activity.id)?.delivery == activity.delivery)
                #expect(try await store.earliestDue() == activity.delivery.dueAt)
            }
        }
    }

    @Test("A database of schema version 3 (before groups) gets the group column and index, the channels column and the channels table, and keeps its rows")
    func migratesVersion3() async throws {
        try await withPostgres { postgres, configuration in
            let first = ManagedActivity(
                id: try LiveActivityID("order-17"), bundleID: try APNSBundleID("com.example.shop"), attributesType: "OrderAttributes",
                installation: nil, state: .active, startedAt: Date(timeIntervalSince1970: 1_700_000_000)
            )
            let token = PushToStartRecord(
                key: PushToStartKey(installation: try InstallationID("i-1"), bundleID: try APNSBundleID("com.example.shop"), attributesType: "OrderAttributes"),
                token: try DeviceToken(String(repeating: "5a", count: 32)), environment: .sandbox, confirmedAt: Date(timeIntervalSince1970: 1_700_000_000),
                sequence: nil
            )
            try await PostgresLiveActivityStore.withStore(configuration: configuration, logger: quietLogger) { store async throws in
                #expect(try await store.save(first, replacing: nil))
                #expect(try await store.save(token, replacing: nil))
            }
            _ = try await offPool { try postgres.psql("\(postgresSchema4Additions) DELETE FROM live_activity_schema WHERE version > 3") }
            var grouped = first
            grouped.group = try LiveActivityGroupID("match-42")
            let activity = grouped
            let channel = GroupChannel(group: try LiveActivityGroupID("match-42"), bundleID: first.bundleID, phase: .open(try APNSChannelID("Y2hhbm5lbC0x")))
            try await PostgresLiveActivityStore.withStore(configuration: configuration, logger: quietLogger) { store async throws in
                let read = try #require(try await store.activity(first.id))
                #expect(read.version == 1 && read.group == nil)
                #expect(try await store.pushToStart(token.key)?.channels == false)
                #expect(try await store.save(activity, replacing: 1))
                #expect(try await store.activities(inGroup: try LiveActivityGroupID("match-42")).map(\.id) == [first.id])
                var capable = try #require(try await store.pushToStart(token.key))
                capable.channels = true
                #expect(try await store.save(capable, replacing: 1))
                #expect(try await store.pushToStart(token.key)?.channels == true)
                #expect(try await store.save(channel, replacing: nil))
                #expect(try await store.groupChannels(of: nil).map(\.phase) == [channel.phase])
            }
            let schema = try await offPool {
                (
                    try postgres.psql("SELECT max(version) FROM live_activity_schema"),
                    try postgres.psql("SELECT indexname FROM pg_indexes WHERE indexname = 'live_activities_group'")
                )
            }
            #expect(schema.0 == "4" && schema.1 == "live_activities_group", "\(schema)")
        }
    }
}
