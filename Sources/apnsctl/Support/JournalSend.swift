import ForgeAPNs
import ForgeAPNsCore
import ForgeCampaign
import ForgeCrypto
import ForgeSupport
import Foundation

/// `apnsctl send --journal`: a campaign whose progress and verdicts are committed to a SQLite
/// journal, so that re-running the same command after a crash (even SIGKILL) resumes it.
///
/// The guarantee: every token of the file ends with exactly one final verdict in the journal. A
/// token is committed as `sending` before the sender gets it, and its verdict is committed (and
/// only then printed) after; a crash between the two leaves it `sending`, and the next run sends it
/// again, flagged `may_have_been_delivered`. The sender never gets more than ``window`` tokens ahead
/// of the last committed verdict, so one crash sends at most ``window`` tokens twice.
struct JournalCampaign {
    /// The most tokens handed to the sender without a committed verdict: the bound on the pushes
    /// one crash can duplicate.
    static let window = 4096
    /// Tokens committed as `sending` in one transaction.
    static let markBatch = 512
    /// Verdicts committed in one transaction.
    static let commitBatch = 256

    let journal: CampaignJournal
    /// The tokens this run sends, in file order (the bulk's index is the position in this array).
    let entries: [CampaignJournal.Entry]
    /// Tokens already final when this run started, and tokens sent before with no committed verdict.
    let alreadyFinal: Int
    /// Indices of tokens an earlier run sent without a final verdict: their verdicts are flagged.
    let sentBefore: Set<Int>
    /// Lines of the file that are not a token (reported on stderr when read).
    let badLines: Int

    /// Opens (or creates) the journal for `tokens` and `shared`: a changed input is refused with
    /// exit 65, naming the fields; bad lines are reported on stderr and skipped (with `strict`, nothing is sent: exit 65).
    static func prepare(
        journalPath: String, tokensPath: String, shared: APNSPreparedNotification, environment: String,
        headers: NotificationOptions.Headers, strict: Bool
    ) async throws -> JournalCampaign {
        var badLines = 0
        try InputFiles.requireReadable(tokensPath, flag: "--tokens-file")
        guard let contents = FileManager.default.contents(atPath: tokensPath) else {
            throw CLIFailure(message: "--tokens-file: file '\(tokensPath)' cannot be read", exitCode: CLIExit.dataError)
        }
        let bytes = [UInt8](contents)
        let lines = try TokenLines(path: tokensPath, headers: headers, hasSharedPayload: true)
        var entries: [CampaignJournal.Entry] = []
        while let line = lines.next() {
            switch line {
            case .skipped:
                continue
            case .bad(let number, let problem):
                lines.report(line: number, problem: problem)
                badLines += 1
            case .entry(let entry):
                guard entry.notification == nil else {
                    throw CLIFailure(
                        message: "\(lines.name):\(entry.line): --journal sends one shared payload; this line has its own payload or topic",
                        exitCode: CLIExit.dataError
                    )
                }
                entries.append(CampaignJournal.Entry(index: entries.count, line: entry.line, token: entry.token.hexString))
            }
        }
        if strict, badLines > 0 {
            throw CLIFailure(
                message: "\(lines.name): \(badLines) bad line\(badLines == 1 ? "" : "s"); nothing sent (--strict)", exitCode: CLIExit.dataError
            )
        }
        guard let payloadHash = SHA256Digest.hex(shared.body), let tokensHash = SHA256Digest.hex(bytes) else {
            throw CLIFailure(message: "--journal: cannot hash the campaign's inputs", exitCode: CLIExit.software)
        }
        let fingerprint = CampaignJournal.Fingerprint(
            payloadSHA256: payloadHash, topic: shared.topic.rawValue, pushType: shared.pushType.rawValue, environment: environment,
            tokensPath: URL(fileURLWithPath: tokensPath).standardizedFileURL.path, tokensSize: bytes.count, tokensSHA256: tokensHash
        )
        do {
            let (journal, resumed) = try CampaignJournal.open(path: journalPath, fingerprint: fingerprint)
            try await journal.register(entries)
            let final = try await journal.finalIndices()
            let sentBefore = Set(try await journal.unsettled())
            if resumed {
                Output.diagnostic(
                    "journal: resuming campaign \(journal.campaign.uuidString.lowercased()): \(final.count) of \(entries.count) tokens final, "
                        + "\(sentBefore.count) sent before without a final verdict (sent again, flagged may_have_been_delivered)"
                )
            }
            return JournalCampaign(
                journal: journal, entries: entries.filter { !final.contains($0.index) }, alreadyFinal: final.count, sentBefore: sentBefore,
                badLines: badLines
            )
        } catch let failure as CampaignJournal.Failure {
            throw CLIFailure(message: failure.description, exitCode: CLIExit.dataError)
        } catch {
            throw CLIFailure(message: "--journal '\(journalPath)': \(error)", exitCode: CLIExit.cannotCreate)
        }
    }

