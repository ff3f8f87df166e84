internal import ForgeAPNsCore
public import ForgeLiveActivities
internal import ForgeSupport
public import Foundation
internal import GRDB

/// A ``LiveActivityStore`` in one SQLite file, for a backend that runs as one process: the registry
/// survives restarts and crashes.
///
/// The file is in WAL mode with `synchronous = FULL` (``Durability/full``, the default): every save
/// is one transaction, committed to disk before it returns, and a process killed at any point leaves
/// the last committed state. With ``Durability/normal`` a save does not wait for the disk (no
/// `fsync` per commit), so a crash of the process still loses nothing, but a power loss or an
/// operating system crash may roll back the last saves (SQLite's "Write-Ahead Logging" and
/// "PRAGMA synchronous").
/// Each save is a compare-and-set in SQL: `UPDATE … WHERE id = ? AND version = ?` for a stored
/// record, `INSERT … ON CONFLICT DO NOTHING` for a new one, so stores on one file (or a reader
/// such as the `sqlite3` shell) never lose a write.
///
/// Tables:
/// - `live_activities`: one row an activity, `id` its key. Every field of ``ManagedActivity``:
///   `bundle_id`, `attributes_type`, `installation`, `update_token` (hex), `channel_id`, `state`
///   (its name) and `state_reason` (a dead one's reason), `started_at_ms`, `last_content_state`
///   (JSON bytes), `last_timestamp_ms`, `stale_date_ms`, `held_push` (JSON bytes), `report_sequence`,
///   `why`, `attributes` (JSON bytes), `renewal_token` and `renewal_started_at_ms` (a renewal under
///   way), `renewals`, `version`, `history` (JSON bytes: `[{"at_ms", "event", "detail"}]`), `delivery`
///   (JSON bytes: the requested pushes' pacing, ``ActivityDelivery``), `due_at_ms` (when it is
///   next due; indexed) and `group_id` (``ManagedActivity/group``; indexed; schema version 4).
///   Dates are integer milliseconds since 1970 (a finer part is rounded away).
/// - `live_activity_push_to_start`: one row a ``PushToStartKey`` (`installation`, `bundle_id`,
///   `attributes_type`): `token` (hex), `environment`, `confirmed_at_ms`, `sequence`,
///   `dead_reason`, `version`, `starts_sent_ms` (the start budget's ledger: milliseconds,
///   comma-separated; schema version 3), `channels` (0 or 1: ``PushToStartRecord/channels``;
///   schema version 4).
/// - `live_activity_group_channels` (schema version 4): one row a ``GroupChannel``, keyed by
///   `group_id` and `bundle_id`: `record` (JSON bytes: the phase, the pacing and the backoff),
///   `due_at_ms` (its delivery's next due date) and `version`.
///
/// The file says what it is: `PRAGMA application_id` (``applicationID``) and the schema version
/// in `PRAGMA user_version` (``schemaVersion``).
public final class SQLiteLiveActivityStore: LiveActivityStore {
    /// The schema this build creates and reads, kept in the file's `PRAGMA user_version`.
    public static let schemaVersion = 4
    /// The file's `PRAGMA application_id`: "FgLA" in ASCII, telling a store from other SQLite files
    /// (SQLite's file format, "Application ID").
    public static let applicationID: Int32 = 0x4667_4C41

    /// When a save is on the disk.
    public enum Durability: Sendable, Hashable {
        /// `synchronous = FULL`: a save is on the disk when it returns, through a power loss (one
        /// `fsync` of the log per save).
        case full
        /// `synchronous = NORMAL`: a save survives a crash of the process; the last saves before a
        /// power loss or an operating system crash may be rolled back (the log is synced at
        /// checkpoints only).
        case normal
    }

    /// The file, as given.
    public let path: String
    /// WAL mode: readers on their own connections, beside the one writer.
    private let database: DatabasePool
    /// Saves waiting for the next commit (group commit: see ``save(_:replacing:)-(ManagedActivity,_)``).
    private let pending = LockedBox(PendingWrites())

