import ForgeAPNsCore
import ForgeCampaign
internal import ForgeSupport
import Logging
import PostgresNIO

/// A worker's statements on the campaign's batches and tokens; every write to a claimed batch is
/// fenced by the claim's epoch.
struct BatchStore: Sendable {
    /// A batch this worker holds: its number, its epoch (the fence), and its tokens without a final verdict.
    struct Claim: Sendable {
        var batch: Int
        var epoch: Int
        var entries: [CampaignJournal.Entry]
    }

    let campaign: PostgresCampaign
    let connection: PostgresConnection
    let renewal: PostgresConnection
    let owner: String
    let lease: Duration

    init(campaign: PostgresCampaign, connection: PostgresConnection, renewal: PostgresConnection, owner: String, lease: Duration) {
        self.campaign = campaign
        self.connection = connection
        self.renewal = renewal
        self.owner = owner
        self.lease = lease
    }

    /// Whether `id` is the campaign's own `apns-id` for `index`, which the report derives (compared
    /// as bytes, in either case: a verdict each).
    private func isCampaignsOwn(_ id: String, index: Int) -> Bool { APNSID(campaign: self.campaign.uuid, index: index).matches(id) }

    private var id: Int { self.campaign.id }
    private var logger: Logger { self.campaign.logger }
    private var leaseSeconds: Double { Double(self.lease.components.seconds) + Double(self.lease.components.attoseconds) / 1e18 }

    /// Claims one batch that is not done and whose lease is free or expired, without waiting for
    /// batches other workers are claiming (`SKIP LOCKED`); nil when there is none.
    func claim() async throws -> Claim? {
        let rows = try await self.connection.query(
            """
            UPDATE campaign_batches AS b
            SET state = 'leased', lease_owner = \(self.owner), lease_epoch = b.lease_epoch + 1,
                lease_expires_at = now() + make_interval(secs => \(self.leaseSeconds))
            FROM (
                SELECT batch FROM campaign_batches
                WHERE campaign = \(self.id) AND state <> 'done' AND (lease_expires_at IS NULL OR lease_expires_at <= now())
                ORDER BY batch LIMIT 1 FOR UPDATE SKIP LOCKED
            ) AS free
            WHERE b.campaign = \(self.id) AND b.batch = free.batch
            RETURNING b.batch, b.lease_epoch, b.first_idx, b.end_idx
            """,
            logger: self.logger
        )
        var claimed: (batch: Int, epoch: Int, first: Int, end: Int)?
        for try await row in rows.decode((Int, Int, Int, Int).self) { claimed = row }
        guard let claimed else { return nil }
        var entries: [CampaignJournal.Entry] = []
        // One row of three arrays, not a row a token.
        let tokens = try await self.connection.query(
            """
            SELECT coalesce(array_agg(idx ORDER BY idx), '{}'), coalesce(array_agg(line ORDER BY idx), '{}'),
                coalesce(array_agg(token ORDER BY idx), '{}')
            FROM campaign_tokens
            WHERE campaign = \(self.id) AND idx >= \(claimed.first) AND idx < \(claimed.end) AND state NOT IN ('accepted', 'rejected')
            """,
            logger: self.logger
        )
        for try await (indices, lines, hex) in tokens.decode(([Int], [Int], [String]).self) {
            entries = zip(indices, zip(lines, hex)).map { CampaignJournal.Entry(index: $0, line: $1.0, token: $1.1) }
        }
        return Claim(batch: claimed.batch, epoch: claimed.epoch, entries: entries)
    }

    /// With no batch to claim: nil when every batch is done, else how long until the first lease
    /// held by another worker expires.
    func nextExpiry() async throws -> Duration? {
        let rows = try await self.connection.query(
            """
            SELECT count(*), coalesce(extract(epoch FROM min(lease_expires_at) - now()), 0)::float8
            FROM campaign_batches WHERE campaign = \(self.id) AND state <> 'done'
            """,
            logger: self.logger
        )
        for try await (open, seconds) in rows.decode((Int, Double).self) where open > 0 {
            return .milliseconds(Int(max(0, seconds) * 1000))
        }
        return nil
    }

