public import ForgeAPNsCore
public import ForgeCampaign
public import Logging
import PostgresNIO
public import struct Foundation.UUID

/// A campaign in PostgreSQL, shared by workers on any number of machines.
///
/// Tables (created by ``create(_:url:logger:)`` when missing, with a schema version row):
/// - `campaigns`: one row a campaign: its name (unique), the UUID its `apns-id`s derive from
///   (``APNSID/init(campaign:index:)``), and what every worker sends: payload bytes, topic, push
///   type, priority, expiration, collapse id. The endpoint and credentials are not stored: each
///   worker brings its own.
/// - `campaign_tokens`: one row a token, `PRIMARY KEY (campaign, idx)`: one verdict per token.
///   `state` is `not_sent`, `sending` (handed to a sender, no committed verdict), or the verdict:
///   `accepted`, `rejected` (final) or `failed` (no answer; sent again). Only the key is indexed
///   and pages are half filled, so both updates of a token (marked, then its verdict) stay on its
///   page (HOT updates: no index entry, dead versions pruned in place). `apns_id` is stored only
///   when it is not the campaign's own for the index.
/// - `campaign_batches`: the unit of work, `PRIMARY KEY (campaign, batch)`: tokens
///   `first_idx..<end_idx`, `pending`/`leased`/`done`, the lease: owner, epoch, expiry, and the
///   transaction that last committed verdicts of the batch (`commit_xid`, for `watch`).
///
/// See ``PostgresCampaignWorker`` for the protocol a worker follows.
public final class PostgresCampaign: Sendable {
    /// Tokens a batch holds unless `create` is told otherwise: a claim every few hundred
    /// milliseconds per worker at full speed, and a lease lost costs at most one batch's window.
    public static let defaultBatchSize = 2048
    /// The schema this build writes and reads.
    public static let schemaVersion = 1

    /// What a campaign sends, as `create` stores it.
    public struct Definition: Sendable {
        public var name: String
        public var notification: APNSPreparedNotification
        /// The tokens file's path, for the record.
        public var tokensPath: String
        public var batchSize: Int

        public init(name: String, notification: APNSPreparedNotification, tokensPath: String, batchSize: Int = PostgresCampaign.defaultBatchSize) {
            self.name = name
            self.notification = notification
            self.tokensPath = tokensPath
            self.batchSize = batchSize
        }
    }

    public let name: String
    /// The campaign's row id in the database.
    let id: Int
    /// The first part of every push's `apns-id`.
    public let uuid: UUID
    /// What every token is sent.
    public let notification: APNSPreparedNotification
    public let tokenCount: Int
    public let url: PostgresCampaignURL
    let logger: Logger

    private init(
        name: String, id: Int, uuid: UUID, notification: APNSPreparedNotification, tokenCount: Int, url: PostgresCampaignURL, logger: Logger
    ) {
        self.name = name
        self.id = id
        self.uuid = uuid
        self.notification = notification
        self.tokenCount = tokenCount
        self.url = url
        self.logger = logger
    }

