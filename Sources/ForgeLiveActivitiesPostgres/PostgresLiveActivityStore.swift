internal import ForgeAPNsCore
public import struct Foundation.Date
public import ForgeLiveActivities
public import Logging
public import PostgresNIO

/// A ``LiveActivityStore`` in PostgreSQL, shared by any number of backend instances.
///
/// Every save is one statement, a compare-and-set: `UPDATE … WHERE id = $1 AND version = $2` for a
/// stored record, `INSERT … ON CONFLICT DO NOTHING` for a new one. Under PostgreSQL's row locks a
/// second writer of the same row waits for the first to commit, then finds the version changed and
/// writes nothing (PostgreSQL documentation, "Read Committed Isolation Level"): two instances
/// never both apply a change made from one reading.
///
/// Tables (created by ``open(client:logger:)`` when missing, with a schema version row in
/// `live_activity_schema`):
/// - `live_activities`: one row an activity, `id` its key (collation "C": ``activities()`` is in
///   the order of `LiveActivityID`'s `<`, whatever the database's locale). Every field of
///   ``ManagedActivity``: `bundle_id`, `attributes_type`, `installation`, `update_token` (hex),
///   `channel_id`, `state` (its name) and `state_reason` (a dead one's reason), `started_at_ms`,
///   `last_content_state` (JSON bytes), `last_timestamp_ms`, `stale_date_ms`, `held_push` (JSON
///   bytes), `report_sequence`, `why`, `attributes` (JSON bytes), `renewal_token` and
///   `renewal_started_at_ms` (a renewal under way), `renewals`, `version`, `history` (JSON bytes:
///   `[{"at_ms", "event", "detail"}]`; added by schema version 2), `delivery` (JSON bytes: the
///   requested pushes' pacing, ``ActivityDelivery``), `due_at_ms` (when it is next due; indexed;
///   both added by schema version 3) and `group_id` (``ManagedActivity/group``; indexed; schema
///   version 4). Dates are milliseconds since 1970.
/// - `live_activity_push_to_start`: one row a ``PushToStartKey`` (`installation`, `bundle_id`,
///   `attributes_type`): `token` (hex), `environment`, `confirmed_at_ms`, `sequence`,
///   `dead_reason`, `version`, `starts_sent_ms` (the start budget's ledger: milliseconds,
///   comma-separated; schema version 3), `channels` (``PushToStartRecord/channels``; schema
///   version 4).
/// - `live_activity_group_channels` (schema version 4): one row a ``GroupChannel``, keyed by
///   `group_id` and `bundle_id` (both collation "C": ``groupChannels(of:)`` is in the order of
///   their `<`): `record` (JSON bytes: the phase, the pacing and the backoff), `due_at_ms` (its
///   delivery's next due date) and `version`.
public final class PostgresLiveActivityStore: LiveActivityStore {
    /// The schema this build creates and reads.
    public static let schemaVersion = 4
    /// The advisory lock held while the tables are created (the campaign schema's is 7262746567,
    /// its provider tokens' 7262746568).
    static let createLock: Int64 = 7_262_746_569

    private let client: PostgresClient
    private let logger: Logger

