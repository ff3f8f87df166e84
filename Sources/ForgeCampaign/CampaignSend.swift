public import ForgeAPNs
internal import ForgeSupport
internal import Synchronization

extension CampaignJournal {
    /// Sends `prepared` to every token of the campaign that has no final verdict, committing each
    /// verdict to the journal before it is handed out; see ``CampaignSend``.
    /// - Parameters:
    ///   - prepared: what every token gets, validated and encoded once.
    ///   - client: the client that sends.
    ///   - window: the most tokens handed to the sender without a committed verdict (the bound on
    ///     the pushes one crash can send twice), in ``CampaignSend/windowRange``.
    ///   - read: for a campaign whose registration is not complete (begun with ``begin(_:)``): reads
    ///     the next tokens of its file, at most the count given, and the file's size and hash with the
    ///     last page. The send takes the registered tokens first, then registers each page read as
    ///     `sending` before the sender gets it. Called one call at a time, on the journal's writer
    ///     (inside the transaction that registers the page), a page ahead of the sender: it may block
    ///     on I/O, and its calls are ordered.
    /// - Throws: ``Failure`` (`invalidArgument`) for a window out of range, or a campaign whose
    ///   registration is not complete without `read`; (`unusable`) when no campaign is in the journal.
    public func send(
        _ prepared: APNSPreparedNotification, client: APNSClient, window: Int = CampaignSend.defaultWindow,
        read: (@Sendable (_ limit: Int) throws(Failure) -> TokenPage)? = nil
    ) throws(Failure) -> CampaignSend {
        guard CampaignSend.windowRange.contains(window) else {
            throw Failure(
                kind: .invalidArgument,
                description: "window must be between \(CampaignSend.windowRange.lowerBound) and \(CampaignSend.windowRange.upperBound) (got \(window))"
            )
        }
        guard let fingerprint = self.fingerprint else {
            throw Failure(kind: .unusable, description: "journal '\(self.path)': no campaign registered in it; register its tokens first")
        }
        guard fingerprint.isComplete || read != nil else {
            throw Failure(kind: .invalidArgument, description: "journal '\(self.path)': its tokens are not all registered; give the send a reader of the rest")
        }
        return CampaignSend(journal: self, prepared: prepared, client: client, window: window, read: fingerprint.isComplete ? nil : read)
    }
}

/// A campaign's send in progress: the verdicts of the tokens with no final verdict, each one
/// delivered only once it is committed to the journal (so a verdict seen is never lost, and its
/// token never sent again). Iterate it (`for try await verdict in send`); the error it can throw is
/// ``CampaignJournal/Failure`` (`storage`): a journal write failed, nothing more is delivered, and
/// the tokens without a committed verdict are sent again by the next run.
///
/// The protocol: the tokens are read from the journal in pages, each page committed as `sending`
/// before the bulk send reads it (the next page is taken while the current one is sent, so the
/// sender never waits for a read or a commit); the verdicts are committed in batches. The sender never gets more
/// than `window` tokens ahead of the last committed verdict: a crash sends at most that many tokens
/// a second time, and those are flagged `may_have_been_delivered` when the next run sends them.
/// Memory holds at most the window's tokens, whatever the campaign's size.
public final class CampaignSend: AsyncSequence, Sendable {
    public typealias Element = Verdict
    public typealias Failure = CampaignJournal.Failure

    /// The default window: at most 16384 tokens sent twice per crash. At a 30 ms round trip a full
    /// pool keeps about 4000 pushes in flight (which any crash leaves in doubt, journal or not); the
    /// window adds a page being read and a batch being committed, with room to spare, so the
    /// journal does not hold the sender back.
    public static let defaultWindow = 16384
    /// The windows a send takes: at least two pages of the bulk send's largest batch, so a send
    /// never waits for a commit that waits for it.
    public static let windowRange = 128...1_000_000