    /// A connection to the campaign's database; `body`'s result once it is closed.
    static func withConnection<Result: Sendable>(
        _ url: PostgresCampaignURL, logger: Logger, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: url.configuration, id: 1, logger: logger)
        } catch {
            throw PostgresCampaignError.database(error, doing: "--postgres \(url): cannot connect")
        }
        do {
            let result = try await body(connection)
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    // MARK: Schema

    private static let schema: [PostgresQuery] = [
        "CREATE TABLE IF NOT EXISTS campaign_schema (version integer PRIMARY KEY)",
        """
        CREATE TABLE IF NOT EXISTS campaigns (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name text NOT NULL UNIQUE,
            uuid uuid NOT NULL,
            payload bytea NOT NULL, topic text NOT NULL, push_type text NOT NULL,
            priority integer, expiration bigint, collapse_id text,
            tokens_path text NOT NULL, token_count bigint NOT NULL DEFAULT 0, batch_size integer NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now()
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS campaign_tokens (
            campaign bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
            idx bigint NOT NULL,
            line bigint NOT NULL,
            token text NOT NULL,
            state text NOT NULL DEFAULT 'not_sent',
            status integer, reason text, apns_id text,
            attempts integer NOT NULL DEFAULT 0,
            sends integer NOT NULL DEFAULT 0,
            may_have_been_delivered boolean NOT NULL DEFAULT false,
            commit_xid bigint,
            PRIMARY KEY (campaign, idx)
        ) WITH (fillfactor = 50)
        """,
        """
        CREATE TABLE IF NOT EXISTS campaign_batches (
            campaign bigint NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
            batch bigint NOT NULL,
            first_idx bigint NOT NULL, end_idx bigint NOT NULL,
            state text NOT NULL DEFAULT 'pending',
            lease_owner text, lease_epoch bigint NOT NULL DEFAULT 0, lease_expires_at timestamptz,
            commit_xid bigint,
            PRIMARY KEY (campaign, batch)
        )
        """,
        // One provider token per key for the campaign's workers (PostgresProviderTokenStore).
        PostgresProviderTokenStore.createTable,
    ]

    /// Creates the tables when missing and checks the schema version, in the caller's transaction:
    /// a lock held to its end makes concurrent creators take turns.
    private static func prepareSchema(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(7262746567)", logger: logger)
        for statement in Self.schema { try await connection.query(statement, logger: logger) }
        try await connection.query(
            "INSERT INTO campaign_schema (version) VALUES (\(Self.schemaVersion)) ON CONFLICT DO NOTHING", logger: logger
        )
        try await Self.checkSchema(connection, logger: logger)
    }

    private static func checkSchema(_ connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query("SELECT max(version) FROM campaign_schema", logger: logger)
        for try await version in rows.decode(Int?.self) where (version ?? 0) > Self.schemaVersion {
            throw PostgresCampaignError(
                .database, "--postgres: the campaign schema is version \(version ?? 0), newer than this build's \(Self.schemaVersion)"
            )
        }
    }

    // MARK: Create

    /// Creates the campaign `definition` with the tokens `next()` yields (in file order, `index`
    /// from 0), all in one transaction with the tables when they are missing: a failure (a thrown
    /// `next()` included) leaves nothing. Tokens go in with `COPY`.
    /// - Throws: ``PostgresCampaignError`` (`exists` for a name taken), or what `next()` threw.
    public static func create(
        _ definition: Definition, url: PostgresCampaignURL, logger: Logger,
        tokens next: () throws -> CampaignJournal.Entry?
    ) async throws -> PostgresCampaign {
        precondition(definition.batchSize > 0)
        return try await Self.withConnection(url, logger: logger) { connection in
            let uuid = UUID()
            let notification = definition.notification
            do {
                let (id, count) = try await connection.withTransaction(logger: logger) { connection -> (Int, Int) in
                    try await Self.prepareSchema(connection, logger: logger)
                    let priority = notification.priority.map { Int($0.headerValue) } ?? nil
                    let inserted = try await connection.query(
                        """
                        INSERT INTO campaigns (name, uuid, payload, topic, push_type, priority, expiration, collapse_id, tokens_path, batch_size)
                        VALUES (\(definition.name), \(uuid), \(ByteBuffer(bytes: notification.body)), \(notification.topic.rawValue),
                            \(notification.pushType.rawValue), \(priority), \(notification.expiration.secondsSince1970),
                            \(notification.collapseID?.rawValue), \(definition.tokensPath), \(definition.batchSize))
                        ON CONFLICT (name) DO NOTHING RETURNING id
                        """,
                        logger: logger
                    )
                    var id: Int?
                    for try await row in inserted.decode(Int.self) { id = row }
                    guard let id else { throw PostgresCampaignError(.exists, "campaign \(definition.name) exists") }
                    var count = 0
                    try await connection.copyFrom(
                        table: "campaign_tokens", columns: ["campaign", "idx", "line", "token"], logger: logger
                    ) { writer in
                        var buffer = ByteBuffer()
                        while let entry = try next() {
                            precondition(entry.index == count, "tokens in file order, index from 0")
                            count += 1
                            // Text COPY: tab-separated; a token is hex, so nothing needs escaping.
                            buffer.writeString("\(id)\t\(entry.index)\t\(entry.line)\t\(entry.token)\n")
                            if buffer.readableBytes >= 1 << 16 {
                                try await writer.write(buffer)
                                buffer.clear()
                            }
                        }
                        if buffer.readableBytes > 0 { try await writer.write(buffer) }
                    }
                    try await connection.query(
                        """
                        INSERT INTO campaign_batches (campaign, batch, first_idx, end_idx)
                        SELECT \(id), b, b * \(definition.batchSize), least((b + 1) * \(definition.batchSize), \(count))
                        FROM generate_series(0, (\(count) + \(definition.batchSize) - 1) / \(definition.batchSize) - 1) AS b
                        """,
                        logger: logger
                    )
                    try await connection.query("UPDATE campaigns SET token_count = \(count) WHERE id = \(id)", logger: logger)
                    return (id, count)
                }
                // Statistics for the workers' plans now, not when autovacuum gets to the new rows.
                try await connection.query("ANALYZE campaign_tokens, campaign_batches", logger: logger)
                return PostgresCampaign(
                    name: definition.name, id: id, uuid: uuid, notification: notification, tokenCount: count, url: url, logger: logger
                )
            } catch let error as PostgresTransactionError {
                // The body's own error (a bad line, a taken name) rather than the transaction's wrapper.
                if let closure = error.closureError, !(closure is PSQLError) { throw closure }
                throw PostgresCampaignError.database(error.closureError ?? error.beginError ?? error.commitError ?? error, doing: "--postgres \(url): creating campaign \(definition.name)")
            }
        }
    }

    // MARK: Open

    /// The campaign `name`, with the notification its workers send.
    /// - Throws: ``PostgresCampaignError`` (`notFound`, `database`).
    public static func open(name: String, url: PostgresCampaignURL, logger: Logger) async throws -> PostgresCampaign {
        try await Self.withConnection(url, logger: logger) { connection in
            do {
                try await Self.checkSchema(connection, logger: logger)
                let rows = try await connection.query(
                    """
                    SELECT id, uuid, payload, topic, push_type, priority, expiration, collapse_id, token_count
                    FROM campaigns WHERE name = \(name)
                    """,
                    logger: logger
                )
                for try await (id, uuid, payload, topic, pushType, priority, expiration, collapseID, count) in rows.decode(
                    (Int, UUID, ByteBuffer, String, String, Int?, Int?, String?, Int).self
                ) {
                    let notification = try Self.notification(
                        body: Array(payload.readableBytesView), topic: topic, pushType: pushType, priority: priority,
                        expiration: expiration, collapseID: collapseID
                    )
                    return PostgresCampaign(
                        name: name, id: id, uuid: uuid, notification: notification, tokenCount: count, url: url, logger: logger
                    )
                }
            } catch {
                if let error = error as? PSQLError, error.serverInfo?[.sqlState] == "42P01" {
                    throw PostgresCampaignError(.notFound, "campaign \(name) does not exist (no campaign tables in \(url))")
                }
                throw PostgresCampaignError.database(error, doing: "--postgres \(url): reading campaign \(name)")
            }
            throw PostgresCampaignError(.notFound, "campaign \(name) does not exist")
        }
    }

    /// The stored notification, validated again as any notification is.
    private static func notification(
        body: [UInt8], topic: String, pushType: String, priority: Int?, expiration: Int?, collapseID: String?
    ) throws -> APNSPreparedNotification {
        do throws(APNSValidationError) {
            guard let type = APNSPushType(rawValue: pushType) else {
                throw APNSValidationError(.badPushType, field: "apns-push-type", rule: "unknown push type '\(pushType)'")
            }
            var headers: (priority: APNSPriority?, expiration: APNSExpiration, collapseID: APNSCollapseID?) = (nil, .none, nil)
            if let priority { headers.priority = try APNSPriority(headerValue: String(priority)) }
            if let expiration { headers.expiration = try APNSExpiration(secondsSince1970: expiration) }
            if let collapseID { headers.collapseID = try APNSCollapseID(collapseID) }
            return try APNSPreparedNotification(
                pushType: type, topic: APNSTopic(topic, pushType: type), priority: headers.priority, expiration: headers.expiration,
                collapseID: headers.collapseID, body: body
            )
        } catch {
            throw PostgresCampaignError(.database, "the stored campaign is damaged: \(error.field) \(error.rule)")
        }
    }

    // MARK: Report

    /// Every token's line, in file order, handed to `body` as read (a campaign of millions is not
    /// held in memory); returns the summary.
    public func report(_ body: (CampaignReport.Line) throws -> Void) async throws -> CampaignReport.Summary {
        try await Self.withConnection(self.url, logger: self.logger) { connection in
            var summary = CampaignReport.Summary()
            do {
                let rows = try await connection.query(
                    """
                    SELECT idx, line, token, state, status, reason, apns_id, sends, may_have_been_delivered
                    FROM campaign_tokens WHERE campaign = \(self.id) ORDER BY idx
                    """,
                    logger: self.logger
                )
                for try await row in rows.decode(TokenRow.self) {
                    let line = self.line(row)
                    summary.add(line)
                    try body(line)
                }
            } catch let error as PSQLError {
                throw PostgresCampaignError.database(error, doing: "--postgres \(self.url): reading campaign \(self.name)")
            }
            return summary
        }
    }

    typealias TokenRow = (Int, Int, String, String, Int?, String?, String?, Int, Bool)

    func line(_ row: TokenRow) -> CampaignReport.Line {
        CampaignReport.Line(
            token: row.2, index: row.0, line: row.1, state: row.3, status: row.4, reason: row.5, apnsID: row.6, sends: row.7,
            mayHaveBeenDelivered: row.8, campaign: self.uuid
        )
    }

    // MARK: Watch

    /// Hands `body` each final verdict once, as workers commit them, until every token has one;
    /// checks every `interval`. Returns the campaign's summary.
    ///
    /// Verdicts are found by the id of the transaction that committed them (`commit_xid`, on the
    /// token and on its batch): each
    /// look reads, in one snapshot, the verdicts of transactions from the previous snapshot's
    /// oldest running one on, so a transaction that commits late is never missed; a verdict
    /// read twice is handed over once.
    public func watch(every interval: Duration = .milliseconds(200), _ body: ([CampaignReport.Line]) throws -> Void) async throws
        -> CampaignReport.Summary
    {
        try await Self.withConnection(self.url, logger: self.logger) { connection in
            var seen = [Bool](repeating: false, count: self.tokenCount)
            var since = 0
            while true {
                let (lines, xmin, open) = try await connection.withTransaction(logger: self.logger) {
                    connection -> ([CampaignReport.Line], Int, Int) in
                    try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", logger: self.logger)
                    var xmin = since
                    for try await value in try await connection.query(
                        "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint", logger: self.logger
                    ).decode(Int.self) { xmin = value }
                    var lines: [CampaignReport.Line] = []
                    // The batches a transaction from `since` on committed verdicts to, then their tokens by key.
                    let rows = try await connection.query(
                        """
                        SELECT t.idx, t.line, t.token, t.state, t.status, t.reason, t.apns_id, t.sends, t.may_have_been_delivered
                        FROM campaign_batches AS b JOIN campaign_tokens AS t
                            ON t.campaign = b.campaign AND t.idx >= b.first_idx AND t.idx < b.end_idx
                        WHERE b.campaign = \(self.id) AND b.commit_xid >= \(since) AND t.commit_xid >= \(since)
                            AND t.state IN ('accepted', 'rejected')
                        ORDER BY t.commit_xid, t.idx
                        """,
                        logger: self.logger
                    )
                    for try await row in rows.decode(TokenRow.self) { lines.append(self.line(row)) }
                    var open = 0
                    for try await value in try await connection.query(
                        "SELECT count(*) FROM campaign_batches WHERE campaign = \(self.id) AND state <> 'done'", logger: self.logger
                    ).decode(Int.self) { open = value }
                    return (lines, xmin, open)
                }
                let fresh = lines.filter { line in
                    guard line.index < seen.count, !seen[line.index] else { return false }
                    seen[line.index] = true
                    return true
                }
                if !fresh.isEmpty { try body(fresh) }
                since = xmin
                if open == 0 { break }
                try await Task.sleep(for: interval)
            }
            return try await self.report { _ in }
        }
    }
}