    /// The binds of a ``FencedStatement`` (`$1` campaign, `$2` batch, `$3` epoch), room for `more`.
    private func fenced(_ claim: Claim, more: Int) -> PostgresBindings {
        var binds = PostgresBindings(capacity: 3 + more)
        binds.append(self.id)
        binds.append(claim.batch)
        binds.append(claim.epoch)
        return binds
    }

    /// Commits `entries` (consecutive ones of `claim`) as `sending` (one more send each) before the
    /// sender gets them; a token sent before is flagged `may_have_been_delivered`. The rows are
    /// found by their index range, one scan of the key, not a lookup a token: the claim's entries
    /// are every token of the batch without a final verdict, in index order, so the range's tokens
    /// without one are exactly `entries`. One row comes back, not one a token.
    /// - Returns: each token's sends after this one, in the order of `entries`; nil when the lease is lost.
    func mark(_ entries: ArraySlice<CampaignJournal.Entry>, claim: Claim) async throws -> [Int]? {
        guard let first = entries.first?.index, let last = entries.last?.index else { return [] }
        var binds = self.fenced(claim, more: 2)
        binds.append(first)
        binds.append(last)
        for try await (count, again, sends) in try await self.connection.execute(Mark(bindings: binds), logger: self.logger)
        where count == entries.count {
            // Sent once (this time) but for the few sent before.
            let before = Dictionary(zip(again, sends)) { first, _ in first }
            return entries.map { before[$0.index] ?? 1 }
        }
        return nil
    }

    /// Commits `verdicts` of `claim`'s tokens in one statement, fenced by its epoch, and notes the
    /// transaction on the batch (for `watch`). `idx = ANY(…)` lets the planner find the rows by the
    /// primary key whatever its statistics say (a join on `unnest` alone was planned as a scan of
    /// the campaign's every token). An `apns-id` that is the campaign's own for the index is not
    /// stored: the report derives it.
    /// - Returns: the indices of the tokens flagged `may_have_been_delivered` after the commit (one
    /// row comes back, not one a token); nil when the lease is lost.
    func commit(_ verdicts: [CampaignJournal.Verdict], claim: Claim) async throws -> Set<Int>? {
        var binds = self.fenced(claim, more: 7)
        binds.append(verdicts.map(\.index))
        binds.append(verdicts.map(\.outcome.rawValue))
        binds.append(verdicts.map { Int32($0.status ?? 0) })
        binds.append(verdicts.map { $0.reason ?? "" })
        binds.append(verdicts.map { verdict in
            guard let id = verdict.apnsID, !self.isCampaignsOwn(id, index: verdict.index) else { return "" }
            return id
        })
        binds.append(verdicts.map { Int32($0.attempts) })
        binds.append(verdicts.map(\.mayHaveBeenDelivered))
        for try await (count, flagged) in try await self.connection.execute(Commit(bindings: binds), logger: self.logger)
        where count == verdicts.count {
            return Set(flagged)
        }
        return nil
    }

    /// Moves `claim`'s lease expiry to a full lease from now; false when the lease is lost.
    func renew(_ claim: Claim) async throws -> Bool {
        let rows = try await self.renewal.query(
            """
            UPDATE campaign_batches SET lease_expires_at = now() + make_interval(secs => \(self.leaseSeconds))
            WHERE campaign = \(self.id) AND batch = \(claim.batch) AND lease_epoch = \(claim.epoch)
            RETURNING batch
            """,
            logger: self.logger
        )
        var renewed = false
        for try await _ in rows.decode(Int.self) { renewed = true }
        return renewed
    }

