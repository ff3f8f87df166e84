public import ForgeAPNs
public import ForgeCampaign
internal import ForgeSupport
import PostgresNIO

/// One worker of a ``PostgresCampaign``: claims a batch, sends its tokens, commits their verdicts,
/// and goes on until no batch is left. Start any number, on any number of machines.
///
/// The protocol:
/// - **Claim**: one batch that is not done and whose lease is free or expired, `FOR UPDATE SKIP
///   LOCKED` (workers never wait for each other), bumping `lease_epoch`: the epoch is this worker's
///   fence. The lease is renewed every third of its length while the worker works.
/// - **Mark before send**: 512 tokens at a time are committed `sending` (`sends + 1`)
///   before the sender gets them, by an UPDATE that holds the batch row (`FOR SHARE`) only while
///   its epoch is still this worker's. A token that was already sent (`sends` ≥ 1: an earlier owner
///   sent it without a committed verdict, or had no answer) is flagged `may_have_been_delivered`.
/// - **Window**: the sender never gets more than ``window`` tokens ahead of the last committed
///   verdict.
/// - **Commit, fenced**: verdicts are committed 512 at a time by an UPDATE fenced the
///   same way. 0 rows means the lease is lost (the worker stalled past its expiry and another
///   took the batch): sending stops at once, the verdicts not committed are dropped, and the
///   worker claims another batch. The sender also stops getting tokens once the local lease
///   deadline passes without a renewal, before the database even says so.
/// - **Done**: a batch whose tokens all have a final verdict (`accepted`, `rejected`) is marked
///   done; one with tokens left (`failed`: no answer) is released for the next claim.
///
/// The bound: a worker that loses its lease (killed, stopped, cut off) leaves at most ``window``
/// tokens sent without a committed verdict; the next owner sends them again, flagged. So the
/// pushes delivered twice are at most ``window`` per lease lost, and every one is flagged.
public final class PostgresCampaignWorker: Sendable {
    /// The most tokens handed to the sender without a committed verdict.
    public static let window = 1024
    /// Tokens marked `sending` by one UPDATE (half the window: the sender goes on with one chunk
    /// while the verdicts of the other are committed).
    package static let markChunk = 512
    /// Verdicts committed by one UPDATE: each statement costs PostgreSQL a plan and a commit
    /// (a WAL flush), so fewer, larger ones cost it less a token.
    package static let commitChunk = 512

    /// What a worker reports as it goes, in order, from the task running ``run(client:events:)``.
    public enum Event: Sendable {
        /// A batch was claimed: its number, this worker's epoch, the tokens it has left to send.
        case claimed(batch: Int, epoch: Int, tokens: Int)
        /// Verdicts were committed (the database's rows after the commit).
        case committed([CampaignReport.Line])
        /// The lease on `batch` was lost (another worker holds it now): `dropped` verdicts were not committed.
        case leaseLost(batch: Int, epoch: Int, dropped: Int)
        /// Every token of `batch` has a final verdict.
        case batchDone(batch: Int)
        /// `batch` was given back with `remaining` tokens without a final verdict.
        case released(batch: Int, remaining: Int)
    }

    /// How a run ended.
    public enum Outcome: Sendable, Equatable {
        /// No batch is left to claim and none is leased: every token has a final verdict.
        case complete
        /// ``stop()`` was called: the current batch's pushes got their answers, and it was given back.
        case stopped
        /// A whole batch got no final verdict (the endpoint cannot be reached, or never answers): the
        /// last reason seen.
        case noProgress(String)
    }

    public let campaign: PostgresCampaign
    /// The name this worker's leases carry (`lease_owner`).
    public let owner: String
    public let lease: Duration

    private struct State {
        var stopped = false
        var abandoned = false
        /// The current batch's bulk send, and its feed's gate.
        var current: (bulk: APNSBulkSend, gate: FeedGate)?
    }

    private let state = LockedBox(State())

    public init(campaign: PostgresCampaign, owner: String, lease: Duration = .seconds(30)) {
        precondition(lease >= .milliseconds(300), "a lease shorter than 300 ms cannot be renewed in time")
        self.campaign = campaign
        self.owner = owner
        self.lease = lease
    }

    /// Claims no further batch; the current one stops reading tokens, its pushes on their way get
    /// their answers, and it is given back.
    public func stop() {
        let current = self.state.withLock { state in
            state.stopped = true
            return state.current
        }
        current?.gate.release()
        current?.bulk.stop()
    }

