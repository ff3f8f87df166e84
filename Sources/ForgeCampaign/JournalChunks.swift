import struct Foundation.Data
import struct Foundation.UUID
internal import ForgeAPNsCore
internal import GRDB

/// How the journal stores a campaign's tokens: in chunks of ``size`` consecutive tokens of the
/// file, one row each, so that a page claimed or a batch of verdicts committed rewrites one small
/// row per chunk instead of one row per token (a row per token cost more CPU than the send itself).
///
/// - `chunk`: the chunk's tokens (hex, one per line) and their lines in the file, written once.
/// - `chunk_state`: per token, one byte of state (``TokenState``, with ``flagBit`` set once a copy
///   may have been delivered) and one byte of sends (how many runs handed it to the sender,
///   saturating at 255).
/// - `verdict_detail`: the verdicts that say more than "accepted, first try, with the campaign's
///   apns-id": rejections, failures, retries, a `not_sent` reason. Usually empty.
enum JournalChunks {
    /// Tokens per chunk.
    static let size = 1024
    /// The file format this code writes (`PRAGMA user_version`).
    static let format = 2

    static let schema = """
        CREATE TABLE IF NOT EXISTS campaign (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            uuid TEXT NOT NULL,
            payload_sha256 TEXT NOT NULL, topic TEXT NOT NULL, push_type TEXT NOT NULL, environment TEXT NOT NULL,
            tokens_path TEXT NOT NULL, tokens_size INTEGER NOT NULL, tokens_sha256 TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS chunk (
            first_idx INTEGER PRIMARY KEY,
            tokens TEXT NOT NULL,
            lines TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS chunk_state (
            first_idx INTEGER PRIMARY KEY,
            states BLOB NOT NULL,
            sends BLOB NOT NULL
        );
        CREATE TABLE IF NOT EXISTS verdict_detail (
            idx INTEGER PRIMARY KEY,
            status INTEGER, reason TEXT, apns_id TEXT,
            attempts INTEGER NOT NULL DEFAULT 0
        );
        """

    /// A token's state byte, without its flag.
    enum TokenState: UInt8 {
        case notSent = 0, sending = 1, accepted = 2, rejected = 3, failed = 4

        var name: String {
            switch self {
            case .notSent: CampaignJournal.Outcome.notSent.rawValue
            case .sending: "sending"
            case .accepted: CampaignJournal.Outcome.accepted.rawValue
            case .rejected: CampaignJournal.Outcome.rejected.rawValue
            case .failed: CampaignJournal.Outcome.failed.rawValue
            }
        }

        init(_ outcome: CampaignJournal.Outcome) {
            switch outcome {
            case .accepted: self = .accepted
            case .rejected: self = .rejected
            case .failed: self = .failed
            case .notSent: self = .notSent
            }
        }

        var isFinal: Bool { self == .accepted || self == .rejected }
    }

    /// Set in a state byte once a copy of the token may have been delivered (sent again, or its own doubt).
    static let flagBit: UInt8 = 0x80

    static func chunkStart(of index: Int) -> Int { index - index % Self.size }

    // MARK: Tokens

    /// Writes the tokens of one chunk (consecutive, the first at a multiple of ``size``) and its
    /// state: not sent, or (`sending`) handed to the sender once.
    static func insert(_ entries: ArraySlice<CampaignJournal.Entry>, sending: Bool = false, db: Database) throws {
        guard let first = entries.first?.index else { return }
        try db.cachedStatement(sql: "INSERT INTO chunk (first_idx, tokens, lines) VALUES (?, ?, ?)")
            .execute(arguments: [first, Self.joinedTokens(entries), Self.encode(lines: entries.map(\.line))])
        let states = Data(repeating: sending ? TokenState.sending.rawValue : 0, count: entries.count)
        let sends = Data(repeating: sending ? 1 : 0, count: entries.count)
        try db.cachedStatement(sql: "INSERT INTO chunk_state (first_idx, states, sends) VALUES (?, ?, ?)")
            .execute(arguments: [first, states, sends])
    }

    /// Registers `entries` (consecutive, from the first index not registered) as `sending`: new
    /// chunks, and the last chunk filled up when it is short (a page of the send need not end on
    /// a chunk's end).
    static func append(_ entries: [CampaignJournal.Entry], db: Database) throws {
        var start = entries.startIndex
        while start < entries.endIndex {
            let index = entries[start].index
            let first = Self.chunkStart(of: index)
            let end = Swift.min(entries.endIndex, start + (first + Self.size - index))
            if index == first {
                try Self.insert(entries[start..<end], sending: true, db: db)
            } else {
                try Self.extend(first: first, with: entries[start..<end], db: db)
            }
            start = end
        }
    }