    /// Opens the store in the file at `path`, creating the file and its tables when there is none
    /// (an empty SQLite file is taken as well).
    ///
    /// A file that is not a store is left as it was: it is read, never written, before it is known
    /// to be one (WAL mode itself would rewrite its header).
    /// - Parameters:
    ///   - path: the file.
    ///   - durability: when a save is on the disk (``Durability/full`` unless told).
    /// - Throws: ``LiveActivityError/Code/store`` naming the file: not SQLite, another SQLite
    ///   database, a store of a newer schema than ``schemaVersion`` (both versions named), or one
    ///   that cannot be opened or created.
    public init(path: String, durability: Durability = .full) throws(LiveActivityError) {
        self.path = path
        var configuration = Configuration()
        // Another store or a reader on the file holds its lock for one short transaction: wait for it.
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // FULL: a commit is on disk when save returns (the registry decides what was sent).
            try db.execute(sql: durability == .full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        }
        do {
            // A queue, not a pool: DatabasePool sets WAL mode as it opens, before the file is identified.
            let database = try DatabaseQueue(path: path, configuration: configuration)
            try database.read { db in try Self.check(Self.contents(db), path: path) }
            // WAL: a commit appends to the log and readers never block the writer.
            _ = try database.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
            try database.write { db in try Self.prepareSchema(db, path: path) }
            // The file is a store in WAL mode now: a pool's readers run beside the writer.
            try database.close()
            self.database = try DatabasePool(path: path, configuration: configuration)
        } catch let error as LiveActivityError {
            throw error
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB {
            throw LiveActivityError(.store, rule: "'\(path)' is not a Live Activity store: it is not an SQLite database; it was left as it was")
        } catch {
            throw LiveActivityError(.store, rule: "'\(path)': cannot open a Live Activity store: \(Self.message(error))")
        }
    }

    // MARK: Schema

    private enum Contents {
        /// No table, no identity: a new file.
        case empty
        /// This store's file, of a schema version.
        case store(version: Int)
        /// Anything else, described.
        case foreign(String)
    }

    private static func contents(_ db: Database) throws -> Contents {
        let application = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        if application == Self.applicationID { return .store(version: version) }
        let tables = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") ?? 0
        if application == 0, version == 0, tables == 0 { return .empty }
        if application != 0 { return .foreign("another application's SQLite file (application_id \(application))") }
        return .foreign("an SQLite database of something else (\(tables) schema objects, user_version \(version))")
    }

    /// Throws unless `contents` is a new file or a store this build reads.
    private static func check(_ contents: Contents, path: String) throws {
        switch contents {
        case .empty:
            return
        case .foreign(let what):
            throw LiveActivityError(.store, rule: "'\(path)' is not a Live Activity store: it is \(what); it was left as it was")
        case .store(let version) where version > Self.schemaVersion:
            throw LiveActivityError(
                .store,
                rule: "'\(path)' is a Live Activity store of schema version \(version), newer than this build's \(Self.schemaVersion): "
                    + "open it with a newer build"
            )
        case .store(let version) where version < 1:
            throw LiveActivityError(.store, rule: "'\(path)' is a Live Activity store of unknown schema version \(version) (this build's is \(Self.schemaVersion))")
        case .store:
            return
        }
    }

    /// Creates the tables in a new file, or brings an older schema up to this build's, in the
    /// caller's transaction (checked again there: another store may have done it since the first look).
    ///
    /// Version 2 added `live_activities.history`; version 3 `delivery` and `due_at_ms` (indexed)
    /// and `live_activity_push_to_start.starts_sent_ms`; version 4 `live_activities.group_id`
    /// (indexed), `live_activity_push_to_start.channels` and the table `live_activity_group_channels`.
    private static func prepareSchema(_ db: Database, path: String) throws {
        let contents = try Self.contents(db)
        try Self.check(contents, path: path)
        if case .store(let version) = contents {
            if version < 2 {
                try db.execute(sql: "ALTER TABLE live_activities ADD COLUMN history BLOB; PRAGMA user_version = 2;")
            }
            if version < 3 {
                try db.execute(
                    sql: """
                        ALTER TABLE live_activities ADD COLUMN delivery BLOB;
                        ALTER TABLE live_activities ADD COLUMN due_at_ms INTEGER;
                        ALTER TABLE live_activity_push_to_start ADD COLUMN starts_sent_ms TEXT;
                        \(Self.dueIndex)
                        PRAGMA user_version = 3;
                        """
                )
            }
            if version < 4 {
                try db.execute(
                    sql: """
                        ALTER TABLE live_activities ADD COLUMN group_id TEXT;
                        \(Self.groupIndex)
                        ALTER TABLE live_activity_push_to_start ADD COLUMN channels INTEGER NOT NULL DEFAULT 0;
                        \(Self.groupChannelsTable)
                        PRAGMA user_version = 4;
                        """
                )
            }
            return
        }
        try db.execute(
            sql: """
                CREATE TABLE live_activities (
                    id TEXT NOT NULL PRIMARY KEY,
                    bundle_id TEXT NOT NULL,
                    attributes_type TEXT NOT NULL,
                    installation TEXT,
                    update_token TEXT,
                    channel_id TEXT,
                    state TEXT NOT NULL,
                    state_reason TEXT,
                    started_at_ms INTEGER NOT NULL,
                    last_content_state BLOB,
                    last_timestamp_ms INTEGER,
                    stale_date_ms INTEGER,
                    held_push BLOB,
                    report_sequence INTEGER,
                    why TEXT,
                    attributes BLOB,
                    renewal_token TEXT,
                    renewal_started_at_ms INTEGER,
                    renewals INTEGER NOT NULL,
                    version INTEGER NOT NULL,
                    history BLOB,
                    delivery BLOB,
                    due_at_ms INTEGER,
                    group_id TEXT
                ) WITHOUT ROWID;
                \(Self.dueIndex)
                \(Self.groupIndex)
                CREATE TABLE live_activity_push_to_start (
                    installation TEXT NOT NULL,
                    bundle_id TEXT NOT NULL,
                    attributes_type TEXT NOT NULL,
                    token TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    confirmed_at_ms INTEGER NOT NULL,
                    sequence INTEGER,
                    dead_reason TEXT,
                    version INTEGER NOT NULL,
                    starts_sent_ms TEXT,
                    channels INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (installation, bundle_id, attributes_type)
                ) WITHOUT ROWID;
                \(Self.groupChannelsTable)
                PRAGMA application_id = \(Self.applicationID);
                PRAGMA user_version = \(Self.schemaVersion);
                """
        )
    }

    /// The index due activities are found by: only the rows with something due are in it.
    private static let dueIndex = "CREATE INDEX live_activities_due ON live_activities (due_at_ms) WHERE due_at_ms IS NOT NULL;"

    /// The index a group's activities are found by: only the rows in a group are in it.
    private static let groupIndex = "CREATE INDEX live_activities_group ON live_activities (group_id) WHERE group_id IS NOT NULL;"

    /// The groups' channels, one a group and app (schema version 4).
    private static let groupChannelsTable = """
        CREATE TABLE live_activity_group_channels (
            group_id TEXT NOT NULL,
            bundle_id TEXT NOT NULL,
            record BLOB NOT NULL,
            due_at_ms INTEGER,
            version INTEGER NOT NULL,
            PRIMARY KEY (group_id, bundle_id)
        ) WITHOUT ROWID;
        """

    // MARK: Activities

    private static let activityColumns = """
        id, bundle_id, attributes_type, installation, update_token, channel_id, state, state_reason, started_at_ms,
        last_content_state, last_timestamp_ms, stale_date_ms, held_push, report_sequence, why, attributes, renewal_token,
        renewal_started_at_ms, renewals, version, history, delivery, due_at_ms, group_id
        """

    public func activity(_ id: LiveActivityID) async throws -> ManagedActivity? {
        let row = try await self.reading("reading activity \(id)") { db in
            let statement = try db.cachedStatement(sql: "SELECT \(Self.activityColumns) FROM live_activities WHERE id = ?")
            return try Row.fetchOne(statement, arguments: [id.rawValue]).map(Self.storedActivity)
        }
        return try row?.activity()
    }

    /// Saves are committed in groups: a save waits for the commit that writes it (on disk when it
    /// returns, as ever), and the saves that arrive meanwhile share the next commit, so the disk's
    /// fsync rate bounds commits, not saves. Each save is still its own compare-and-set.
    public func save(_ activity: ManagedActivity, replacing expected: Int?) async throws -> Bool {
        try await self.committing("saving activity \(activity.id)", Self.write(activity, replacing: expected))
    }

    /// One `UPDATE … WHERE id IN (…) AND update_token IS NOT NULL AND state IN ('active', 'stale')
    /// RETURNING …` for each 500 ids, all in one transaction.
    public func applyContentUpdate(_ update: ContentUpdate) async throws -> [AppliedContentUpdate] {
        let now = update.now.storedMilliseconds
        let stale = update.staleDate?.storedMilliseconds
        let state = Data(update.contentState)
        let ids = update.ids.map(\.rawValue)
        let rows = try await self.writing("updating \(ids.count) activities") { db -> [(String, String, String, Int64)] in
            var rows: [(String, String, String, Int64)] = []
            rows.reserveCapacity(ids.count)
            for start in stride(from: 0, to: ids.count, by: Self.updateChunk) {
                let chunk = ids[start..<min(start + Self.updateChunk, ids.count)]
                let sql = """
                    UPDATE live_activities SET last_content_state = ?1, last_timestamp_ms = max(?2, coalesce(last_timestamp_ms, ?2)),
                        stale_date_ms = coalesce(?3, stale_date_ms),
                        state = CASE WHEN state = 'stale' AND coalesce(?3, stale_date_ms) > ?2 THEN 'active' ELSE state END,
                        version = version + 1
                    WHERE id IN (\((0..<chunk.count).map { "?\($0 + 4)" }.joined(separator: ", "))) AND update_token IS NOT NULL
                        AND state IN ('active', 'stale')
                    RETURNING id, update_token, bundle_id, last_timestamp_ms
                    """
                let statement = chunk.count == Self.updateChunk ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
                let arguments: [(any DatabaseValueConvertible)?] = [state, now, stale] + chunk.map { $0 }
                for row in try Row.fetchAll(statement, arguments: StatementArguments(arguments)) {
                    rows.append((row[0], row[1], row[2], row[3]))
                }
            }
            return rows
        }
        return try rows.map { row throws(LiveActivityError) in
            try AppliedContentUpdate(storedID: row.0, updateToken: row.1, bundleID: row.2, timestamp: row.3)
        }
    }

    /// The ids one statement of ``applyContentUpdate(_:)`` takes (SQLite takes 32,766 parameters).
    private static let updateChunk = 500

    /// The compare-and-set of one activity, run in a write transaction: whether it wrote.
    private static func write(_ activity: ManagedActivity, replacing expected: Int?) -> @Sendable (Database) throws -> Bool {
        let row = StoredActivity(activity, version: (expected ?? 0) + 1)
        return { db in
            // Every column but the key, in the order of both statements.
            let values: [(any DatabaseValueConvertible)?] = [
                row.bundleID, row.attributesType, row.installation, row.updateToken, row.channelID, row.state, row.stateReason,
                row.startedAt, row.lastContentState.map { Data($0) }, row.lastTimestamp, row.staleDate, row.held.map { Data($0) },
                row.reportSequence, row.why, row.attributes.map { Data($0) }, row.renewalToken, row.renewalStartedAt, row.renewals,
                row.version, row.history.map { Data($0) }, row.delivery.map { Data($0) }, row.dueAt, row.groupID,
            ]
            if let expected {
                try db.cachedStatement(
                    sql: """
                        UPDATE live_activities SET bundle_id = ?, attributes_type = ?, installation = ?, update_token = ?, channel_id = ?,
                            state = ?, state_reason = ?, started_at_ms = ?, last_content_state = ?, last_timestamp_ms = ?,
                            stale_date_ms = ?, held_push = ?, report_sequence = ?, why = ?, attributes = ?, renewal_token = ?,
                            renewal_started_at_ms = ?, renewals = ?, version = ?, history = ?, delivery = ?, due_at_ms = ?,
                            group_id = ?
                        WHERE id = ? AND version = ?
                        """
                ).execute(arguments: StatementArguments(values + [row.id, expected]))
            } else {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO live_activities (\(Self.activityColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (id) DO NOTHING
                        """
                ).execute(arguments: StatementArguments([row.id] + values))
            }
            return db.changesCount == 1
        }
    }

    public func removeActivity(_ id: LiveActivityID) async throws {
        try await self.writing("removing activity \(id)") { db in
            try db.execute(sql: "DELETE FROM live_activities WHERE id = ?", arguments: [id.rawValue])
        }
    }

    /// Every activity, in id order: SQLite's binary collation orders UTF-8 bytes, which is the
    /// order of Unicode scalars, as `LiveActivityID`'s `<`.
    public func activities() async throws -> [ManagedActivity] {
        let rows = try await self.reading("reading the activities") { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.activityColumns) FROM live_activities ORDER BY id").map(Self.storedActivity)
        }
        return try rows.map { row throws(LiveActivityError) in try row.activity() }
    }

    /// A row of ``activityColumns``, read by position (in that order).
    private static func storedActivity(_ row: Row) -> StoredActivity {
        StoredActivity(
            id: row[0], bundleID: row[1], attributesType: row[2], installation: row[3], updateToken: row[4], channelID: row[5],
            state: row[6], stateReason: row[7], startedAt: row[8], lastContentState: (row[9] as Data?).map(Array.init),
            lastTimestamp: row[10], staleDate: row[11], held: (row[12] as Data?).map(Array.init), reportSequence: row[13], why: row[14],
            attributes: (row[15] as Data?).map(Array.init), renewalToken: row[16], renewalStartedAt: row[17], renewals: row[18],
            history: (row[20] as Data?).map(Array.init), delivery: (row[21] as Data?).map(Array.init), dueAt: row[22], groupID: row[23],
            version: row[19]
        )
    }

    public func dueActivities(at date: Date, limit: Int) async throws -> [ManagedActivity] {
        let rows = try await self.reading("reading the due activities") { db in
            let statement = try db.cachedStatement(
                sql: "SELECT \(Self.activityColumns) FROM live_activities WHERE due_at_ms <= ? ORDER BY due_at_ms, id LIMIT ?"
            )
            return try Row.fetchAll(statement, arguments: [date.storedMilliseconds, max(0, limit)]).map(Self.storedActivity)
        }
        return try rows.map { row throws(LiveActivityError) in try row.activity() }
    }

    public func earliestDue() async throws -> Date? {
        try await self.reading("reading the earliest due activity") { db in
            try Int64.fetchOne(db.cachedStatement(sql: "SELECT min(due_at_ms) FROM live_activities WHERE due_at_ms IS NOT NULL"))
        }.map(Date.init(storedMilliseconds:))
    }

    /// Through the index of `group_id`.
    public func activities(inGroup group: LiveActivityGroupID) async throws -> [ManagedActivity] {
        let rows = try await self.reading("reading the activities of group \(group)") { db in
            let statement = try db.cachedStatement(sql: "SELECT \(Self.activityColumns) FROM live_activities WHERE group_id = ? ORDER BY id")
            return try Row.fetchAll(statement, arguments: [group.rawValue]).map(Self.storedActivity)
        }
        return try rows.map { row throws(LiveActivityError) in try row.activity() }
    }

    // MARK: Group channels

    private static let groupChannelColumns = "group_id, bundle_id, record, due_at_ms, version"

    /// A row of ``groupChannelColumns``, read by position (in that order).
    private static func storedGroupChannel(_ row: Row) -> StoredGroupChannel {
        StoredGroupChannel(group: row[0], bundleID: row[1], record: Array(row[2] as Data), dueAt: row[3], version: row[4])
    }

    public func groupChannel(_ group: LiveActivityGroupID, bundleID: APNSBundleID) async throws -> GroupChannel? {
        let row = try await self.reading("reading the channel of group \(group) for \(bundleID.rawValue)") { db in
            let statement = try db.cachedStatement(
                sql: "SELECT \(Self.groupChannelColumns) FROM live_activity_group_channels WHERE group_id = ? AND bundle_id = ?"
            )
            return try Row.fetchOne(statement, arguments: [group.rawValue, bundleID.rawValue]).map(Self.storedGroupChannel)
        }
        return try row?.channel()
    }

    /// A compare-and-set as an activity's, in the same group commits.
    public func save(_ channel: GroupChannel, replacing expected: Int?) async throws -> Bool {
        let row = StoredGroupChannel(channel, version: (expected ?? 0) + 1)
        return try await self.committing("saving the channel of group \(channel.group) for \(channel.bundleID.rawValue)") { db in
            if let expected {
                try db.cachedStatement(
                    sql: """
                        UPDATE live_activity_group_channels SET record = ?, due_at_ms = ?, version = ?
                        WHERE group_id = ? AND bundle_id = ? AND version = ?
                        """
                ).execute(arguments: [Data(row.record), row.dueAt, row.version, row.group, row.bundleID, expected])
            } else {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO live_activity_group_channels (\(Self.groupChannelColumns)) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (group_id, bundle_id) DO NOTHING
                        """
                ).execute(arguments: [row.group, row.bundleID, Data(row.record), row.dueAt, row.version])
            }
            return db.changesCount == 1
        }
    }

    /// By group then bundle id, in SQLite's binary collation (the order of Unicode scalars).
    public func groupChannels(of group: LiveActivityGroupID?) async throws -> [GroupChannel] {
        let rows = try await self.reading(group.map { "reading the channels of group \($0)" } ?? "reading the group channels") { db in
            if let group {
                let statement = try db.cachedStatement(
                    sql: "SELECT \(Self.groupChannelColumns) FROM live_activity_group_channels WHERE group_id = ? ORDER BY bundle_id"
                )
                return try Row.fetchAll(statement, arguments: [group.rawValue]).map(Self.storedGroupChannel)
            }
            let statement = try db.cachedStatement(
                sql: "SELECT \(Self.groupChannelColumns) FROM live_activity_group_channels ORDER BY group_id, bundle_id"
            )
            return try Row.fetchAll(statement).map(Self.storedGroupChannel)
        }
        return try rows.map { row throws(LiveActivityError) in try row.channel() }
    }

    // MARK: Push-to-start tokens

    public func pushToStart(_ key: PushToStartKey) async throws -> PushToStartRecord? {
        let row = try await self.reading("reading the push-to-start token of \(key)") { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT installation, bundle_id, attributes_type, token, environment, confirmed_at_ms, sequence, dead_reason, version,
                        starts_sent_ms, channels
                    FROM live_activity_push_to_start WHERE installation = ? AND bundle_id = ? AND attributes_type = ?
                    """
            )
            return try Row.fetchOne(statement, arguments: [key.installation.rawValue, key.bundleID.rawValue, key.attributesType]).map { row in
                StoredPushToStart(
                    installation: row[0], bundleID: row[1], attributesType: row[2], token: row[3], environment: row[4], confirmedAt: row[5],
                    sequence: row[6], deadReason: row[7], startsSent: row[9], channels: row[10], version: row[8]
                )
            }
        }
        return try row?.record()
    }

    public func save(_ record: PushToStartRecord, replacing expected: Int?) async throws -> Bool {
        let row = StoredPushToStart(record, version: (expected ?? 0) + 1)
        return try await self.committing("saving the push-to-start token of \(record.key)") { db in
            let key: [(any DatabaseValueConvertible)?] = [row.installation, row.bundleID, row.attributesType]
            let values: [(any DatabaseValueConvertible)?] = [
                row.token, row.environment, row.confirmedAt, row.sequence, row.deadReason, row.version, row.startsSent, row.channels,
            ]
            if let expected {
                try db.cachedStatement(
                    sql: """
                        UPDATE live_activity_push_to_start SET token = ?, environment = ?, confirmed_at_ms = ?, sequence = ?, dead_reason = ?,
                            version = ?, starts_sent_ms = ?, channels = ?
                        WHERE installation = ? AND bundle_id = ? AND attributes_type = ? AND version = ?
                        """
                ).execute(arguments: StatementArguments(values + key + [expected]))
            } else {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO live_activity_push_to_start (installation, bundle_id, attributes_type, token, environment,
                            confirmed_at_ms, sequence, dead_reason, version, starts_sent_ms, channels)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (installation, bundle_id, attributes_type) DO NOTHING
                        """
                ).execute(arguments: StatementArguments(key + values))
            }
            return db.changesCount == 1
        }
    }