    private init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Opens the store in `client`'s database, creating the tables when they are missing (in one
    /// transaction, under an advisory lock: instances starting together take turns).
    ///
    /// - Important: the caller runs `client` (`client.run()`, in a task group or a `ServiceGroup`)
    ///   for as long as the store is used; ``withStore(configuration:logger:_:)`` does both.
    /// - Throws: ``LiveActivityError/Code/store``: the database failed, or its schema is newer than
    ///   ``schemaVersion`` (both versions named; nothing is changed).
    public static func open(client: PostgresClient, logger: Logger) async throws(LiveActivityError) -> PostgresLiveActivityStore {
        let newer: Int?
        do {
            newer = try await client.withTransaction(logger: logger) { connection -> Int? in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.createLock))", logger: logger)
                try await connection.query("CREATE TABLE IF NOT EXISTS live_activity_schema (version integer PRIMARY KEY)", logger: logger)
                let rows = try await connection.query("SELECT max(version) FROM live_activity_schema", logger: logger)
                for try await version in rows.decode(Int?.self) where (version ?? 0) > Self.schemaVersion { return version }
                for statement in Self.schema { try await connection.query(statement, logger: logger) }
                try await connection.query(
                    "INSERT INTO live_activity_schema (version) VALUES (\(Self.schemaVersion)) ON CONFLICT DO NOTHING", logger: logger
                )
                return nil
            }
        } catch {
            throw Self.failure(error, doing: "creating the Live Activity tables")
        }
        if let newer {
            throw LiveActivityError(
                .store, rule: "PostgreSQL: the Live Activity schema is version \(newer), newer than this build's \(Self.schemaVersion)"
            )
        }
        return PostgresLiveActivityStore(client: client, logger: logger)
    }

    /// Runs a client for `configuration`, opens the store on it, and returns `body`'s result once
    /// the client has shut down (on every path).
    /// - Throws: what ``open(client:logger:)`` or `body` throw.
    public static func withStore<Result: Sendable>(
        configuration: PostgresClient.Configuration, logger: Logger, _ body: (PostgresLiveActivityStore) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(try await Self.open(client: client, logger: logger))
        }
    }

    private static let schema: [PostgresQuery] = [
        """
        CREATE TABLE IF NOT EXISTS live_activities (
            id text COLLATE "C" PRIMARY KEY,
            bundle_id text NOT NULL,
            attributes_type text NOT NULL,
            installation text,
            update_token text,
            channel_id text,
            state text NOT NULL,
            state_reason text,
            started_at_ms bigint NOT NULL,
            last_content_state bytea,
            last_timestamp_ms bigint,
            stale_date_ms bigint,
            held_push bytea,
            report_sequence bigint,
            why text,
            attributes bytea,
            renewal_token text,
            renewal_started_at_ms bigint,
            renewals bigint NOT NULL,
            version bigint NOT NULL
        )
        """,
        // Schema version 2.
        "ALTER TABLE live_activities ADD COLUMN IF NOT EXISTS history bytea",
        // Schema version 3.
        "ALTER TABLE live_activities ADD COLUMN IF NOT EXISTS delivery bytea",
        "ALTER TABLE live_activities ADD COLUMN IF NOT EXISTS due_at_ms bigint",
        "CREATE INDEX IF NOT EXISTS live_activities_due ON live_activities (due_at_ms) WHERE due_at_ms IS NOT NULL",
        """
        CREATE TABLE IF NOT EXISTS live_activity_push_to_start (
            installation text NOT NULL,
            bundle_id text NOT NULL,
            attributes_type text NOT NULL,
            token text NOT NULL,
            environment text NOT NULL,
            confirmed_at_ms bigint NOT NULL,
            sequence bigint,
            dead_reason text,
            version bigint NOT NULL,
            PRIMARY KEY (installation, bundle_id, attributes_type)
        )
        """,
        // Schema version 3.
        "ALTER TABLE live_activity_push_to_start ADD COLUMN IF NOT EXISTS starts_sent_ms text",
        // Schema version 4.
        "ALTER TABLE live_activities ADD COLUMN IF NOT EXISTS group_id text",
        "CREATE INDEX IF NOT EXISTS live_activities_group ON live_activities (group_id) WHERE group_id IS NOT NULL",
        "ALTER TABLE live_activity_push_to_start ADD COLUMN IF NOT EXISTS channels boolean NOT NULL DEFAULT false",
        """
        CREATE TABLE IF NOT EXISTS live_activity_group_channels (
            group_id text COLLATE "C" NOT NULL,
            bundle_id text COLLATE "C" NOT NULL,
            record bytea NOT NULL,
            due_at_ms bigint,
            version bigint NOT NULL,
            PRIMARY KEY (group_id, bundle_id)
        )
        """,
    ]

    // MARK: Activities

    /// A prepared statement (parsed and planned once a connection), as are the two saves: each
    /// report and update is a read and a save.
    public func activity(_ id: LiveActivityID) async throws -> ManagedActivity? {
        let rows: [StoredActivity]
        do {
            rows = try await Self.collect(self.client.execute(SelectActivity(id: id.rawValue), logger: self.logger))
        } catch {
            throw Self.failure(error, doing: "reading activity \(id)")
        }
        return try rows.first?.activity()
    }

    /// One statement: `UPDATE … WHERE id = ANY($4) AND update_token IS NOT NULL AND state IN
    /// ('active', 'stale') RETURNING …`.
    public func applyContentUpdate(_ update: ContentUpdate) async throws -> [AppliedContentUpdate] {
        let now = update.now.storedMilliseconds
        let stale = update.staleDate?.storedMilliseconds
        let query: PostgresQuery = """
            UPDATE live_activities SET last_content_state = \(ByteBuffer(bytes: update.contentState)),
                last_timestamp_ms = GREATEST(\(now), coalesce(last_timestamp_ms, \(now))),
                stale_date_ms = coalesce(\(stale)::bigint, stale_date_ms),
                state = CASE WHEN state = 'stale' AND coalesce(\(stale)::bigint, stale_date_ms) > \(now) THEN 'active' ELSE state END,
                version = version + 1
            WHERE id = ANY(\(update.ids.map(\.rawValue))) AND update_token IS NOT NULL AND state IN ('active', 'stale')
            RETURNING id, update_token, bundle_id, last_timestamp_ms
            """
        let rows = try await self.rows(query, doing: "updating \(update.ids.count) activities") { cells in
            (
                try cells["id"].decode(String.self), try cells["update_token"].decode(String.self), try cells["bundle_id"].decode(String.self),
                try cells["last_timestamp_ms"].decode(Int64.self)
            )
        }
        return try rows.map { row throws(LiveActivityError) in
            try AppliedContentUpdate(storedID: row.0, updateToken: row.1, bundleID: row.2, timestamp: row.3)
        }
    }

    public func save(_ activity: ManagedActivity, replacing expected: Int?) async throws -> Bool {
        let row = StoredActivity(activity, version: (expected ?? 0) + 1)
        do {
            let written: [Int64]
            if let expected {
                written = try await Self.collect(self.client.execute(UpdateActivity(row: row, expected: Int64(expected)), logger: self.logger))
            } else {
                written = try await Self.collect(self.client.execute(InsertActivity(row: row), logger: self.logger))
            }
            return !written.isEmpty
        } catch {
            throw Self.failure(error, doing: "saving activity \(activity.id)")
        }
    }

    public func removeActivity(_ id: LiveActivityID) async throws {
        do {
            try await self.client.query("DELETE FROM live_activities WHERE id = \(id.rawValue)", logger: self.logger)
        } catch {
            throw Self.failure(error, doing: "removing activity \(id)")
        }
    }

    public func activities() async throws -> [ManagedActivity] {
        try await self.activities(where: "", doing: "reading the activities")
    }

    public func dueActivities(at date: Date, limit: Int) async throws -> [ManagedActivity] {
        let milliseconds = date.storedMilliseconds
        let count = max(0, limit)
        return try await self.activities(
            where: "WHERE due_at_ms <= \(milliseconds) ORDER BY due_at_ms, id LIMIT \(count)", doing: "reading the due activities"
        )
    }

    public func earliestDue() async throws -> Date? {
        let rows = try await self.rows("SELECT min(due_at_ms) FROM live_activities WHERE due_at_ms IS NOT NULL", doing: "reading the earliest due activity") {
            cells in try cells[0].decode(Int64?.self)
        }
        return rows.first.flatMap { $0 }.map(Date.init(storedMilliseconds:))
    }

    /// Through the index of `group_id`.
    public func activities(inGroup group: LiveActivityGroupID) async throws -> [ManagedActivity] {
        try await self.activities(where: "WHERE group_id = \(group.rawValue)", doing: "reading the activities of group \(group)")
    }

    /// The activities `filter` (a `WHERE` clause, or nothing) selects, in id order.
    private func activities(where filter: PostgresQuery, doing what: String) async throws(LiveActivityError) -> [ManagedActivity] {
        var query: PostgresQuery = """
            SELECT id, bundle_id, attributes_type, installation, update_token, channel_id, state, state_reason, started_at_ms,
                last_content_state, last_timestamp_ms, stale_date_ms, held_push, report_sequence, why, attributes, renewal_token,
                renewal_started_at_ms, renewals, version, history, delivery, due_at_ms, group_id
            FROM live_activities
            """
        query.sql += " \(filter.sql)" + (filter.sql.contains("ORDER BY") ? "" : " ORDER BY id")
        query.binds = filter.binds
        let rows = try await self.rows(query, doing: what) { cells in try Self.storedActivity(cells) }
        return try rows.map { row throws(LiveActivityError) in try row.activity() }
    }

    /// Every element of `rows`.
    private static func collect<Rows: AsyncSequence>(_ rows: Rows) async throws -> [Rows.Element] {
        var all: [Rows.Element] = []
        for try await row in rows { all.append(row) }
        return all
    }

    /// A row of the activity columns, read by name.
    fileprivate static func storedActivity(_ cells: PostgresRandomAccessRow) throws -> StoredActivity {
            StoredActivity(
                id: try cells["id"].decode(String.self), bundleID: try cells["bundle_id"].decode(String.self),
                attributesType: try cells["attributes_type"].decode(String.self), installation: try cells["installation"].decode(String?.self),
                updateToken: try cells["update_token"].decode(String?.self), channelID: try cells["channel_id"].decode(String?.self),
                state: try cells["state"].decode(String.self), stateReason: try cells["state_reason"].decode(String?.self),
                startedAt: try cells["started_at_ms"].decode(Int64.self),
                lastContentState: try cells["last_content_state"].decode(ByteBuffer?.self).map { Array($0.readableBytesView) },
                lastTimestamp: try cells["last_timestamp_ms"].decode(Int64?.self), staleDate: try cells["stale_date_ms"].decode(Int64?.self),
                held: try cells["held_push"].decode(ByteBuffer?.self).map { Array($0.readableBytesView) },
                reportSequence: try cells["report_sequence"].decode(Int64?.self), why: try cells["why"].decode(String?.self),
                attributes: try cells["attributes"].decode(ByteBuffer?.self).map { Array($0.readableBytesView) },
                renewalToken: try cells["renewal_token"].decode(String?.self),
                renewalStartedAt: try cells["renewal_started_at_ms"].decode(Int64?.self), renewals: try cells["renewals"].decode(Int64.self),
                history: try cells["history"].decode(ByteBuffer?.self).map { Array($0.readableBytesView) },
                delivery: try cells["delivery"].decode(ByteBuffer?.self).map { Array($0.readableBytesView) },
                dueAt: try cells["due_at_ms"].decode(Int64?.self), groupID: try cells["group_id"].decode(String?.self),
                version: try cells["version"].decode(Int64.self)
            )
    }

    // MARK: Push-to-start tokens

    public func pushToStart(_ key: PushToStartKey) async throws -> PushToStartRecord? {
        let query: PostgresQuery = """
            SELECT token, environment, confirmed_at_ms, sequence, dead_reason, version, starts_sent_ms, channels
            FROM live_activity_push_to_start
            WHERE installation = \(key.installation.rawValue) AND bundle_id = \(key.bundleID.rawValue) AND attributes_type = \(key.attributesType)
            """
        let rows = try await self.rows(query, doing: "reading the push-to-start token of \(key)") { cells in
            StoredPushToStart(
                installation: key.installation.rawValue, bundleID: key.bundleID.rawValue, attributesType: key.attributesType,
                token: try cells["token"].decode(String.self), environment: try cells["environment"].decode(String.self),
                confirmedAt: try cells["confirmed_at_ms"].decode(Int64.self), sequence: try cells["sequence"].decode(Int64?.self),
                deadReason: try cells["dead_reason"].decode(String?.self), startsSent: try cells["starts_sent_ms"].decode(String?.self),
                channels: try cells["channels"].decode(Bool.self), version: try cells["version"].decode(Int64.self)
            )
        }
        return try rows.first?.record()
    }

    public func save(_ record: PushToStartRecord, replacing expected: Int?) async throws -> Bool {
        let row = StoredPushToStart(record, version: (expected ?? 0) + 1)
        let query: PostgresQuery
        if let expected {
            query = """
                UPDATE live_activity_push_to_start SET token = \(row.token), environment = \(row.environment),
                    confirmed_at_ms = \(row.confirmedAt), sequence = \(row.sequence), dead_reason = \(row.deadReason), version = \(row.version),
                    starts_sent_ms = \(row.startsSent), channels = \(row.channels)
                WHERE installation = \(row.installation) AND bundle_id = \(row.bundleID) AND attributes_type = \(row.attributesType)
                    AND version = \(Int64(expected))
                RETURNING version
                """
        } else {
            query = """
                INSERT INTO live_activity_push_to_start (installation, bundle_id, attributes_type, token, environment, confirmed_at_ms,
                    sequence, dead_reason, version, starts_sent_ms, channels)
                VALUES (\(row.installation), \(row.bundleID), \(row.attributesType), \(row.token), \(row.environment), \(row.confirmedAt),
                    \(row.sequence), \(row.deadReason), \(row.version), \(row.startsSent), \(row.channels))
                ON CONFLICT (installation, bundle_id, attributes_type) DO NOTHING
                RETURNING version
                """
        }
        return try await self.writes(query, doing: "saving the push-to-start token of \(record.key)")
    }

    // MARK: Group channels

    public func groupChannel(_ group: LiveActivityGroupID, bundleID: APNSBundleID) async throws -> GroupChannel? {
        let query: PostgresQuery = """
            SELECT group_id, bundle_id, record, due_at_ms, version FROM live_activity_group_channels
            WHERE group_id = \(group.rawValue) AND bundle_id = \(bundleID.rawValue)
            """
        let rows = try await self.rows(query, doing: "reading the channel of group \(group) for \(bundleID.rawValue)", Self.storedGroupChannel)
        return try rows.first?.channel()
    }

    public func save(_ channel: GroupChannel, replacing expected: Int?) async throws -> Bool {
        let row = StoredGroupChannel(channel, version: (expected ?? 0) + 1)
        let record = ByteBuffer(bytes: row.record)
        let query: PostgresQuery
        if let expected {
            query = """
                UPDATE live_activity_group_channels SET record = \(record), due_at_ms = \(row.dueAt), version = \(row.version)
                WHERE group_id = \(row.group) AND bundle_id = \(row.bundleID) AND version = \(Int64(expected))
                RETURNING version
                """
        } else {
            query = """
                INSERT INTO live_activity_group_channels (group_id, bundle_id, record, due_at_ms, version)
                VALUES (\(row.group), \(row.bundleID), \(record), \(row.dueAt), \(row.version))
                ON CONFLICT (group_id, bundle_id) DO NOTHING
                RETURNING version
                """
        }
        return try await self.writes(query, doing: "saving the channel of group \(channel.group) for \(channel.bundleID.rawValue)")
    }

    /// By group then bundle id, both in collation "C" (the order of Unicode scalars).
    public func groupChannels(of group: LiveActivityGroupID?) async throws -> [GroupChannel] {
        let query: PostgresQuery
        let what: String
        if let group {
            query = """
                SELECT group_id, bundle_id, record, due_at_ms, version FROM live_activity_group_channels
                WHERE group_id = \(group.rawValue) ORDER BY bundle_id
                """
            what = "reading the channels of group \(group)"
        } else {
            query = "SELECT group_id, bundle_id, record, due_at_ms, version FROM live_activity_group_channels ORDER BY group_id, bundle_id"
            what = "reading the group channels"
        }
        let rows = try await self.rows(query, doing: what, Self.storedGroupChannel)
        return try rows.map { row throws(LiveActivityError) in try row.channel() }
    }

    /// A row of the group channel columns, read by name.
    private static func storedGroupChannel(_ cells: PostgresRandomAccessRow) throws -> StoredGroupChannel {
        StoredGroupChannel(
            group: try cells["group_id"].decode(String.self), bundleID: try cells["bundle_id"].decode(String.self),
            record: Array(try cells["record"].decode(ByteBuffer.self).readableBytesView), dueAt: try cells["due_at_ms"].decode(Int64?.self),
            version: try cells["version"].decode(Int64.self)
        )
    }

    // MARK: Queries

    /// Runs a compare-and-set `query` (`… RETURNING version`): whether it wrote a row.
    private func writes(_ query: PostgresQuery, doing what: String) async throws(LiveActivityError) -> Bool {
        try await !self.rows(query, doing: what) { _ in () }.isEmpty
    }

    /// `query`'s rows, each read by `read`; a failure names `what`.
    private func rows<Row: Sendable>(
        _ query: PostgresQuery, doing what: String, _ read: (PostgresRandomAccessRow) throws -> Row
    ) async throws(LiveActivityError) -> [Row] {
        do {
            var rows: [Row] = []
            for try await row in try await self.client.query(query, logger: self.logger) { rows.append(try read(row.makeRandomAccess())) }
            return rows
        } catch {
            throw Self.failure(error, doing: what)
        }
    }

    /// A failure as a ``LiveActivityError/Code/store`` with the server's message (PSQLError's own
    /// description hides it).
    private static func failure(_ error: any Error, doing what: String) -> LiveActivityError {
        var error = error
        if let transaction = error as? PostgresTransactionError {
            error = transaction.closureError ?? transaction.commitError ?? transaction.beginError ?? error
        }
        guard let error = error as? PSQLError else { return LiveActivityError(.store, rule: "PostgreSQL: \(what) failed: \(error)") }
        let message = error.serverInfo?[.message] ?? "\(error.code)"
        return LiveActivityError(.store, rule: "PostgreSQL: \(what) failed: \(message)\(error.underlying.map { ": \($0)" } ?? "")")
    }
}

