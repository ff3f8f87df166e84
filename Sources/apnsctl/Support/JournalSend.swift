import ForgeAPNs
import ForgeAPNsCore
import ForgeCampaign
import ForgeCrypto
import ForgeSupport
import Foundation

/// `apnsctl send --journal`: the library's journaled send (``CampaignSend``) over a tokens file,
/// so that re-running the same command after a crash (even SIGKILL) resumes the campaign.
///
/// A new campaign is begun with its inputs, and its tokens are registered as the send reads the
/// file (one pass, hashed as it goes; the first push leaves at once). On resume the inputs are
/// compared first: a campaign whose file was read to the end is compared by the file's hash; one
/// cut short while reading is compared token by token up to where it stopped, and the send then
/// reads on from there. Nothing is sent before the comparison passes.
struct JournalCampaign {
    let journal: CampaignJournal
    /// This process's hold on the journal, for the whole run: a second `send` on it exits 75.
    let lock: CampaignJournal.Lock
    /// The campaign's counts when this run starts (the registered tokens only, while the file is not read to its end).
    let progress: CampaignJournal.Progress
    /// Lines of the file that are not a token, with their problem, reported on stderr while
    /// comparing (more are reported as the send reads).
    let badLines: [(line: Int, problem: String)]
    /// The most tokens handed to the sender without a committed verdict.
    let window: Int
    /// What this run sends, when known (for the progress bar).
    let total: Int?
    /// The file, positioned after the tokens registered, when the send reads on (registration not complete).
    private let rest: TokenLines?
    private let digest: SHA256Digest

    /// Opens (or creates) the journal for `tokens` and `shared`: a changed input is refused with
    /// exit 65, naming the fields; bad lines are reported on stderr and skipped (with `strict`,
    /// nothing is sent and no journal is made: exit 65).
    static func prepare(
        journalPath: String, tokensPath: String, shared: APNSPreparedNotification, environment: String,
        headers: NotificationOptions.Headers, strict: Bool, window: Int
    ) async throws -> JournalCampaign {
        if strict {
            // Every bad line is reported before the journal exists.
            _ = try TokenFileReading.open(path: tokensPath, strict: true, headers: headers, hasSharedPayload: true)
        }
        // A line with its own payload stops a journaled send: found before anything is sent.
        try Self.refuseOwnPayloads(tokensPath: tokensPath, headers: headers)
        let lines = try TokenLines(path: tokensPath, headers: headers, hasSharedPayload: true)
        let digest = SHA256Digest()
        lines.digest = digest
        guard let payloadHash = SHA256Digest.hex(shared.body) else {
            throw CLIFailure(message: "--journal: cannot hash the campaign's payload", exitCode: CLIExit.software)
        }
        // The inputs known before the file is read; its size and hash follow once it is.
        var fingerprint = CampaignJournal.Fingerprint(
            payloadSHA256: payloadHash, topic: shared.topic.rawValue, pushType: shared.pushType.rawValue, environment: environment,
            tokensPath: URL(fileURLWithPath: tokensPath).standardizedFileURL.path, tokensSize: -1, tokensSHA256: ""
        )
        do {
            // Before anything is read or sent: a second process on the journal stops here.
            let lock = try CampaignJournal.lock(path: journalPath)
            let journal = try CampaignJournal.open(path: journalPath)
            var badLines: [(line: Int, problem: String)] = []
            guard let stored = journal.fingerprint else {
                try await journal.begin(fingerprint)
                let total = ProgressBar.isAvailable ? TokenFileReading.countTokenLines(tokensPath) : nil
                return JournalCampaign(
                    journal: journal, lock: lock, progress: CampaignJournal.Progress(total: 0, final: 0, unsettled: 0), badLines: [],
                    window: window,
                    total: total, rest: lines, digest: digest
                )
            }
            try journal.verify(fingerprint)
            let progress = try await journal.progress()
            if stored.isComplete {
                // Read to its end before: the whole file's hash decides.
                while let line = lines.next() {
                    if case .bad(let number, let problem) = line {
                        lines.report(line: number, problem: problem)
                        badLines.append((number, problem))
                    }
                }
                guard let tokensHash = digest.finalHex() else {
                    throw CLIFailure(message: "--journal: cannot hash the tokens file", exitCode: CLIExit.software)
                }
                fingerprint.tokensSize = lines.bytesRead
                fingerprint.tokensSHA256 = tokensHash
                try journal.verify(fingerprint)
            } else {
                badLines = try await Self.compareRegistered(progress.total, lines: lines, journal: journal)
            }
            Output.diagnostic(
                "journal: resuming campaign \(journal.campaign.uuidString.lowercased()): \(progress.final) of \(progress.total) tokens final"
                    + (stored.isComplete ? "" : " (the file was read up to token \(progress.total); reading on from there)")
                    + ", \(progress.unsettled) sent before without a final verdict (sending or failed: sent again, flagged may_have_been_delivered)"
            )
            let total = stored.isComplete
                ? progress.remaining
                : (ProgressBar.isAvailable ? TokenFileReading.countTokenLines(tokensPath).map { $0 - progress.final } : nil)
            return JournalCampaign(
                journal: journal, lock: lock, progress: progress, badLines: badLines, window: window, total: total,
                rest: stored.isComplete ? nil : lines, digest: digest
            )
        } catch let failure as CampaignJournal.Failure {
            throw CLIFailure(message: Self.message(failure), exitCode: Self.exitCode(failure))
        }
    }

