public import ForgeAPNs
public import struct Foundation.UUID
internal import GRDB

/// A campaign's journal: one SQLite file (WAL mode) that records which tokens of a tokens file were
/// handed to the sender and which have a committed verdict, so a run killed at any point can be
/// re-run to the end with every token given exactly one final verdict.
///
/// The protocol, per batch of tokens: ``markSending(_:)`` commits them as `sending` (and counts the
/// send) *before* the sender gets them; ``commit(verdicts:)`` commits their verdicts in one
/// transaction. After a crash, a token still `sending` was perhaps delivered: a resumed run sends it
/// again, and its second send marks it `may_have_been_delivered`.
///
/// Final verdicts are `accepted` and `rejected`. `failed` (no answer, a copy may have reached APNs)
/// and `not_sent` are not final: a resumed run sends those tokens again.
public final class CampaignJournal: Sendable {
    /// What a campaign sends, field by field: a resumed run must send the same.
    public struct Fingerprint: Sendable, Equatable {
        /// SHA-256 (hex) of the payload's bytes.
        public var payloadSHA256: String
        public var topic: String
        public var pushType: String
        /// The endpoint: `production`, `sandbox` or a URL.
        public var environment: String
        public var tokensPath: String
        public var tokensSize: Int
        /// SHA-256 (hex) of the tokens file's bytes.
        public var tokensSHA256: String

        public init(
            payloadSHA256: String, topic: String, pushType: String, environment: String, tokensPath: String, tokensSize: Int,
            tokensSHA256: String
        ) {
            self.payloadSHA256 = payloadSHA256
            self.topic = topic
            self.pushType = pushType
            self.environment = environment
            self.tokensPath = tokensPath
            self.tokensSize = tokensSize
            self.tokensSHA256 = tokensSHA256
        }

        /// The fields as the journal's columns name them, with their values.
        var fields: [(name: String, value: String)] {
            [
                ("payload", self.payloadSHA256), ("topic", self.topic), ("push_type", self.pushType),
                ("environment", self.environment), ("tokens_path", self.tokensPath), ("tokens_size", String(self.tokensSize)),
                ("tokens_sha256", self.tokensSHA256),
            ]
        }

        /// The names of the fields that differ from `other`'s.
        public func changes(from other: Fingerprint) -> [String] {
            zip(self.fields, other.fields).filter { $0.value != $1.value }.map(\.0.name)
        }
    }