// MARK: Prepared statements

/// The columns of `live_activities`, in the order the statements below bind and read them.
private let activityColumns = """
    id, bundle_id, attributes_type, installation, update_token, channel_id, state, state_reason, started_at_ms, last_content_state,
    last_timestamp_ms, stale_date_ms, held_push, report_sequence, why, attributes, renewal_token, renewal_started_at_ms, renewals,
    version, history, delivery, due_at_ms, group_id
    """

private struct SelectActivity: PostgresPreparedStatement {
    static let name = "forge_live_activity_select_v4"
    static let sql = "SELECT \(activityColumns) FROM live_activities WHERE id = $1"
    typealias Row = StoredActivity

    var id: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(self.id)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> StoredActivity {
        try PostgresLiveActivityStore.storedActivity(row.makeRandomAccess())
    }
}

/// Every column but the key and the version, in ``activityColumns``' order.
private func bindValues(_ row: StoredActivity, to bindings: inout PostgresBindings) throws {
    bindings.append(row.bundleID)
    bindings.append(row.attributesType)
    bindings.append(row.installation)
    bindings.append(row.updateToken)
    bindings.append(row.channelID)
    bindings.append(row.state)
    bindings.append(row.stateReason)
    bindings.append(row.startedAt)
    bindings.append(row.lastContentState.map { ByteBuffer(bytes: $0) })
    bindings.append(row.lastTimestamp)
    bindings.append(row.staleDate)
    bindings.append(row.held.map { ByteBuffer(bytes: $0) })
    bindings.append(row.reportSequence)
    bindings.append(row.why)
    bindings.append(row.attributes.map { ByteBuffer(bytes: $0) })
    bindings.append(row.renewalToken)
    bindings.append(row.renewalStartedAt)
    bindings.append(row.renewals)
    bindings.append(row.history.map { ByteBuffer(bytes: $0) })
    bindings.append(row.delivery.map { ByteBuffer(bytes: $0) })
    bindings.append(row.dueAt)
    bindings.append(row.groupID)
}