    /// Adds `entries` (sent once) to the end of the short chunk that starts at `first`.
    private static func extend(first: Int, with entries: ArraySlice<CampaignJournal.Entry>, db: Database) throws {
        guard var state = try Self.state(of: first, db: db),
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT tokens, lines FROM chunk WHERE first_idx = ?"), arguments: [first])
        else { throw DatabaseError(message: "chunk \(first) is missing") }
        let tokens: String = row[0]
        let lines = Self.decode(lines: row[1], count: state.states.count) + entries.map(\.line)
        try db.cachedStatement(sql: "UPDATE chunk SET tokens = ?, lines = ? WHERE first_idx = ?")
            .execute(arguments: [tokens + "\n" + Self.joinedTokens(entries), Self.encode(lines: lines), first])
        state.states += repeatElement(TokenState.sending.rawValue, count: entries.count)
        state.sends += repeatElement(1, count: entries.count)
        try Self.save(state, db: db)
    }

    /// How many tokens are registered: the last chunk's start and length.
    static func count(db: Database) throws -> Int {
        let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT first_idx, length(states) FROM chunk_state ORDER BY first_idx DESC LIMIT 1"))
        guard let row else { return 0 }
        let first: Int = row[0]
        let length: Int = row[1]
        return first + length
    }

    /// The tokens, one a line, copied into one string's storage (`joined` walks them a character at a time).
    private static func joinedTokens(_ entries: ArraySlice<CampaignJournal.Entry>) -> String {
        let length = entries.reduce(0) { $0 + $1.token.utf8.count + 1 } - 1
        return String(unsafeUninitializedCapacity: Swift.max(length, 0)) { text in
            var written = 0
            for var token in entries.lazy.map(\.token) {
                if written > 0 {
                    text[written] = UInt8(ascii: "\n")
                    written += 1
                }
                token.withUTF8 { bytes in
                    _ = UnsafeMutableBufferPointer(rebasing: text[written..<written + bytes.count]).initialize(from: bytes)
                    written += bytes.count
                }
            }
            return written
        }
    }

    /// The tokens of the chunk that starts at `first`, in order.
    static func entries(first: Int, db: Database) throws -> [CampaignJournal.Entry] {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT tokens, lines FROM chunk WHERE first_idx = ?"), arguments: [first])
        else { return [] }
        let tokens = Self.lines(of: row[0])
        let lines = Self.decode(lines: row[1], count: tokens.count)
        return zip(tokens, lines).enumerated().map { offset, pair in
            CampaignJournal.Entry(index: first + offset, line: pair.1, token: pair.0)
        }
    }

    /// A chunk's line numbers: `+N` when they run on from N, one token a line (the usual file),
    /// else each, one a line.
    private static func encode(lines: [Int]) -> String {
        guard let start = lines.first, lines.enumerated().allSatisfy({ $0.element == start + $0.offset }) else {
            return lines.map(String.init).joined(separator: "\n")
        }
        return "+\(start)"
    }

    private static func decode(lines text: String, count: Int) -> [Int] {
        if text.utf8.first == UInt8(ascii: "+"), let start = Int(text.dropFirst()) { return Array(start..<start + count) }
        return Self.lines(of: text).map { Int($0) ?? 0 }
    }

