package import ForgeAPNs
public import struct Foundation.UUID
internal import ForgeSupport
internal import GRDB

/// A campaign's journal: one SQLite file (WAL mode) that records which tokens of a tokens file were
/// handed to the sender and which have a committed verdict, so a run killed at any point can be
/// re-run to the end with every token given exactly one final verdict.
///
/// The protocol, per batch of tokens: `markSending(_:)` commits them as `sending` (and counts the
/// send) *before* the sender gets them; `commit(verdicts:)` commits their verdicts in one
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

        /// The names of the fields that differ from `other`'s. A fingerprint whose tokens are not
        /// all read yet (``isComplete`` false on either side) is compared without the file's size and hash.
        package func changes(from other: Fingerprint) -> [String] {
            let complete = self.isComplete && other.isComplete
            return zip(self.fields, other.fields)
                .filter { $0.value != $1.value && (complete || ($0.name != "tokens_size" && $0.name != "tokens_sha256")) }
                .map(\.0.name)
        }

        /// Whether the tokens file's size and hash are known: false for a campaign begun with
        /// ``CampaignJournal/begin(_:)`` whose send has not read the file's end yet.
        package var isComplete: Bool { self.tokensSize >= 0 && !self.tokensSHA256.isEmpty }

        /// The fingerprint before its tokens file is read: size and hash left open.
        package var withTokensOpen: Fingerprint {
            var open = self
            open.tokensSize = -1
            open.tokensSHA256 = ""
            return open
        }
    }

    /// A journal that cannot be used, or a write to it that failed.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public enum Kind: Sendable, Equatable {
            /// The campaign in the journal was made with other inputs (``changed`` names them).
            case changedInputs
            /// The file cannot be opened or created, holds no campaign, or is damaged.
            case unusable
            /// A read or a commit failed mid-campaign (I/O, a full disk, a lock held by another
            /// process): what was not committed is not reported as final.
            case storage
            /// An argument out of its range (``CampaignSend/windowRange``).
            case invalidArgument
            /// Another process has the journal open for writing (``CampaignJournal/open(path:)``).
            case inUse
        }

        public var kind: Kind
        /// The fingerprint fields that differ from the journal's (empty for other failures).
        public var changed: [String]
        /// Names the journal file and what failed.
        public var description: String

        package init(kind: Kind, changed: [String] = [], description: String) {
            self.kind = kind
            self.changed = changed
            self.description = description
        }
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
    package struct Verdict: Sendable {
        package var index: Int
        package var outcome: Outcome
        package var status: Int?
        package var reason: String?
        package var apnsID: String?
        package var attempts: Int
        /// This run's own doubt: no answer for a copy that left (`failed`), or a retry after one.
        package var mayHaveBeenDelivered: Bool

        package init(
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
        package init(index: Int, _ outcome: APNSBulkVerdict.Outcome) {
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

        /// The row of a token the campaign has not read from its file yet (its send stopped
        /// before): `not_sent`, never sent.
        package static func unread(index: Int, line: Int, token: String) -> Row {
            Row(
                index: index, line: line, token: token, state: Outcome.notSent.rawValue, status: nil, reason: nil, apnsID: nil, attempts: 0,
                sends: 0, mayHaveBeenDelivered: false
            )
        }
    }

    /// The campaign's id: the first part of every push's `apns-id` (`APNSID(campaign:index:)`).
    public let campaign: UUID
    /// The file, as given.
    public let path: String
    /// The inputs of the campaign in the file; `nil` while no campaign is registered in it.
    public var fingerprint: Fingerprint? { self.stored.withLock { $0 } }
    /// Whether the file held a campaign when it was opened: a resumed run registers nothing, it
    /// only checks that its inputs are the same (``register(_:fingerprint:)`` does).
    public let isResumed: Bool
    private let database: DatabaseQueue
    private let stored: LockedBox<Fingerprint?>

    private init(campaign: UUID, path: String, fingerprint: Fingerprint?, database: DatabaseQueue) {
        self.campaign = campaign
        self.path = path
        self.isResumed = fingerprint != nil
        self.stored = LockedBox(fingerprint)
        self.database = database
    }

    /// Opens the journal at `path` in WAL mode, creating it when it does not exist. A file that
    /// holds no campaign yet (new, or a registration that did not finish) gets a new campaign id.
    ///
    /// - Important: Two processes sending from one journal send its tokens twice. A process that
    ///   sends holds ``lock(path:)`` first, for the whole run (`apnsctl send --journal` does).
    /// - Throws: ``Failure`` (`unusable`) when the file cannot be opened or created.
    public static func open(path: String) throws(Failure) -> CampaignJournal {
        do {
            let database = try DatabaseQueue(path: path)
            // WAL: a commit appends to the log, readers never block the writer; a killed process
            // loses only its uncommitted transaction.
            _ = try database.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
            try database.write { db in try Self.prepareSchema(db, path: path) }
            guard let row = try database.read({ db in try GRDB.Row.fetchOne(db, sql: "SELECT * FROM campaign WHERE id = 1") }) else {
                return CampaignJournal(campaign: UUID(), path: path, fingerprint: nil, database: database)
            }
            guard let uuid = UUID(uuidString: row["uuid"]) else {
                throw Failure(kind: .unusable, description: "journal '\(path)': the campaign id is damaged")
            }
            return CampaignJournal(campaign: uuid, path: path, fingerprint: Self.fingerprint(row), database: database)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(kind: .unusable, description: "journal '\(path)': \(Self.message(error))")
        }
    }

    /// Takes the journal at `path` for this process alone, until the returned lock is released
    /// (it goes out of use) or the process ends, however it ends: an exclusive `flock` on
    /// `<path>-lock`, which the kernel releases when the process dies (SIGKILL included). Readers
    /// (``openForReading(path:)``) need no lock.
    /// - Throws: ``Failure`` `inUse` naming the process that holds it and when it started.
    public static func lock(path: String) throws(Failure) -> Lock {
        Lock(try JournalLock(journal: path))
    }

    /// This process's hold on a journal (``lock(path:)``); released when it is no longer used.
    public struct Lock: Sendable {
        private let lock: JournalLock
        fileprivate init(_ lock: JournalLock) { self.lock = lock }
    }

    /// Checks that `fingerprint` is the campaign's: run it before anything is sent on resume.
    /// - Throws: ``Failure`` (`changedInputs`) naming every field that differs.
    package func verify(_ fingerprint: Fingerprint) throws(Failure) {
        guard let stored = self.fingerprint else {
            throw Failure(kind: .unusable, description: "journal '\(self.path)': no campaign registered in it")
        }
        let changed = fingerprint.changes(from: stored)
        guard changed.isEmpty else {
            throw Failure(
                kind: .changedInputs, changed: changed,
                description: "journal '\(self.path)' is a campaign with other inputs: changed \(changed.joined(separator: ", ")) "
                    + "(resume with the same inputs, or start a new journal)"
            )
        }
    }

    /// Creates the tables in a new file, or checks that the file is in this code's format.
    private static func prepareSchema(_ db: Database, path: String) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let tables = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table'") ?? 0
        if version == 0 && tables == 0 {
            try db.execute(sql: JournalChunks.schema + "PRAGMA user_version = \(JournalChunks.format);")
        } else if version != JournalChunks.format {
            throw Failure(
                kind: .unusable,
                description: "journal '\(path)' is not a journal of this version (format \(version), expected \(JournalChunks.format)); "
                    + "finish it with the version that made it, or start a new journal"
            )
        }
    }

    // MARK: Registering the tokens

    /// Registers a new campaign's tokens as they are read, in batched transactions; the campaign
    /// itself (its fingerprint) is written last, by ``finish(fingerprint:)``, so a registration cut
    /// short is started over by the next run. Memory holds two batches, whatever the file's size:
    /// one being written while the next is read (the reading and the writing run side by side).
    package final class Registration {
        private let journal: CampaignJournal
        private let batch: Int
        private var buffer: [Entry] = []
        /// The batch being written, if any.
        private var writing: BackgroundWrite<Void>?
        /// Tokens registered so far.
        package private(set) var count = 0

        fileprivate init(journal: CampaignJournal, batch: Int) {
            self.journal = journal
            self.batch = batch
            self.buffer.reserveCapacity(batch)
        }

        /// Adds the file's next token; a full batch is handed to the journal's writer.
        /// - Throws: ``Failure`` (`invalidArgument`) when `entry.index` is not the next index (tokens
        ///   are registered in order, from 0, with no gap); (`storage`) when writing the batch before
        ///   failed.
        package func add(_ entry: Entry) async throws(Failure) {
            guard entry.index == self.count else {
                throw Failure(kind: .invalidArgument, description: "registering tokens: index \(entry.index) given, \(self.count) expected (in order, from 0)")
            }
            self.buffer.append(entry)
            self.count += 1
            if self.buffer.count >= self.batch { try await self.flush() }
        }

        /// Commits the last batch and the campaign's fingerprint: from now on the journal resumes.
        package func finish(fingerprint: Fingerprint) async throws(Failure) {
            try await self.flush()
            try await self.writing?.result()
            self.writing = nil
            let journal = self.journal
            try await journal.writing("registering the campaign") { db in try journal.insertCampaign(fingerprint, db: db) }
            journal.stored.withLock { $0 = fingerprint }
        }

        /// Hands the buffer to the journal's writer once the batch before it is written.
        private func flush() async throws(Failure) {
            guard !self.buffer.isEmpty else { return }
            try await self.writing?.result()
            let entries = self.buffer
            self.buffer = []
            self.buffer.reserveCapacity(self.batch)
            self.writing = self.journal.startWriting("registering tokens") { db in
                var start = entries.startIndex
                while start < entries.endIndex {
                    let end = Swift.min(start + JournalChunks.size, entries.endIndex)
                    try JournalChunks.insert(entries[start..<end], db: db)
                    start = end
                }
            }
        }
    }

    /// Starts registering a new campaign's tokens (rows an unfinished registration left are removed).
    /// - Parameter batch: tokens committed in one transaction (rounded up to whole chunks of 1024).
    /// - Throws: ``Failure`` (`unusable`) when the journal already holds a campaign: resume it instead.
    package func registration(batch: Int = 20_000) async throws(Failure) -> Registration {
        guard self.fingerprint == nil else {
            throw Failure(kind: .unusable, description: "journal '\(self.path)': its campaign is registered already; resume it")
        }
        try await self.writing("starting the registration") { db in
            try db.execute(sql: "DELETE FROM chunk; DELETE FROM chunk_state; DELETE FROM verdict_detail")
        }
        // Whole chunks per transaction: only the last chunk of the file is short.
        let chunks = Swift.max(1, (batch + JournalChunks.size - 1) / JournalChunks.size)
        return Registration(journal: self, batch: chunks * JournalChunks.size)
    }

    /// Registers `entries` as a new campaign with `fingerprint`; on a journal that holds a campaign
    /// already, only checks that `fingerprint` is its (registering nothing).
    public func register(_ entries: some Sequence<Entry>, fingerprint: Fingerprint) async throws(Failure) {
        guard self.fingerprint == nil else { return try self.verify(fingerprint) }
        let registration = try await self.registration()
        for entry in entries { try await registration.add(entry) }
        try await registration.finish(fingerprint: fingerprint)
    }

    /// Begins a new campaign whose tokens its send registers as it reads them (the `read`
    /// parameter of ``send(_:client:window:read:)``): nothing is read before the first push, and
    /// the file is read once. The fingerprint's tokens size and hash are left open until the send
    /// reads the file's end; until then a resumed run compares the other fields, and the tokens
    /// registered so far (``rows(from:)``) against its file, before it sends anything.
    /// - Throws: ``Failure`` (`unusable`) when the journal holds a campaign already: resume it.
    public func begin(_ fingerprint: Fingerprint) async throws(Failure) {
        guard self.fingerprint == nil else {
            throw Failure(kind: .unusable, description: "journal '\(self.path)': its campaign is registered already; resume it")
        }
        let open = fingerprint.withTokensOpen
        try await self.writing("beginning the campaign") { db in
            try db.execute(sql: "DELETE FROM chunk; DELETE FROM chunk_state; DELETE FROM verdict_detail")
            try self.insertCampaign(open, db: db)
        }
        self.stored.withLock { $0 = open }
    }

    /// Writes the campaign's row: its id and `fingerprint`.
    private func insertCampaign(_ fingerprint: Fingerprint, db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO campaign (id, uuid, payload_sha256, topic, push_type, environment, tokens_path, tokens_size, tokens_sha256)
                VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: StatementArguments([self.campaign.uuidString] + fingerprint.fields.map(\.value))
        )
    }

    /// The next tokens of a campaign whose registration is not complete, as its send reads them.
    public struct TokenPage: Sendable {
        /// Consecutive entries, the first at the index after the last registered one.
        public var entries: [Entry]
        /// With the last page (the tokens file read to its end): the file's size and SHA-256 (hex),
        /// which complete the fingerprint.
        public var end: (size: Int, sha256: String)?

        public init(entries: [Entry], end: (size: Int, sha256: String)? = nil) {
            self.entries = entries
            self.end = end
        }
    }

    /// Registers `page`'s tokens as `sending` (sent once), with the file's size and hash when it is
    /// the last: the send's next page, in the transaction that hands it to the sender.
    private func registerSending(_ page: TokenPage, db: Database) throws -> [Claimed] {
        let registered = try JournalChunks.count(db: db)
        if let first = page.entries.first, first.index != registered {
            throw Failure(kind: .invalidArgument, description: "journal '\(self.path)': token index \(first.index) read, \(registered) expected (in order, from 0)")
        }
        guard !page.entries.isEmpty || page.end != nil else {
            throw Failure(kind: .invalidArgument, description: "journal '\(self.path)': no tokens read before the end of the file")
        }
        try JournalChunks.append(page.entries, db: db)
        if let end = page.end {
            try db.execute(sql: "UPDATE campaign SET tokens_size = ?, tokens_sha256 = ? WHERE id = 1", arguments: [end.size, end.sha256])
        }
        return page.entries.map { Claimed(entry: $0, sentBefore: false) }
    }

    // MARK: The send protocol

    /// Commits the tokens at `indices` as `sending`, counting a send for each, before the sender
    /// gets them: a token sent a second time is marked `may_have_been_delivered`.
    package func markSending(_ indices: [Int]) async throws(Failure) {
        try await self.writing("marking tokens as sending") { db in
            try JournalChunks.updateStates(of: indices, index: { $0 }, db: db) { state, offset, _ in
                _ = state.markSending(at: offset)
            }
        }
    }

    /// A token handed to the sender, and whether an earlier run sent it (so this send may duplicate it).
    struct Claimed: Sendable {
        var entry: Entry
        var sentBefore: Bool
    }

    /// Takes the next `limit` tokens after index `after` that have no final verdict and marks them
    /// `sending`: the sender's next page, read from the journal, not from memory.
    private static func claim(after: Int, limit: Int, db: Database) throws -> [Claimed] {
        var claimed: [Claimed] = []
        claimed.reserveCapacity(limit)
        var next = after + 1
        // Chunk by chunk, until the page is full or the last chunk (the one `next` is past the end of) is read.
        while claimed.count < limit, var state = try JournalChunks.state(of: next, db: db), next - state.first < state.states.count {
            var offsets: [Int] = []
            for offset in (next - state.first)..<state.states.count where !state.state(at: offset).isFinal {
                offsets.append(offset)
                if claimed.count + offsets.count == limit { break }
            }
            if !offsets.isEmpty {
                // The chunk's tokens are read only when some of them are to send.
                let entries = try JournalChunks.entries(first: state.first, db: db)
                for offset in offsets where offset < entries.count {
                    claimed.append(Claimed(entry: entries[offset], sentBefore: state.markSending(at: offset)))
                }
                try JournalChunks.save(state, db: db)
            }
            next = state.first + state.states.count
        }
        return claimed
    }

    /// A page of the send, and where its reading stands after it.
    struct Page: Sendable {
        var claimed: [Claimed] = []
        /// The registered tokens are all claimed.
        var journalRead: Bool
        /// The tokens file is read to its end.
        var fileRead: Bool
        /// The file's size and hash, with its last page.
        var end: (size: Int, sha256: String)?
    }

    /// Starts taking the send's next page, in one transaction on the journal's writer, and returns at
    /// once: the tokens after index `after` with no final verdict (marked `sending`), then, once
    /// those are all taken, the file's next tokens (`read` runs on the writer too, off the sender's
    /// path), registered as `sending`. The page is committed before the sender gets any of it.
    func startPage(
        after: Int, limit: Int, journalRead: Bool, fileRead: Bool,
        read: (@Sendable (Int) throws(Failure) -> TokenPage)?
    ) -> BackgroundWrite<Page> {
        self.startWriting("taking the next tokens to send", { db throws -> Page in
            var page = Page(journalRead: journalRead, fileRead: fileRead)
            if !journalRead {
                page.claimed = try Self.claim(after: after, limit: limit, db: db)
                page.journalRead = page.claimed.count < limit
                if !page.claimed.isEmpty { return page }
            }
            guard let read, !fileRead else { return page }
            let tokens = try read(limit)
            page.fileRead = tokens.end != nil
            page.end = tokens.end
            page.claimed = try self.registerSending(tokens, db: db)
            return page
        }, then: { page in
            // The file read to its end completes the fingerprint.
            guard let end = page.end else { return }
            self.stored.withLock { stored in
                stored?.tokensSize = end.size
                stored?.tokensSHA256 = end.sha256
            }
        })
    }

    /// Commits a batch of verdicts in one transaction. A `not_sent` verdict takes back its send
    /// (the push never left); the flag an earlier send set stays, as that copy may still have left.
    ///
    /// An accepted verdict at the first try with the campaign's `apns-id` is one state byte; any
    /// other verdict (or one replacing such a verdict) also keeps its status, reason, `apns-id` and
    /// attempts in a detail row.
    package func commit(verdicts: [Verdict]) async throws(Failure) {
        guard let lower = verdicts.lazy.map(\.index).min(), let upper = verdicts.lazy.map(\.index).max() else { return }
        let campaign = self.campaign
        try await self.writing("committing \(verdicts.count) verdicts") { db in
            let detailed = try JournalChunks.detailed(from: lower, through: upper, db: db)
            try JournalChunks.updateStates(of: verdicts, index: \.index, db: db) { state, offset, verdict in
                if verdict.outcome == .notSent {
                    state.takeBack(at: offset)
                } else {
                    state.set(JournalChunks.TokenState(verdict.outcome), at: offset, flag: verdict.mayHaveBeenDelivered)
                }
                if detailed.contains(verdict.index) || !verdict.isPlainAcceptance(campaign: campaign) {
                    try JournalChunks.record(verdict, db: db)
                }
            }
        }
    }

    // MARK: Reading

    /// How far a campaign is: its tokens, those with a final verdict, and those sent with no final
    /// verdict (`sending`: no committed verdict; `failed`: no answer), which the next run sends
    /// again, flagged `may_have_been_delivered`.
    public struct Progress: Sendable, Equatable {
        public var total: Int
        public var final: Int
        public var unsettled: Int
        /// What the next run sends.
        public var remaining: Int { self.total - self.final }

        package init(total: Int, final: Int, unsettled: Int) {
            self.total = total
            self.final = final
            self.unsettled = unsettled
        }
    }

    public func progress() async throws(Failure) -> Progress {
        try await self.reading("counting tokens") { db in
            try JournalChunks.progress(db: db)
        }
    }

    /// Every token's row, by index. For a large campaign, read it in pages with ``rows(from:)``.
    public func report() async throws -> [Row] {
        var rows: [Row] = []
        while true {
            let page = try await self.rows(from: rows.count)
            if page.isEmpty { return rows }
            rows += page
        }
    }

    /// The rows of the tokens from index `first` to the end of its chunk of 1024 tokens (empty past
    /// the last token): a report a page at a time, in bounded memory.
    public func rows(from first: Int) async throws(Failure) -> [Row] {
        try await self.reading("reading tokens") { db in
            guard first >= 0, let state = try JournalChunks.state(of: first, db: db) else { return [] }
            let entries = try JournalChunks.entries(first: state.first, db: db)
            guard first - state.first < entries.count else { return [] }
            let details = try JournalChunks.details(from: first, through: state.first + entries.count - 1, db: db)
            return entries[(first - state.first)...].map { entry in
                let offset = entry.index - state.first
                let token = state.state(at: offset)
                let detail = details[entry.index]
                return Row(
                    index: entry.index, line: entry.line, token: entry.token, state: token.name,
                    status: detail?.status ?? (token == .accepted ? 200 : nil), reason: detail?.reason, apnsID: detail?.apnsID,
                    attempts: detail?.attempts ?? (token == .accepted ? 1 : 0), sends: Int(state.sends[offset]),
                    mayHaveBeenDelivered: state.isFlagged(at: offset)
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
            let row = try database.read { db in
                guard try Int.fetchOne(db, sql: "PRAGMA user_version") == JournalChunks.format else { return GRDB.Row?.none }
                return try GRDB.Row.fetchOne(db, sql: "SELECT * FROM campaign WHERE id = 1")
            }
            guard let row, let campaign = UUID(uuidString: row["uuid"]) else {
                throw Failure(kind: .unusable, description: "--journal '\(path)': no campaign of this version in it")
            }
            return CampaignJournal(campaign: campaign, path: path, fingerprint: Self.fingerprint(row), database: database)
        } catch let error as DatabaseError {
            throw Failure(kind: .unusable, description: "--journal '\(path)': \(error.message ?? error.description)")
        }
    }

    private static func fingerprint(_ row: GRDB.Row) -> Fingerprint {
        Fingerprint(
            payloadSHA256: row["payload_sha256"], topic: row["topic"], pushType: row["push_type"], environment: row["environment"],
            tokensPath: row["tokens_path"], tokensSize: row["tokens_size"], tokensSHA256: row["tokens_sha256"]
        )
    }

    // MARK: Errors

    /// Runs `body` in a write transaction; a failure is a ``Failure`` (`storage`) naming the file and `what`.
    private func writing<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(Failure) -> T {
        do {
            return try await self.database.write(body)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(kind: .storage, description: "journal '\(self.path)': \(what) failed: \(Self.message(error))")
        }
    }

    /// Starts `body` in a write transaction on the journal's writer and returns at once; the
    /// transaction's outcome is awaited from the ``BackgroundWrite``. `then` runs once it is committed.
    private func startWriting<T: Sendable>(
        _ what: String, _ body: @escaping @Sendable (Database) throws -> T, then: @escaping @Sendable (T) -> Void = { _ in }
    ) -> BackgroundWrite<T> {
        let write = BackgroundWrite<T>()
        let path = self.path
        self.database.asyncWrite(body) { _, result in
            let outcome = result.mapError { error in
                error as? Failure ?? Failure(kind: .storage, description: "journal '\(path)': \(what) failed: \(Self.message(error))")
            }
            if case .success(let value) = outcome { then(value) }
            write.complete(outcome)
        }
        return write
    }

    private func reading<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Database) throws -> T) async throws(Failure) -> T {
        do {
            return try await self.database.read(body)
        } catch {
            throw Failure(kind: .storage, description: "journal '\(self.path)': \(what) failed: \(Self.message(error))")
        }
    }

    private static func message(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? error.description }
        return "\(error)"
    }
}

/// A write transaction running on the journal's writer queue, awaited later: its outcome, once.
final class BackgroundWrite<Value: Sendable>: Sendable {
    private let outcome = OneShot<Result<Value, CampaignJournal.Failure>>()

    /// The transaction's outcome (the first one given, if called twice).
    func complete(_ outcome: Result<Value, CampaignJournal.Failure>) {
        self.outcome.resolve(outcome)
    }

    /// Waits for the transaction; throws its failure.
    func result() async throws(CampaignJournal.Failure) -> Value {
        try await self.outcome.value.get()
    }
}