    /// Sends the campaign's tokens through `client`, committing verdicts before they reach `sink`.
    func send(client: APNSClient, shared: APNSPreparedNotification, sink: ResultSink, stopper: InterruptHandler) async {
        for _ in 0..<self.badLines { sink.addBadLine() }
        let gate = CommitGate()
        let feed = JournalFeed(campaign: self, gate: gate, stopper: stopper)
        let campaign = self.journal.campaign
        let entries = self.entries
        let bulk = client.sendBulk(shared, to: feed, apnsIDs: { index in APNSID(campaign: campaign, index: entries[index].index) })
        stopper.onStop({
            gate.release()
            bulk.stop()
        }, abandon: { bulk.cancel() })
        var pending: [APNSBulkVerdict] = []
        var failed = false
        /// The bulk's verdicts so far: every token it read gets one, so this is how many it read.
        var answered = 0
        func commit() async {
            guard !pending.isEmpty, !failed else { return }
            do {
                try await self.journal.commit(verdicts: pending.map { CampaignJournal.Verdict(index: entries[$0.index].index, $0.outcome) })
            } catch {
                // Nothing more is printed: a verdict not committed would be sent again, so it is not shown as final.
                Output.diagnostic("error: --journal: committing verdicts failed: \(error); stopping")
                failed = true
                stopper.stop(.interrupted)
                return
            }
            gate.advance(by: pending.count)
            for verdict in pending {
                sink.record(TokenResult(token: verdict.token, outcome: verdict.outcome, line: entries[verdict.index].line))
            }
            pending.removeAll(keepingCapacity: true)
        }
        for await verdict in bulk {
            answered += 1
            var verdict = verdict
            if self.sentBefore.contains(entries[verdict.index].index) { verdict.outcome = verdict.outcome.sentAgain }
            pending.append(verdict)
            if pending.count >= Self.commitBatch { await commit() }
        }
        await commit()
        // Marked `sending` but never read (the bulk stopped reading mid-batch): those never left,
        // so their sends are taken back; they stay to send, and are not flagged for this run.
        let unread = entries[min(answered, entries.count)..<max(gate.marked, answered)].map {
            CampaignJournal.Verdict(index: $0.index, outcome: .notSent, reason: "stopped before sending")
        }
        if !failed, !unread.isEmpty {
            do { try await self.journal.commit(verdicts: unread) } catch {
                Output.diagnostic("error: --journal: committing the unsent tokens failed: \(error)")
            }
        }
        if let error = bulk.summary?.inputError { Output.diagnostic("error: --journal: sending stopped: \(error)") }
        if bulk.summary?.stoppedReading == true { sink.markInputStopped() }
    }
}

extension APNSBulkVerdict.Outcome {
    /// The outcome of a token an earlier run sent with no committed verdict: that copy may have
    /// been delivered too.
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

/// The campaign's tokens as the bulk reads them: each batch committed as `sending` first, and no
/// batch handed out while the tokens without a committed verdict would exceed the window.
private struct JournalFeed: AsyncSequence, Sendable {
    typealias Element = String

    let campaign: JournalCampaign
    let gate: CommitGate
    let stopper: InterruptHandler

    struct AsyncIterator: AsyncIteratorProtocol {
        let feed: JournalFeed
        /// The next token's position in the campaign's entries, and the end of the batch marked.
        var position = 0
        var marked = 0

        mutating func next() async throws -> String? {
            let entries = self.feed.campaign.entries
            let journal = self.feed.campaign.journal
            guard self.position < entries.count else { return nil }
            if self.position == self.marked {
                let end = Swift.min(self.position + JournalCampaign.markBatch, entries.count)
                await self.feed.gate.wait(untilCommitted: end - JournalCampaign.window)
                guard self.feed.stopper.reason == nil else { return nil }
                try await journal.markSending(entries[self.position..<end].map(\.index))
                self.marked = end
                self.feed.gate.noteMarked(end)
            }
            guard self.feed.stopper.reason == nil else { return nil }
            defer { self.position += 1 }
            return entries[self.position].token
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(feed: self) }
}

/// How many of the bulk's tokens have a committed verdict; the feed waits here for the window.
private final class CommitGate: Sendable {
    private struct State {
        var committed = 0
        var marked = 0
        var released = false
        var waiters: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = LockedBox(State())

    /// Returns once `target` verdicts are committed, or the gate is released.
    func wait(untilCommitted target: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = self.state.withLock { state -> Bool in
                if state.released || state.committed >= target { return true }
                state.waiters.append((target, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// How many of the bulk's tokens the feed has marked `sending`.
    var marked: Int { self.state.withLock { $0.marked } }

    func noteMarked(_ count: Int) {
        self.state.withLock { $0.marked = count }
    }

    func advance(by count: Int) {
        self.resume { state in
            state.committed += count
            return state.committed
        }
    }

    /// Stopped: no waiter waits any longer.
    func release() {
        self.resume { state in
            state.released = true
            return Int.max
        }
    }

    private func resume(_ change: (inout State) -> Int) {
        let ready = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let reached = change(&state)
            let ready = state.waiters.filter { $0.target <= reached }.map(\.continuation)
            state.waiters.removeAll { $0.target <= reached }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}