    /// A journal that cannot be used.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// The fingerprint fields that differ from the journal's (empty for other failures).
        public var changed: [String]
        public var description: String
    }

    /// One token of the file: its 0-based position among the file's tokens, its line, its hex.
    public struct Entry: Sendable, Equatable {
        public var index: Int
        public var line: Int
        public var token: String

        public init(index: Int, line: Int, token: String) {
            self.index = index
            self.line = line
            self.token = token
        }
    }

    /// A token's outcome as the journal and its report name it.
    public enum Outcome: String, Sendable, CaseIterable {
        case accepted, rejected, failed
        case notSent = "not_sent"

        /// Whether a resumed run leaves the token alone.
        public var isFinal: Bool { self == .accepted || self == .rejected }
    }

    /// A verdict to commit, for the token at `index` of the file.
    public struct Verdict: Sendable {
        public var index: Int
        public var outcome: Outcome
        public var status: Int?
        public var reason: String?
        public var apnsID: String?
        public var attempts: Int
        /// This run's own doubt: no answer for a copy that left (`failed`), or a retry after one.
        public var mayHaveBeenDelivered: Bool

        public init(
            index: Int, outcome: Outcome, status: Int? = nil, reason: String? = nil, apnsID: String? = nil, attempts: Int = 0,
            mayHaveBeenDelivered: Bool = false
        ) {
            self.index = index
            self.outcome = outcome
            self.status = status
            self.reason = reason
            self.apnsID = apnsID
            self.attempts = attempts
            self.mayHaveBeenDelivered = mayHaveBeenDelivered
        }

        /// A bulk send's verdict for the file's token at `index`.
        public init(index: Int, _ outcome: APNSBulkVerdict.Outcome) {
            switch outcome {
            case .accepted(let result):
                self.init(
                    index: index, outcome: .accepted, status: 200, apnsID: result.apnsID, attempts: result.attempts,
                    mayHaveBeenDelivered: result.mayHaveBeenDeliveredTwice
                )
            case .rejected(let error):
                self.init(index: index, outcome: .rejected, error: error)
            case .failed(let error):
                self.init(index: index, outcome: .failed, error: error)
            case .notSent(let error):
                self.init(index: index, outcome: .notSent, error: error)
            }
        }

        private init(index: Int, outcome: Outcome, error: APNSError) {
            let reason = error.reason.map(\.rawValue) ?? (error.detail.isEmpty ? error.kind.rawValue : error.detail)
            self.init(
                index: index, outcome: outcome, status: error.status, reason: reason, apnsID: error.apnsID, attempts: error.attempts,
                mayHaveBeenDelivered: error.mayHaveBeenDelivered
            )
        }
    }

    /// One token's row as the report shows it.
    public struct Row: Sendable, Equatable {
        public var index: Int
        public var line: Int
        public var token: String
        /// `sending` (sent, no committed verdict) or an ``Outcome``'s raw value.
        public var state: String
        public var status: Int?
        public var reason: String?
        public var apnsID: String?
        public var attempts: Int
        /// How many runs handed it to the sender.
        public var sends: Int
        public var mayHaveBeenDelivered: Bool
    }

    /// The campaign's id: the first part of every push's `apns-id` (``APNSID/init(campaign:index:)``).
    public let campaign: UUID
    private let database: DatabaseQueue

    private init(campaign: UUID, database: DatabaseQueue) {
        self.campaign = campaign
        self.database = database
    }

    /// Opens the journal at `path` in WAL mode, creating it (with a new campaign id) when it does
    /// not exist or holds no campaign.
    /// - Returns: the journal, and whether it resumes an earlier run's campaign.
    /// - Throws: ``Failure`` naming the fields when `fingerprint` differs from the campaign's.
    public static func open(path: String, fingerprint: Fingerprint) throws -> (journal: CampaignJournal, resumed: Bool) {
        let database: DatabaseQueue
        do {
            database = try DatabaseQueue(path: path)
            // WAL: a commit appends to the log, readers never block the writer; a killed process
            // loses only its uncommitted transaction.
            _ = try database.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
            try database.write { db in
                try db.execute(sql: Self.schema)
            }
        } catch let error as DatabaseError {
            throw Failure(changed: [], description: "--journal '\(path)': \(error.message ?? error.description)")
        }
        return try database.write { db -> (CampaignJournal, Bool) in
            if let row = try GRDB.Row.fetchOne(db, sql: "SELECT * FROM campaign WHERE id = 1") {
                let stored = Fingerprint(
                    payloadSHA256: row["payload_sha256"], topic: row["topic"], pushType: row["push_type"],
                    environment: row["environment"], tokensPath: row["tokens_path"], tokensSize: row["tokens_size"],
                    tokensSHA256: row["tokens_sha256"]
                )
                let changed = fingerprint.changes(from: stored)
                guard changed.isEmpty else {
                    throw Failure(
                        changed: changed,
                        description: "--journal '\(path)' is a campaign with other inputs: changed \(changed.joined(separator: ", ")) "
                            + "(resume with the same command, or start a new journal)"
                    )
                }
                guard let uuid = UUID(uuidString: row["uuid"]) else {
                    throw Failure(changed: [], description: "--journal '\(path)': the campaign id is damaged")
                }
                return (CampaignJournal(campaign: uuid, database: database), true)
            }
            let uuid = UUID()
            var arguments: StatementArguments = [uuid.uuidString]
            arguments += StatementArguments(fingerprint.fields.map(\.value))
            try db.execute(
                sql: """
                    INSERT INTO campaign (id, uuid, payload_sha256, topic, push_type, environment, tokens_path, tokens_size, tokens_sha256)
                    VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: arguments
            )
            return (CampaignJournal(campaign: uuid, database: database), false)
        }
    }

    private static let schema = """
        CREATE TABLE IF NOT EXISTS campaign (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            uuid TEXT NOT NULL,
            payload_sha256 TEXT NOT NULL, topic TEXT NOT NULL, push_type TEXT NOT NULL, environment TEXT NOT NULL,
            tokens_path TEXT NOT NULL, tokens_size INTEGER NOT NULL, tokens_sha256 TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS token (
            idx INTEGER PRIMARY KEY,
            token TEXT NOT NULL,
            line INTEGER NOT NULL,
            state TEXT NOT NULL DEFAULT 'not_sent',
            status INTEGER, reason TEXT, apns_id TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            may_have_been_delivered INTEGER NOT NULL DEFAULT 0,
            sends INTEGER NOT NULL DEFAULT 0
        );
        """

    /// Records the file's tokens (one row per index, `not_sent`); rows that exist are kept as they are.
    public func register(_ entries: [Entry]) async throws {
        try await self.database.write { db in
            let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO token (idx, token, line) VALUES (?, ?, ?)")
            for entry in entries { try statement.execute(arguments: [entry.index, entry.token, entry.line]) }
        }
    }

    /// Commits the tokens at `indices` as `sending`, counting a send for each, before the sender
    /// gets them: a token sent a second time is marked `may_have_been_delivered`.
    public func markSending(_ indices: [Int]) async throws {
        try await self.database.write { db in
            let statement = try db.cachedStatement(
                sql: """
                    UPDATE token SET state = 'sending', sends = sends + 1,
                        may_have_been_delivered = (may_have_been_delivered OR sends >= 1) WHERE idx = ?
                    """
            )
            for index in indices { try statement.execute(arguments: [index]) }
        }
    }

    /// Commits a batch of verdicts in one transaction. A `not_sent` verdict takes back its send
    /// (the push never left); the flag an earlier send set stays, as that copy may still have left.
    public func commit(verdicts: [Verdict]) async throws {
        try await self.database.write { db in
            let sent = try db.cachedStatement(
                sql: """
                    UPDATE token SET state = ?, status = ?, reason = ?, apns_id = ?, attempts = attempts + ?,
                        may_have_been_delivered = (may_have_been_delivered OR ?) WHERE idx = ?
                    """
            )
            let unsent = try db.cachedStatement(
                sql: """
                    UPDATE token SET state = 'not_sent', status = ?, reason = ?, sends = max(sends - 1, 0) WHERE idx = ?
                    """
            )
            for verdict in verdicts {
                if verdict.outcome == .notSent {
                    try unsent.execute(arguments: [verdict.status, verdict.reason, verdict.index])
                } else {
                    try sent.execute(arguments: [
                        verdict.outcome.rawValue, verdict.status, verdict.reason, verdict.apnsID, verdict.attempts,
                        verdict.mayHaveBeenDelivered, verdict.index,
                    ])
                }
            }
        }
    }

    /// The indices of tokens with a final verdict: a resumed run skips them.
    public func finalIndices() async throws -> Set<Int> {
        try await self.database.read { db in
            Set(try Int.fetchAll(db, sql: "SELECT idx FROM token WHERE state IN ('accepted', 'rejected')"))
        }
    }

    /// The indices of tokens sent with no committed verdict (`sending`) or with no answer (`failed`):
    /// a resumed run sends them again, flagged `may_have_been_delivered`.
    public func unsettled() async throws -> [Int] {
        try await self.database.read { db in
            try Int.fetchAll(db, sql: "SELECT idx FROM token WHERE state IN ('sending', 'failed') ORDER BY idx")
        }
    }

    /// Every token's row, by index.
    public func report() async throws -> [Row] {
        try await self.database.read { db in
            try GRDB.Row.fetchAll(db, sql: "SELECT * FROM token ORDER BY idx").map { row in
                Row(
                    index: row["idx"], line: row["line"], token: row["token"], state: row["state"], status: row["status"],
                    reason: row["reason"], apnsID: row["apns_id"], attempts: row["attempts"], sends: row["sends"],
                    mayHaveBeenDelivered: row["may_have_been_delivered"]
                )
            }
        }
    }

    /// Opens an existing journal to read its report, never creating one.
    public static func openForReading(path: String) throws -> CampaignJournal {
        var configuration = Configuration()
        configuration.readonly = true
        do {
            let database = try DatabaseQueue(path: path, configuration: configuration)
            let uuid = try database.read { db in try String.fetchOne(db, sql: "SELECT uuid FROM campaign WHERE id = 1") }
            guard let uuid, let campaign = UUID(uuidString: uuid) else {
                throw Failure(changed: [], description: "--journal '\(path)': no campaign in it")
            }
            return CampaignJournal(campaign: campaign, database: database)
        } catch let error as DatabaseError {
            throw Failure(changed: [], description: "--journal '\(path)': \(error.message ?? error.description)")
        }
    }
}