    /// Gives up on the answers of the pushes on their way (they stay `sending`: the next owner
    /// sends them again, flagged).
    public func abandon() {
        let current = self.state.withLock { state in
            state.stopped = true
            state.abandoned = true
            return state.current
        }
        current?.gate.release()
        current?.bulk.cancel()
    }

    private var isStopped: Bool { self.state.withLock { $0.stopped } }

    /// Works until the campaign is complete, ``stop()`` is called, or a batch makes no progress.
    /// - Throws: ``PostgresCampaignError`` when the database fails.
    public func run(client: APNSClient, events: @escaping @Sendable (Event) -> Void) async throws -> Outcome {
        let url = self.campaign.url
        let logger = self.campaign.logger
        return try await PostgresCampaign.withConnection(url, logger: logger) { connection in
            // The lease is renewed on a connection of its own, never queued behind the batch's statements.
            try await PostgresCampaign.withConnection(url, logger: logger) { renewal in
                let store = BatchStore(campaign: self.campaign, connection: connection, renewal: renewal, owner: self.owner, lease: self.lease)
                do {
                    return try await self.loop(client: client, store: store, events: events)
                } catch let error as PSQLError {
                    throw PostgresCampaignError.database(error, doing: "--postgres \(url): campaign \(self.campaign.name)")
                }
            }
        }
    }

    private func loop(client: APNSClient, store: BatchStore, events: @Sendable (Event) -> Void) async throws -> Outcome {
        while !self.isStopped {
            let requested = ContinuousClock.now
            guard let claim = try await store.claim() else {
                guard let wait = try await store.nextExpiry() else { return .complete }
                // Other workers hold the last batches: look again when their first lease would expire,
                // or sooner (they usually finish first), so the last worker out is not kept waiting.
                let pause = min(max(wait, .milliseconds(50)), .milliseconds(500))
                try? await Task.sleep(for: pause)
                continue
            }
            events(.claimed(batch: claim.batch, epoch: claim.epoch, tokens: claim.entries.count))
            let lease = LeaseClock(deadline: requested + self.lease)
            let pass = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await self.renew(claim, store: store, lease: lease) }
                defer { group.cancelAll() }
                return try await self.send(claim, client: client, store: store, lease: lease, events: events)
            }
            if pass.lost {
                events(.leaseLost(batch: claim.batch, epoch: claim.epoch, dropped: pass.dropped))
                continue
            }
            if try await store.finish(claim) {
                events(.batchDone(batch: claim.batch))
            } else {
                let remaining = try await store.release(claim)
                events(.released(batch: claim.batch, remaining: remaining))
                // Tokens were sent and not one got a final verdict: the endpoint is failing them all.
                if pass.final == 0, pass.answered > 0, !self.isStopped, remaining > 0 {
                    return .noProgress(pass.lastReason ?? "no final verdict")
                }
            }
        }
        return .stopped
    }

    /// Renews `claim`'s lease every third of its length until cancelled, or until it is lost.
    private func renew(_ claim: BatchStore.Claim, store: BatchStore, lease: LeaseClock) async throws {
        while true {
            do { try await Task.sleep(for: self.lease / 3) } catch { return }
            let requested = ContinuousClock.now
            guard try await store.renew(claim) else {
                lease.lose()
                return
            }
            lease.renewed(until: requested + self.lease)
        }
    }

    private struct Pass {
        /// Verdicts the bulk gave (sent or not), and the final ones committed.
        var answered = 0
        var final = 0
        var lost = false
        var dropped = 0
        var lastReason: String?
    }

    /// Sends the claim's tokens through `client`, committing their verdicts fenced by its epoch.
    private func send(
        _ claim: BatchStore.Claim, client: APNSClient, store: BatchStore, lease: LeaseClock, events: @Sendable (Event) -> Void
    ) async throws -> Pass {
        let entries = claim.entries
        let uuid = self.campaign.uuid
        let feed = BatchFeed(claim: claim, store: store, lease: lease, isStopped: { [state = self.state] in state.withLock { $0.stopped } })
        let bulk = client.sendBulk(self.campaign.notification, to: feed, apnsIDs: { APNSID(campaign: uuid, index: entries[$0].index) })
        let (stopped, abandoned) = self.state.withLock { state in
            state.current = (bulk, feed.gate)
            return (state.stopped, state.abandoned)
        }
        defer { self.state.withLock { $0.current = nil } }
        if stopped { feed.gate.release() }
        if abandoned { bulk.cancel() } else if stopped { bulk.stop() }
        // A lost lease stops sending at once: what is on its way is not this worker's to commit.
        lease.onLoss { [gate = feed.gate] in
            gate.release()
            bulk.cancel()
        }
        var pass = Pass()
        var pending: [(position: Int, entry: CampaignJournal.Entry, verdict: CampaignJournal.Verdict)] = []
        func commit() async throws {
            guard !pending.isEmpty, !pass.lost else { return }
            guard let flagged = try await store.commit(pending.map(\.verdict), claim: claim) else {
                lease.lose()
                return
            }
            feed.gate.advance(by: pending.count)
            let lines = pending.map { position, entry, verdict in
                // This worker's send counted unless the push never left (`not_sent` takes it back).
                let sends = feed.gate.sends(at: position) - (verdict.outcome == .notSent ? 1 : 0)
                return CampaignReport.Line(
                    token: entry.token, index: entry.index, line: entry.line, state: verdict.outcome.rawValue, status: verdict.status,
                    reason: verdict.reason, apnsID: verdict.apnsID, sends: sends, mayHaveBeenDelivered: flagged.contains(entry.index),
                    campaign: uuid
                )
            }
            pass.final += pending.count { $0.verdict.outcome.isFinal }
            pending.removeAll(keepingCapacity: true)
            events(.committed(lines))
        }
        for await verdict in bulk {
            pass.answered += 1
            if lease.isLost {
                pass.dropped += 1
                continue
            }
            var committed = CampaignJournal.Verdict(index: entries[verdict.index].index, verdict.outcome)
            // Sent before by an owner with no committed verdict: that copy may have been delivered
            // too (a `failed` verdict says so already; a `not_sent` one sent nothing this time).
            if feed.gate.sends(at: verdict.index) > 1, committed.outcome.isFinal { committed.mayHaveBeenDelivered = true }
            if !committed.outcome.isFinal { pass.lastReason = committed.reason }
            pending.append((verdict.index, entries[verdict.index], committed))
            if pending.count >= Self.commitChunk { try await commit() }
        }
        try await commit()
        if lease.isLost {
            pass.lost = true
            pass.dropped += pending.count
            return pass
        }
        // Marked `sending` but never read (the bulk stopped reading): those never left, so their
        // sends are taken back.
        let marked = feed.gate.marked
        if pass.answered < marked {
            pending = (pass.answered..<marked).map {
                ($0, entries[$0], CampaignJournal.Verdict(index: entries[$0].index, outcome: .notSent, reason: "stopped before sending"))
            }
            try await commit()
            if lease.isLost { pass.lost = true }
        }
        if let error = bulk.summary?.inputError, !lease.isLost { throw PostgresCampaignError(.database, error) }
        return pass
    }
}