    /// A committed verdict: the token of the campaign, and its outcome (flagged
    /// `may_have_been_delivered` when an earlier run sent the token without a final verdict).
    public struct Verdict: Sendable {
        public var entry: CampaignJournal.Entry
        public var outcome: APNSBulkVerdict.Outcome {
            get { self.bulk.outcome }
            set { self.bulk.outcome = newValue }
        }
        /// Whether a copy may have reached APNs without its answer being known (see `APNSBulkVerdict.Outcome`).
        public var mayHaveBeenDelivered: Bool { self.outcome.mayHaveBeenDelivered }

        /// The bulk's verdict, kept whole: moving it in costs nothing, where taking its outcome out
        /// would copy it (retaining each of its fields) and release the rest.
        private var bulk: APNSBulkVerdict

        /// The bulk's verdict of the token in `slot`: the token is the bulk's (the feed's string), the
        /// journal's index and line are the ledger's.
        fileprivate init(_ verdict: consuming APNSBulkVerdict, slot: Ledger.Slot) {
            if slot.sentBefore { verdict.outcome = verdict.outcome.sentAgain }
            self.entry = CampaignJournal.Entry(index: slot.index, line: slot.line, token: verdict.token)
            // Stored last, whole: an init that changes `self` after storing it builds the value
            // twice (a copy of every field, then the release of the first).
            self.bulk = consume verdict
        }

        fileprivate init(entry: CampaignJournal.Entry, outcome: APNSBulkVerdict.Outcome) {
            self.entry = entry
            self.bulk = APNSBulkVerdict(token: entry.token, index: entry.index, outcome: outcome)
        }
    }

    private struct Tally {
        var counts = APNSBulkSummary()
        /// Every verdict of the run is committed (and counted).
        var isComplete = false
    }

    private let journal: CampaignJournal
    private let bulk: APNSBulkSend
    /// The committed verdicts, counted once a batch, after its commit.
    private let tally = LockedBox(Tally())
    private let gate: ProgressGate
    private let ledger: Ledger
    private let commitBatch: Int

    fileprivate init(
        journal: CampaignJournal, prepared: APNSPreparedNotification, client: APNSClient, window: Int,
        read: (@Sendable (Int) throws(Failure) -> CampaignJournal.TokenPage)?
    ) {
        // Pages and commit batches of a quarter of the window at most: with a bulk batch (64) held
        // unsent, the tokens out never reach a page past the window, so the feed's wait always ends.
        // At most four journal chunks: each page and each commit is a transaction ending in an
        // fsync, which costs more than the rows it writes (a page of 1024 made four times as many).
        let page = Swift.min(4096, window / 4)
        self.commitBatch = Swift.min(4096, window / 4)
        self.journal = journal
        let gate = ProgressGate()
        let ledger = Ledger()
        self.gate = gate
        self.ledger = ledger
        let campaign = journal.campaign
        let feed = Feed(journal: journal, read: read, gate: gate, ledger: ledger, page: page, window: window)
        // Room for two commit batches of verdicts: while a commit runs (an fsync, perhaps behind a
        // page being taken) the verdicts wait in the channel, and a full channel stops each bulk
        // worker that hands one over (with 2048, a 500,000-token run at 30 ms stopped workers about
        // 200 times). The window still bounds the tokens out, so the channel never holds more.
        let buffered = Swift.max(2048, 2 * self.commitBatch)
        self.bulk = client.sendBulk(prepared, to: feed, bufferedVerdicts: buffered, apnsIDs: { position in
            // Every position is in the ledger before the bulk reads its token.
            APNSID(campaign: campaign, index: ledger.index(at: position) ?? -1)
        })
    }

    // A send dropped unfinished: the feed stops waiting for commits that will not come.
    deinit { self.gate.release() }

    /// Reads no more tokens; the pushes on their way get their answers (committed, then delivered),
    /// and the sequence ends. The tokens not sent stay to send (`not_sent`, their send taken back).
    public func stop() {
        self.gate.release()
        self.bulk.stop()
    }

    /// Stops now: tokens not sent get `notSent`, pushes in flight `failed` unless their answer is in
    /// (see `APNSBulkSend.cancel()`); every verdict is still committed before it is delivered.
    public func cancel() {
        self.gate.release()
        self.bulk.cancel()
    }