    /// The lines of `text` (no empty last one), each a string of its own, cut from the contiguous
    /// UTF-8 by hand: the generic `split`, or substrings copied after, cost several times more.
    private static func lines(of text: String) -> [String] {
        var text = text
        var lines: [String] = []
        lines.reserveCapacity(Self.size)
        text.withUTF8 { bytes in
            var start = 0
            for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
                lines.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
                start = index + 1
            }
            if start < bytes.count { lines.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start...]), as: UTF8.self)) }
        }
        return lines
    }

    // MARK: State

    /// One chunk's state bytes, read and written whole.
    struct State {
        let first: Int
        var states: [UInt8]
        var sends: [UInt8]

        func state(at offset: Int) -> TokenState { TokenState(rawValue: self.states[offset] & ~JournalChunks.flagBit) ?? .notSent }
        func isFlagged(at offset: Int) -> Bool { self.states[offset] & JournalChunks.flagBit != 0 }

        mutating func set(_ state: TokenState, at offset: Int, flag: Bool = false) {
            self.states[offset] = state.rawValue | (flag || self.isFlagged(at: offset) ? JournalChunks.flagBit : 0)
        }

        /// Hands the token at `offset` to the sender: `sending`, one send more; a token sent before is flagged.
        /// - Returns: whether an earlier send of it exists.
        mutating func markSending(at offset: Int) -> Bool {
            let sentBefore = self.sends[offset] > 0
            self.set(.sending, at: offset, flag: sentBefore)
            if self.sends[offset] < .max { self.sends[offset] += 1 }
            return sentBefore
        }

        /// Takes back the send of a token that never left (`not_sent`); an earlier copy's flag stays.
        mutating func takeBack(at offset: Int) {
            self.set(.notSent, at: offset)
            if self.sends[offset] > 0 { self.sends[offset] -= 1 }
        }
    }

    /// The state of the chunk that holds `index`, or nil past the last chunk.
    static func state(of index: Int, db: Database) throws -> State? {
        let first = Self.chunkStart(of: index)
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT states, sends FROM chunk_state WHERE first_idx = ?"), arguments: [first])
        else { return nil }
        let states: Data = row[0]
        let sends: Data = row[1]
        return State(first: first, states: [UInt8](states), sends: [UInt8](sends))
    }

    static func save(_ state: State, db: Database) throws {
        try db.cachedStatement(sql: "UPDATE chunk_state SET states = ?, sends = ? WHERE first_idx = ?")
            .execute(arguments: [Data(state.states), Data(state.sends), state.first])
    }

    /// Runs `change` on each item of `items`, in their order, with the state of the chunk its index
    /// falls in; each chunk touched is read once and saved once (a batch spans one or two, so no
    /// sorting). An index past the last token is skipped.
    static func updateStates<Item>(
        of items: some Sequence<Item>, index: (Item) -> Int, db: Database, _ change: (inout State, _ offset: Int, Item) throws -> Void
    ) throws {
        var states: [State] = []
        var missing: [Int] = []
        for item in items {
            let position = index(item)
            let first = Self.chunkStart(of: position)
            let slot: Int
            if let loaded = states.firstIndex(where: { $0.first == first }) {
                slot = loaded
            } else {
                guard !missing.contains(first) else { continue }
                guard let state = try Self.state(of: position, db: db) else {
                    missing.append(first)
                    continue
                }
                states.append(state)
                slot = states.count - 1
            }
            guard position - first < states[slot].states.count else { continue }
            try change(&states[slot], position - first, item)
        }
        for state in states { try Self.save(state, db: db) }
    }

    /// The campaign's counts, from every chunk's state bytes.
    static func progress(db: Database) throws -> CampaignJournal.Progress {
        var progress = CampaignJournal.Progress(total: 0, final: 0, unsettled: 0)
        let states = try Data.fetchCursor(db, sql: "SELECT states FROM chunk_state")
        while let bytes = try states.next() {
            for byte in bytes {
                progress.total += 1
                switch TokenState(rawValue: byte & ~Self.flagBit) {
                case .accepted, .rejected: progress.final += 1
                case .sending, .failed: progress.unsettled += 1
                case .notSent, nil: break
                }
            }
        }
        return progress
    }

    // MARK: Details

    /// The indices between `lower` and `upper` (inclusive) that have a detail row.
    static func detailed(from lower: Int, through upper: Int, db: Database) throws -> Set<Int> {
        try Set(Int.fetchAll(db.cachedStatement(sql: "SELECT idx FROM verdict_detail WHERE idx BETWEEN ? AND ?"), arguments: [lower, upper]))
    }

    /// Records `verdict`'s status, reason and apns-id, adding its attempts to the token's.
    static func record(_ verdict: CampaignJournal.Verdict, db: Database) throws {
        if verdict.outcome == .notSent {
            // The push never left: its apns-id and attempts stay the earlier sends'.
            try db.cachedStatement(
                sql: """
                    INSERT INTO verdict_detail (idx, status, reason) VALUES (?, ?, ?)
                    ON CONFLICT (idx) DO UPDATE SET status = excluded.status, reason = excluded.reason
                    """
            ).execute(arguments: [verdict.index, verdict.status, verdict.reason])
            return
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO verdict_detail (idx, status, reason, apns_id, attempts) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (idx) DO UPDATE SET status = excluded.status, reason = excluded.reason, apns_id = excluded.apns_id,
                    attempts = attempts + excluded.attempts
                """
        ).execute(arguments: [verdict.index, verdict.status, verdict.reason, verdict.apnsID, verdict.attempts])
    }

    /// The detail rows between `lower` and `upper` (inclusive), by index.
    static func details(from lower: Int, through upper: Int, db: Database) throws -> [Int: (status: Int?, reason: String?, apnsID: String?, attempts: Int)] {
        var details: [Int: (status: Int?, reason: String?, apnsID: String?, attempts: Int)] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: "SELECT idx, status, reason, apns_id, attempts FROM verdict_detail WHERE idx BETWEEN ? AND ?"),
            arguments: [lower, upper]
        )
        while let row = try rows.next() { details[row[0]] = (row[1], row[2], row[3], row[4]) }
        return details
    }
}

extension CampaignJournal.Verdict {
    /// Accepted at the first try, with the campaign's `apns-id` for the token (or none): the state
    /// byte says it all, and the report shows status 200 and that `apns-id`.
    func isPlainAcceptance(campaign: UUID) -> Bool {
        guard self.outcome == .accepted, self.status == nil || self.status == 200, self.reason == nil, self.attempts <= 1 else {
            return false
        }
        guard let apnsID = self.apnsID else { return true }
        return APNSID(campaign: campaign, index: self.index).matches(apnsID)
    }
}
