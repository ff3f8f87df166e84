import ForgeAPNs
import ForgeAPNsCore
import ForgeCampaign
import ForgeCrypto
import Foundation

/// `apnsctl send --journal`: the library's journaled send (``CampaignSend``) over a tokens file,
/// so that re-running the same command after a crash (even SIGKILL) resumes the campaign.
///
/// The file is read once, as a stream: hashed and, for a new campaign, registered in the journal in
/// batches; on resume its hash is compared first and nothing is registered. The sender then reads
/// the tokens to send from the journal, a page at a time.
struct JournalCampaign {
    let journal: CampaignJournal
    /// The campaign's counts when this run starts (``CampaignJournal/Progress/remaining`` is what it sends).
    let progress: CampaignJournal.Progress
    /// Lines of the file that are not a token (reported on stderr when read).
    let badLines: Int
    /// The most tokens handed to the sender without a committed verdict.
    let window: Int

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
        let lines = try TokenLines(path: tokensPath, headers: headers, hasSharedPayload: true)
        let digest = SHA256Digest()
        lines.digest = digest
        do {
            let journal = try CampaignJournal.open(path: journalPath)
            // A resumed campaign registers nothing: the file is only hashed, and compared before anything is sent.
            let registration = journal.isResumed ? nil : try await journal.registration()
            var badLines = 0
            var tokens = 0
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
                    try await registration?.add(CampaignJournal.Entry(index: tokens, line: entry.line, token: entry.token.hexString))
                    tokens += 1
                }
            }
            guard let payloadHash = SHA256Digest.hex(shared.body), let tokensHash = digest.finalHex() else {
                throw CLIFailure(message: "--journal: cannot hash the campaign's inputs", exitCode: CLIExit.software)
            }
            let fingerprint = CampaignJournal.Fingerprint(
                payloadSHA256: payloadHash, topic: shared.topic.rawValue, pushType: shared.pushType.rawValue, environment: environment,
                tokensPath: URL(fileURLWithPath: tokensPath).standardizedFileURL.path, tokensSize: lines.bytesRead, tokensSHA256: tokensHash
            )
            if let registration { try await registration.finish(fingerprint: fingerprint) } else { try journal.verify(fingerprint) }
            let progress = try await journal.progress()
            if journal.isResumed {
                Output.diagnostic(
                    "journal: resuming campaign \(journal.campaign.uuidString.lowercased()): \(progress.final) of \(progress.total) tokens final, "
                        + "\(progress.unsettled) sent before without a final verdict (sending or failed: sent again, flagged may_have_been_delivered)"
                )
            }
            return JournalCampaign(journal: journal, progress: progress, badLines: badLines, window: window)
        } catch let failure as CampaignJournal.Failure {
            throw CLIFailure(message: Self.message(failure), exitCode: Self.exitCode(failure))
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
        }
    }

    /// Sends the campaign's tokens through `client`; a verdict reaches `sink` once committed.
    /// - Returns: 74 (nothing more printed) when a journal write failed; `nil` otherwise.
    func send(client: APNSClient, shared: APNSPreparedNotification, sink: ResultSink, stopper: InterruptHandler) async -> Int32? {
        for _ in 0..<self.badLines { sink.addBadLine() }
        let send: CampaignSend
        do {
            send = try self.journal.send(shared, client: client, window: self.window)
        } catch {
            Output.diagnostic("error: " + Self.message(error))
            return Self.exitCode(error)
        }
        stopper.onStop({ send.stop() }, abandon: { send.cancel() })
        do {
            for try await verdict in send {
                sink.record(TokenResult(token: verdict.entry.token, outcome: verdict.outcome, line: verdict.entry.line))
            }
        } catch {
            // What was committed is printed; nothing after it, and no summary: the tokens without a
            // committed verdict are sent again by the next run.
            sink.tick()
            Output.diagnostic("error: \(Self.message(error)); stopped (the tokens without a committed verdict are sent again by the next run)")
            return CLIExit.ioError
        }
        if send.summary?.stoppedReading == true { sink.markInputStopped() }
        // Stopped early (Ctrl-C, an unreachable endpoint) or tokens without a final verdict (failed):
        // say what the journal holds for the next run; the verdicts printed cover only this run's tokens.
        if let progress = try? await self.journal.progress(), progress.remaining > 0 {
            Output.diagnostic(
                "journal: \(progress.remaining) of \(progress.total) tokens have no final verdict; run the same command again to send them"
            )
        }
        return nil
    }
}