    /// The counts of this run's verdicts, as delivered (the bulk send's, with the tokens it never
    /// read, and the doubt carried over from an earlier run), once the last verdict is out (nil
    /// before, and after a failed commit). `stoppedReading` is set when ``stop()`` or ``cancel()``
    /// ended the send with tokens of the campaign left unread.
    public var summary: APNSBulkSummary? {
        guard let bulk = self.bulk.summary else { return nil }
        let tally = self.tally.withLock { $0 }
        guard tally.isComplete else { return nil }
        // The campaign's own counts; what only the bulk send knows, from its summary.
        var summary = tally.counts
        summary.duration = bulk.duration
        summary.inputError = bulk.inputError
        summary.stoppedReading = bulk.stoppedReading || self.ledger.stoppedReading
        return summary
    }

    /// The counts so far, for a progress display: every verdict committed, counted by
    /// `APNSBulkSummary.add(_:)` (each is delivered right after its commit).
    public var counts: APNSBulkSummary { self.tally.withLock { $0.counts } }

    public func makeAsyncIterator() -> Iterator { Iterator(owner: self) }

    /// Delivers committed verdicts; the first failed commit throws, and nothing follows it.
    public struct Iterator: AsyncIteratorProtocol {
        public typealias Failure = CampaignJournal.Failure

        private let owner: CampaignSend
        private var verdicts: APNSBulkSend.Iterator
        /// The verdicts to commit next, and their bulk positions.
        private var pending: [Verdict?] = []
        private var positions: [Int] = []
        /// The committed verdicts to deliver from `cursor` on: each is moved out (`take()`), not copied.
        private var ready: [Verdict?] = []
        private var cursor = 0
        private var finished = false
        /// Reading the journal failed: thrown once the verdicts committed before it are delivered.
        private var failure: CampaignJournal.Failure?
        /// A verdict other than accepted or rejected was seen (and committed at once).
        private var failureSeen = false

        fileprivate init(owner: CampaignSend) {
            self.owner = owner
            self.verdicts = owner.bulk.makeAsyncIterator()
            self.pending.reserveCapacity(owner.commitBatch)
            self.positions.reserveCapacity(owner.commitBatch)
        }

        public mutating func next() async throws(CampaignJournal.Failure) -> Verdict? {
            while true {
                if self.cursor < self.ready.count {
                    defer { self.cursor += 1 }
                    return self.ready[self.cursor].take()
                }
                if let failure = self.failure {
                    self.failure = nil
                    throw failure
                }
                if self.finished { return nil }
                guard let batch = await self.verdicts.nextBatch() else {
                    try await self.finish()
                    continue
                }
                // The first push that did not get through is committed (so delivered) at once, not
                // after a full batch: a caller that stops on an unreachable endpoint hears of it
                // after one failure, not after a batch of them.
                let firstFailure = self.absorb(batch)
                if firstFailure || self.pending.count >= self.owner.commitBatch { try await self.commit() }
            }
        }

        /// Moves a batch of the bulk's verdicts into `pending`, their slots read under one lock of
        /// the ledger; returns whether the first push that did not get through is among them.
        private mutating func absorb(_ batch: consuming [APNSBulkVerdict?]) -> Bool {
            var batch = batch
            let slots = self.owner.ledger.slots(at: batch.map { $0?.index ?? -1 })
            var firstFailure = false
            for offset in batch.indices {
                // A verdict with no open slot would be a second one for its token: dropped.
                guard let slot = slots[offset], let verdict = batch[offset].take() else { continue }
                if !self.failureSeen, verdict.outcome.didNotGetThrough {
                    self.failureSeen = true
                    firstFailure = true
                }
                self.positions.append(verdict.index)
                Self.append(verdict, slot: slot, to: &self.pending)
            }
            return firstFailure
        }