    // MARK: Errors

    /// Runs `body` in a write transaction; a failure is a ``LiveActivityError/Code/store`` naming the file and `what`.
    private func writing<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(LiveActivityError) -> T {
        do {
            return try await self.database.write(body)
        } catch {
            throw LiveActivityError(.store, rule: "'\(self.path)': \(what) failed: \(Self.message(error))")
        }
    }

    /// Runs `write` in the next group commit: the first save that finds no commit under way
    /// commits every save queued by then in one transaction, then the ones queued meanwhile, until
    /// none is left; each save returns once the transaction that wrote it is committed. A batch
    /// whose transaction fails is run again one save a transaction, so a failure is only its own.
    private func committing(_ what: String, _ write: @escaping @Sendable (Database) throws -> Bool) async throws(LiveActivityError) -> Bool {
        let queued = PendingWrite(what: what, write: write, done: OneShot())
        let leads = self.pending.withLock { pending -> Bool in
            pending.writes.append(queued)
            guard !pending.committing else { return false }
            pending.committing = true
            return true
        }
        if leads { await self.commitPending() }
        return try await queued.done.value.get()
    }

    private func commitPending() async {
        while true {
            let batch = self.pending.withLock { pending -> [PendingWrite] in
                let batch = pending.writes
                pending.writes = []
                if batch.isEmpty { pending.committing = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            let results: [Bool]? = try? await self.database.write { db in try batch.map { try $0.write(db) } }
            if let results {
                for (write, result) in zip(batch, results) { write.done.resolve(.success(result)) }
                continue
            }
            for write in batch {
                do {
                    let result = try await self.database.write { db in try write.write(db) }
                    write.done.resolve(.success(result))
                } catch {
                    write.done.resolve(.failure(LiveActivityError(.store, rule: "'\(self.path)': \(write.what) failed: \(Self.message(error))")))
                }
            }
        }
    }

    private func reading<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(LiveActivityError) -> T {
        do {
            return try await self.database.read(body)
        } catch {
            throw LiveActivityError(.store, rule: "'\(self.path)': \(what) failed: \(Self.message(error))")
        }
    }

    private static func message(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? error.description }
        return "\(error)"
    }
}

/// A save waiting for its commit.
private struct PendingWrite: Sendable {
    var what: String
    var write: @Sendable (Database) throws -> Bool
    var done: OneShot<Result<Bool, LiveActivityError>>
}

/// The saves waiting for the next commit, and whether a save is committing them.
private struct PendingWrites {
    var writes: [PendingWrite] = []
    var committing = false
}