/// The local view of a lease: its deadline (moved by each renewal) and whether it is known lost.
final class LeaseClock: Sendable {
    private struct State {
        var deadline: ContinuousClock.Instant
        var lost = false
        var onLoss: [@Sendable () -> Void] = []
    }

    private let state: LockedBox<State>

    init(deadline: ContinuousClock.Instant) {
        self.state = LockedBox(State(deadline: deadline))
    }

    /// Whether the worker may still hand tokens to the sender: not lost, and the deadline not passed.
    var isValid: Bool {
        let (deadline, lost) = self.state.withLock { ($0.deadline, $0.lost) }
        return !lost && ContinuousClock.now < deadline
    }

    var isLost: Bool { self.state.withLock { $0.lost } }

    func renewed(until deadline: ContinuousClock.Instant) {
        self.state.withLock { $0.deadline = max($0.deadline, deadline) }
    }

    func lose() {
        let handlers = self.state.withLock { state -> [@Sendable () -> Void] in
            guard !state.lost else { return [] }
            state.lost = true
            defer { state.onLoss = [] }
            return state.onLoss
        }
        for handler in handlers { handler() }
    }

    /// Runs `handler` when the lease is lost (at once if it is).
    func onLoss(_ handler: @escaping @Sendable () -> Void) {
        let now = self.state.withLock { state -> Bool in
            if !state.lost { state.onLoss.append(handler) }
            return state.lost
        }
        if now { handler() }
    }
}