        /// Moves one verdict in; kept out of its caller, where the optimizer copied the new verdict
        /// into the array and destroyed the original.
        @inline(never)
        private static func append(_ verdict: consuming APNSBulkVerdict, slot: Ledger.Slot, to pending: inout [Verdict?]) {
            pending.append(Verdict(verdict, slot: slot))
        }

        /// Commits the pending verdicts, then makes them ready to deliver.
        private mutating func commit() async throws(CampaignJournal.Failure) {
            guard !self.pending.isEmpty else { return }
            do {
                try await self.owner.journal.commit(verdicts: self.pending.map(Self.journalVerdict))
            } catch {
                // Nothing more is delivered: a verdict not committed would be sent again, so it is not shown as final.
                self.finished = true
                self.ready = []
                self.owner.cancel()
                throw error
            }
            var counts = APNSBulkSummary()
            for offset in self.pending.indices { counts.add(self.pending[offset]!.outcome) }
            self.owner.tally.withLock { $0.counts.addCounts(of: counts) }
            self.owner.ledger.remove(self.positions)
            self.owner.gate.advance(by: self.pending.count)
            // The committed verdicts become the ready ones without a copy; the buffer of those
            // delivered before (all taken) takes the next batch.
            swap(&self.ready, &self.pending)
            self.cursor = 0
            self.pending.removeAll(keepingCapacity: true)
            self.positions.removeAll(keepingCapacity: true)
        }

        /// The verdict as the journal keeps it. An acceptance at the first try, with no doubt, is
        /// kept as such (the journal's cheapest row) without reading its `apns-id` from the response:
        /// the request carried the campaign's id for the token, and APNs echoes it.
        private static func journalVerdict(_ pending: Verdict?) -> CampaignJournal.Verdict {
            // Read in place (every pending slot holds a verdict until the commit succeeds): an
            // unwrapped copy would retain the token and the outcome's fields.
            let index = pending!.entry.index
            if case .accepted(let result) = pending!.outcome, result.attempts <= 1, !result.mayHaveBeenDeliveredTwice {
                return CampaignJournal.Verdict(index: index, outcome: .accepted, status: 200, attempts: result.attempts)
            }
            return CampaignJournal.Verdict(index: index, pending!.outcome)
        }

        /// The bulk send is over: the last verdicts are committed, and the tokens marked `sending`
        /// that it never read (it stopped mid-page) get their send taken back: they never left.
        private mutating func finish() async throws(CampaignJournal.Failure) {
            try await self.commit()
            self.finished = true
            if let failure = self.owner.ledger.failure {
                self.failure = failure
                return
            }
            // Every token handed out gets one verdict: these are delivered too, once committed.
            // A page taken ahead of the bulk and never read joins them (its tokens never left).
            var drained = self.owner.ledger.drain()
            if let upcoming = self.owner.ledger.takeUpcoming() {
                do {
                    drained += try await upcoming.result().claimed
                } catch {
                    // Not committed: none of its tokens were marked, so none needs a verdict now.
                }
            }
            let unread = drained.map { claimed in
                Verdict(entry: claimed.entry, outcome: .notSent(APNSError(kind: .cancelled, detail: Self.unreadReason)))
            }
            guard !unread.isEmpty else {
                self.owner.tally.withLock { $0.isComplete = true }
                return
            }
            try await self.owner.journal.commit(
                verdicts: unread.map { CampaignJournal.Verdict(index: $0.entry.index, outcome: .notSent, reason: Self.unreadReason) }
            )
            self.owner.tally.withLock { tally in
                for verdict in unread { tally.counts.add(verdict.outcome) }
                tally.isComplete = true
            }
            // After the last batch's verdicts, which the commit above made ready.
            self.ready += unread.map(Optional.some)
        }

        private static let unreadReason = "stopped before sending"
    }
}

extension APNSBulkVerdict.Outcome {
    /// `failed` or `notSent`: the push did not get through (``failure`` without copying the error).
    fileprivate var didNotGetThrough: Bool {
        switch self {
        case .failed, .notSent: true
        case .accepted, .rejected: false
        }
    }