    /// Reads the file's first `registered` tokens and compares each with the journal's (token and
    /// line); returns the bad lines met. The file is left after the last of them.
    /// - Throws: ``CLIFailure`` 65 at the first difference, or when the file ends before.
    static func compareRegistered(
        _ registered: Int, lines: TokenLines, journal: CampaignJournal
    ) async throws -> [(line: Int, problem: String)] {
        var badLines: [(line: Int, problem: String)] = []
        var index = 0
        var rows: [CampaignJournal.Row] = []
        var cursor = 0
        while index < registered {
            guard let line = lines.next() else {
                throw Self.changedTokens(journal, "the file ends at token \(index), and \(registered) were registered")
            }
            switch line {
            case .skipped:
                continue
            case .bad(let number, let problem):
                lines.report(line: number, problem: problem)
                badLines.append((number, problem))
            case .entry(let entry):
                if cursor == rows.count {
                    rows = try await journal.rows(from: index)
                    cursor = 0
                }
                guard cursor < rows.count, rows[cursor].token == entry.token.hexString, rows[cursor].line == entry.line else {
                    throw Self.changedTokens(journal, "token \(index) (line \(entry.line)) is not the one registered")
                }
                cursor += 1
                index += 1
            }
        }
        return badLines
    }

    private static func changedTokens(_ journal: CampaignJournal, _ detail: String) -> CLIFailure {
        CLIFailure(
            message: "--journal '\(journal.path)' is a campaign with other inputs: changed tokens_sha256 (\(detail)); "
                + "resume with the same inputs, or start a new journal",
            exitCode: CLIExit.dataError
        )
    }

    /// Refuses a file with a line that carries its own payload or topic (`--journal` sends one
    /// shared payload), before anything is sent: a file with no `{` at all is passed at the cost of a scan.
    private static func refuseOwnPayloads(tokensPath: String, headers: NotificationOptions.Headers) throws {
        guard TokenFileReading.containsByte(UInt8(ascii: "{"), path: tokensPath) != false else { return }
        let lines = try TokenLines(path: tokensPath, headers: headers, hasSharedPayload: true)
        while let line = lines.next() {
            if case .entry(let entry) = line, entry.notification != nil {
                throw CLIFailure(
                    message: "\(lines.name):\(entry.line): --journal sends one shared payload; this line has its own payload or topic",
                    exitCode: CLIExit.dataError
                )
            }
        }
    }