/// `$1` the id, `$2`… the columns of ``bindValues(_:to:)``, `$24` the new version, `$25` the expected one.
private struct UpdateActivity: PostgresPreparedStatement {
    static let name = "forge_live_activity_update_v4"
    static let sql = """
        UPDATE live_activities SET bundle_id = $2, attributes_type = $3, installation = $4, update_token = $5, channel_id = $6,
            state = $7, state_reason = $8, started_at_ms = $9, last_content_state = $10, last_timestamp_ms = $11, stale_date_ms = $12,
            held_push = $13, report_sequence = $14, why = $15, attributes = $16, renewal_token = $17, renewal_started_at_ms = $18,
            renewals = $19, history = $20, delivery = $21, due_at_ms = $22, group_id = $23, version = $24
        WHERE id = $1 AND version = $25
        RETURNING version
        """
    typealias Row = Int64

    var row: StoredActivity
    var expected: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 25)
        bindings.append(self.row.id)
        try bindValues(self.row, to: &bindings)
        bindings.append(self.row.version)
        bindings.append(self.expected)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
}

/// `$1` the id, `$2`… the columns of ``bindValues(_:to:)``, `$24` the version.
private struct InsertActivity: PostgresPreparedStatement {
    static let name = "forge_live_activity_insert_v4"
    static let sql = """
        INSERT INTO live_activities (id, bundle_id, attributes_type, installation, update_token, channel_id, state, state_reason,
            started_at_ms, last_content_state, last_timestamp_ms, stale_date_ms, held_push, report_sequence, why, attributes, renewal_token,
            renewal_started_at_ms, renewals, history, delivery, due_at_ms, group_id, version)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)
        ON CONFLICT (id) DO NOTHING
        RETURNING version
        """
    typealias Row = Int64

    var row: StoredActivity

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 24)
        bindings.append(self.row.id)
        try bindValues(self.row, to: &bindings)
        bindings.append(self.row.version)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
}