    /// The outcome of a token an earlier run sent with no final verdict: that copy may have been
    /// delivered too.
    fileprivate var sentAgain: Self {
        switch self {
        case .accepted(var result):
            result.mayHaveBeenDeliveredTwice = true
            return .accepted(result)
        case .rejected(var error):
            error.mayHaveBeenDelivered = true
            return .rejected(error)
        case .failed, .notSent:
            return self
        }
    }
}

/// The tokens handed to the bulk send and not yet committed, by the bulk's position (at most a
/// window of them, in the order the feed handed them out), and the feed's failure, if reading the
/// journal failed. A lookup copies no reference: a slot is the token's index, line and flag.
private final class Ledger: Sendable {
    struct Slot {
        var index: Int
        var line: Int
        var sentBefore: Bool
        /// Not committed yet.
        var isOpen = true
    }

    private struct State {
        /// The tokens at positions `base ..< base + slots.count`.
        var slots: [Slot] = []
        /// The pages those tokens came from, each from its first position: their strings, for the
        /// tokens the bulk never read, which get their verdict from here. A page is the feed's own
        /// array, shared, so adding one retains no token.
        var pages: [(start: Int, claimed: [CampaignJournal.Claimed])] = []
        var base = 0
        /// The first slot not committed yet: the slots before it are dropped in bulk.
        var head = 0
        var failure: CampaignJournal.Failure?
        /// The feed ended because the send was stopped, with tokens of the campaign left unread.
        var stoppedReading = false
        /// The page after the feed's current one, being taken (marked `sending`) before the feed needs it.
        var upcoming: BackgroundWrite<CampaignJournal.Page>?

        func openSlot(at position: Int) -> Slot? {
            let slot = position - self.base
            return slot >= self.head && slot < self.slots.count && self.slots[slot].isOpen ? self.slots[slot] : nil
        }
    }

    private let state = LockedBox(State())

    func add(_ page: [CampaignJournal.Claimed], from position: Int) {
        self.state.withLock { state in
            precondition(position == state.base + state.slots.count, "pages are added in order")
            for claimed in page {
                state.slots.append(Slot(index: claimed.entry.index, line: claimed.entry.line, sentBefore: claimed.sentBefore))
            }
            state.pages.append((position, page))
        }
    }

    /// The open slot at each position (nil for none), under one lock.
    func slots(at positions: [Int]) -> [Slot?] {
        self.state.withLock { state in positions.map { state.openSlot(at: $0) } }
    }

    /// The journal index of the open slot at `position`, if any.
    func index(at position: Int) -> Int? { self.state.withLock { $0.openSlot(at: position)?.index } }

    func remove(_ positions: [Int]) {
        self.state.withLock { state in
            for position in positions where position - state.base >= state.head && position - state.base < state.slots.count {
                state.slots[position - state.base].isOpen = false
            }
            while state.head < state.slots.count, !state.slots[state.head].isOpen { state.head += 1 }
            // Dropping the committed front now and then keeps the arrays at about a window.
            if state.head >= 1024, state.head * 2 >= state.slots.count {
                state.slots.removeFirst(state.head)
                state.base += state.head
                state.head = 0
                let base = state.base
                state.pages.removeAll { $0.start + $0.claimed.count <= base }
            }
        }
    }

    /// The entries left, by position, and none after.
    func drain() -> [CampaignJournal.Claimed] {
        self.state.withLock { state in
            defer {
                state.base += state.slots.count
                state.slots = []
                state.pages = []
                state.head = 0
            }
            var open: [CampaignJournal.Claimed] = []
            for page in state.pages {
                for (offset, claimed) in page.claimed.enumerated() {
                    let slot = page.start + offset - state.base
                    if slot >= state.head, slot < state.slots.count, state.slots[slot].isOpen { open.append(claimed) }
                }
            }
            return open
        }
    }

    var failure: CampaignJournal.Failure? {
        get { self.state.withLock { $0.failure } }
        set { self.state.withLock { $0.failure = newValue } }
    }

    var stoppedReading: Bool {
        get { self.state.withLock { $0.stoppedReading } }
        set { self.state.withLock { $0.stoppedReading = newValue } }
    }