    /// Marks `claim` done when every token of the batch has a final verdict (and the lease is still held).
    func finish(_ claim: Claim) async throws -> Bool {
        let rows = try await self.connection.query(
            """
            UPDATE campaign_batches AS b SET state = 'done', lease_owner = NULL, lease_expires_at = NULL
            WHERE b.campaign = \(self.id) AND b.batch = \(claim.batch) AND b.lease_epoch = \(claim.epoch)
                AND NOT EXISTS (
                    SELECT 1 FROM campaign_tokens AS t
                    WHERE t.campaign = b.campaign AND t.idx >= b.first_idx AND t.idx < b.end_idx AND t.state NOT IN ('accepted', 'rejected')
                )
            RETURNING b.batch
            """,
            logger: self.logger
        )
        var done = false
        for try await _ in rows.decode(Int.self) { done = true }
        return done
    }

    /// Gives `claim` back for the next claim at once; returns its tokens without a final verdict.
    func release(_ claim: Claim) async throws -> Int {
        try await self.connection.query(
            """
            UPDATE campaign_batches SET state = 'pending', lease_owner = NULL, lease_expires_at = now()
            WHERE campaign = \(self.id) AND batch = \(claim.batch) AND lease_epoch = \(claim.epoch)
            """,
            logger: self.logger
        )
        let rows = try await self.connection.query(
            """
            SELECT count(*) FROM campaign_tokens AS t JOIN campaign_batches AS b ON b.campaign = t.campaign
            WHERE b.campaign = \(self.id) AND b.batch = \(claim.batch) AND t.idx >= b.first_idx AND t.idx < b.end_idx
                AND t.state NOT IN ('accepted', 'rejected')
            """,
            logger: self.logger
        )
        var remaining = 0
        for try await count in rows.decode(Int.self) { remaining = count }
        return remaining
    }
}

/// A statement that writes to a claimed batch, prepared once a connection (parsed, and planned
/// as PostgreSQL's plan cache decides, once rather than each chunk), fenced by the claim's epoch:
/// `lease` is the batch's row, held (`FOR SHARE`: a claimer cannot bump the epoch until the
/// statement's transaction ends) only while `$3` is still its epoch. Each has a `name` of its own,
/// short: PostgreSQL cuts names at 63 bytes, and the default (the type's full name) is longer.
private protocol FencedStatement: PostgresPreparedStatement {
    var bindings: PostgresBindings { get }
}

extension FencedStatement {
    static var lease: String {
        "lease AS (SELECT 1 FROM campaign_batches WHERE campaign = $1 AND batch = $2 AND lease_epoch = $3 FOR SHARE)"
    }

    func makeBindings() -> PostgresBindings { self.bindings }
}