    /// The send's reader of the tokens not registered yet: up to `limit` a call, then the file's
    /// size and hash with the last page. Bad lines are reported and counted in `sink` as they come.
    private func reader(sink: ResultSink) -> (@Sendable (Int) throws(CampaignJournal.Failure) -> CampaignJournal.TokenPage)? {
        guard let rest = self.rest else { return nil }
        let state = LockedBox((lines: rest, digest: self.digest, next: self.progress.total))
        return { limit throws(CampaignJournal.Failure) in
            try state.withLock { state throws(CampaignJournal.Failure) in
                var entries: [CampaignJournal.Entry] = []
                entries.reserveCapacity(limit)
                while entries.count < limit {
                    guard let line = state.lines.next() else {
                        guard let hash = state.digest.finalHex() else {
                            throw CampaignJournal.Failure(kind: .storage, description: "journal: cannot hash the tokens file")
                        }
                        return CampaignJournal.TokenPage(entries: entries, end: (state.lines.bytesRead, hash))
                    }
                    switch line {
                    case .skipped:
                        continue
                    case .bad(let number, let problem):
                        state.lines.report(line: number, problem: problem)
                        sink.addBadLine(line: number, problem: problem)
                    case .entry(let entry):
                        entries.append(CampaignJournal.Entry(index: state.next, line: entry.line, token: entry.token.hexString))
                        state.next += 1
                        // The summary's "input after line N not read" counts what the journal registered.
                        sink.noteLineRead(entry.line)
                    }
                }
                return CampaignJournal.TokenPage(entries: entries)
            }
        }
    }

    /// The library's message under the flag it is about (its own text names the journal file).
    private static func message(_ failure: CampaignJournal.Failure) -> String {
        failure.kind == .invalidArgument ? "--journal-window: \(failure.description)" : "--\(failure.description)"
    }

    private static func exitCode(_ failure: CampaignJournal.Failure) -> Int32 {
        switch failure.kind {
        case .changedInputs, .invalidArgument: CLIExit.dataError
        case .unusable: CLIExit.cannotCreate
        case .storage: CLIExit.ioError
        case .inUse: CLIExit.temporaryFailure
        }
    }

    /// Sends the campaign's tokens through `client`; a verdict reaches `sink` once committed.
    /// - Returns: 74 (nothing more printed) when a journal write failed; `nil` otherwise.
    func send(client: APNSClient, shared: APNSPreparedNotification, sink: ResultSink, stopper: InterruptHandler) async -> Int32? {
        for bad in self.badLines { sink.addBadLine(line: bad.line, problem: bad.problem) }
        let send: CampaignSend
        do {
            send = try self.journal.send(shared, client: client, window: self.window, read: self.reader(sink: sink))
        } catch {
            Output.diagnostic("error: " + Self.message(error))
            return Self.exitCode(error)
        }
        stopper.onStop({ send.stop() }, abandon: { send.cancel() })
        sink.follow { send.counts }
        do {
            for try await verdict in send {
                sink.record(TokenResult(token: verdict.entry.token, outcome: verdict.outcome, line: verdict.entry.line), countedBySender: true)
            }
        } catch {
            // What was committed is printed; nothing after it, and no summary: the tokens without a
            // committed verdict are sent again by the next run.
            sink.tick()
            Output.diagnostic("error: \(Self.message(error)); stopped (the tokens without a committed verdict are sent again by the next run)")
            return CLIExit.ioError
        }
        // Lines of the file not read yet exist only while the campaign's registration is not complete.
        if send.summary?.stoppedReading == true, self.journal.fingerprint?.isComplete == false { sink.markInputStopped() }
        // Stopped early (Ctrl-C, an unreachable endpoint) or tokens without a final verdict (failed):
        // say what the journal holds for the next run; the verdicts printed cover only this run's tokens.
        if let progress = try? await self.journal.progress() {
            if self.journal.fingerprint?.isComplete == false {
                Output.diagnostic(
                    "journal: the tokens file was read up to token \(progress.total), \(progress.remaining) of them with no final verdict; "
                        + "run the same command again to send them and the rest"
                )
            } else if progress.remaining > 0 {
                Output.diagnostic(
                    "journal: \(progress.remaining) of \(progress.total) tokens have no final verdict; run the same command again to send them"
                )
            }
        }
        return nil
    }
}