    /// Holds the page being taken after the feed's current one; it is taken once, by the feed or,
    /// after the bulk send is over, by the send's end (its tokens were never handed out).
    func hold(upcoming fetch: BackgroundWrite<CampaignJournal.Page>) {
        self.state.withLock { $0.upcoming = fetch }
    }

    func takeUpcoming() -> BackgroundWrite<CampaignJournal.Page>? {
        self.state.withLock { state in
            defer { state.upcoming = nil }
            return state.upcoming
        }
    }
}

/// The campaign's tokens as the bulk reads them: a page at a time, each committed as `sending`
/// first (registered tokens from the journal, then, for a campaign still being registered, pages
/// read from its file), and no page taken while the tokens without a committed verdict would
/// exceed the window.
private struct Feed: AsyncSequence, Sendable {
    typealias Element = String

    let journal: CampaignJournal
    /// Reads the tokens not registered yet (nil once registration is complete).
    let read: (@Sendable (Int) throws(CampaignJournal.Failure) -> CampaignJournal.TokenPage)?
    let gate: ProgressGate
    let ledger: Ledger
    let page: Int
    let window: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        let feed: Feed
        private var claimed: [CampaignJournal.Claimed] = []
        private var cursor = 0
        /// The bulk's position of the next token.
        private var position = 0
        /// After the current page: the registered tokens are all claimed; the file's end is read.
        private var journalRead = false
        private var fileRead = false
        /// The next page is being taken (its fetch is in the ledger).
        private var fetching = false

        init(feed: Feed) { self.feed = feed }

        /// No page follows the current one.
        private var exhausted: Bool { self.journalRead && (self.feed.read == nil || self.fileRead) }

        mutating func next() async throws -> String? {
            if self.cursor == self.claimed.count {
                guard !self.exhausted else { return nil }
                if !self.fetching {
                    _ = await self.feed.gate.wait(untilReached: self.position + self.feed.page - self.feed.window)
                    guard !self.feed.gate.isReleased else { return self.stopped() }
                    self.startFetching()
                }
                guard try await self.takeFetched() else { return nil }
            }
            // The next page is taken while this one is sent, once the window has room for it: the
            // sender then never waits for the file to be read or a page to be committed. Two atomic
            // loads a token at most, no lock.
            guard !self.feed.gate.isReleased else { return self.stopped() }
            if !self.fetching, !self.exhausted,
               self.feed.gate.hasReached(self.position + (self.claimed.count - self.cursor) + self.feed.page - self.feed.window) {
                self.startFetching()
            }
            defer {
                self.cursor += 1
                self.position += 1
            }
            return self.claimed[self.cursor].entry.token
        }

        /// The send was stopped with tokens left (a page, or the rest of the campaign): the end, marked as a stop.
        private func stopped() -> String? {
            self.feed.ledger.stoppedReading = true
            return nil
        }

        /// Starts taking the page after the current one; the ledger holds it until it is taken.
        private mutating func startFetching() {
            let fetch = self.feed.journal.startPage(
                after: self.claimed.last?.entry.index ?? -1, limit: self.feed.page,
                journalRead: self.journalRead, fileRead: self.fileRead, read: self.feed.read
            )
            self.feed.ledger.hold(upcoming: fetch)
            self.fetching = true
        }

        /// Makes the fetched page the current one; false when it is empty (nothing follows).
        private mutating func takeFetched() async throws -> Bool {
            self.fetching = false
            guard let fetch = self.feed.ledger.takeUpcoming() else { return false }
            let page: CampaignJournal.Page
            do {
                page = try await fetch.result()
            } catch {
                self.feed.ledger.failure = error
                throw error
            }
            self.journalRead = page.journalRead
            self.fileRead = page.fileRead
            self.claimed = page.claimed
            self.cursor = 0
            guard !self.claimed.isEmpty else { return false }
            self.feed.ledger.add(self.claimed, from: self.position)
            return true
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(feed: self) }
}