extension BatchStore {
    /// ``mark(_:claim:)``: `$4 ... $5` the range of indices.
    private struct Mark: FencedStatement {
        typealias Row = (Int, [Int], [Int])
        static let name = "forge_campaign_mark_1"
        static let sql = """
            WITH \(Self.lease),
            marked AS (
                UPDATE campaign_tokens AS t
                SET state = 'sending', sends = t.sends + 1, may_have_been_delivered = t.may_have_been_delivered OR t.sends >= 1
                WHERE t.campaign = $1 AND t.idx >= $4 AND t.idx <= $5 AND t.state NOT IN ('accepted', 'rejected')
                    AND EXISTS (SELECT 1 FROM lease)
                RETURNING t.idx, t.sends
            )
            SELECT count(*), coalesce(array_agg(idx) FILTER (WHERE sends > 1), '{}'),
                coalesce(array_agg(sends) FILTER (WHERE sends > 1), '{}')
            FROM marked
            """
        let bindings: PostgresBindings

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// ``commit(_:claim:)``: `$4 ... $10` the verdicts, a column an array.
    private struct Commit: FencedStatement {
        typealias Row = (Int, [Int])
        static let name = "forge_campaign_commit_1"
        static let sql = """
            WITH \(Self.lease),
            v AS (SELECT * FROM unnest($4::bigint[], $5::text[], $6::int[], $7::text[], $8::text[], $9::int[], $10::bool[])
                AS v(idx, state, status, reason, apns_id, attempts, flagged)),
            noted AS (
                UPDATE campaign_batches SET commit_xid = pg_current_xact_id()::text::bigint
                WHERE campaign = $1 AND batch = $2 AND EXISTS (SELECT 1 FROM lease)
            ),
            committed AS (
                UPDATE campaign_tokens AS t
                SET state = v.state, status = nullif(v.status, 0), reason = nullif(v.reason, ''),
                    apns_id = CASE WHEN v.state = 'not_sent' THEN t.apns_id ELSE nullif(v.apns_id, '') END,
                    attempts = t.attempts + v.attempts,
                    sends = CASE WHEN v.state = 'not_sent' THEN greatest(t.sends - 1, 0) ELSE t.sends END,
                    may_have_been_delivered = t.may_have_been_delivered OR v.flagged,
                    commit_xid = pg_current_xact_id()::text::bigint
                FROM v
                WHERE t.campaign = $1 AND t.idx = ANY($4::bigint[]) AND t.idx = v.idx AND EXISTS (SELECT 1 FROM lease)
                RETURNING t.idx, t.may_have_been_delivered
            )
            SELECT count(*), coalesce(array_agg(idx) FILTER (WHERE may_have_been_delivered), '{}') FROM committed
            """
        let bindings: PostgresBindings

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}

/// The claim's tokens as the bulk reads them: each chunk committed `sending` first, none handed
/// out past the window or once the lease is no longer valid.
struct BatchFeed: AsyncSequence, Sendable {
    typealias Element = String

    let claim: BatchStore.Claim
    let store: BatchStore
    let lease: LeaseClock
    let isStopped: @Sendable () -> Bool
    let gate = FeedGate()

    struct AsyncIterator: AsyncIteratorProtocol {
        let feed: BatchFeed
        var position = 0
        var marked = 0

        mutating func next() async throws -> String? {
            let entries = self.feed.claim.entries
            guard self.position < entries.count, !self.feed.isStopped() else { return nil }
            if self.position == self.marked {
                let end = Swift.min(self.position + PostgresCampaignWorker.markChunk, entries.count)
                await self.feed.gate.wait(untilCommitted: end - PostgresCampaignWorker.window)
                guard self.feed.lease.isValid, !self.feed.isStopped() else { return nil }
                guard let sends = try await self.feed.store.mark(entries[self.position..<end], claim: self.feed.claim) else {
                    self.feed.lease.lose()
                    return nil
                }
                self.feed.gate.noteMarked(sends)
                self.marked = end
            }
            // The local deadline: past it without a renewal, another worker may hold the batch.
            guard self.feed.lease.isValid else { return nil }
            defer { self.position += 1 }
            return entries[self.position].token
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(feed: self) }
}

/// Between the feed and the verdict reader: how many verdicts are committed (the feed waits for
/// the window, on ``progress``), and each marked token's send count.
final class FeedGate: Sendable {
    /// Verdicts committed; released when the feed must wait no longer (stopped, or the lease lost).
    let progress = ProgressGate()
    private let marks = LockedBox<[Int]>([])

    /// How many of the claim's tokens were marked `sending`.
    var marked: Int { self.marks.withLock { $0.count } }

    /// The sends of the claim's token at `position` (after this worker's), 0 when not marked.
    func sends(at position: Int) -> Int {
        self.marks.withLock { position < $0.count ? $0[position] : 0 }
    }

    func noteMarked(_ sends: [Int]) {
        self.marks.withLock { $0 += sends }
    }

    /// Returns once `target` verdicts are committed, or the gate is released.
    func wait(untilCommitted target: Int) async {
        _ = await self.progress.wait(untilReached: target)
    }

    func advance(by count: Int) {
        self.progress.advance(by: count)
    }

    /// The feed waits no longer (stopped, or the lease is lost).
    func release() {
        self.progress.release()
    }
}
