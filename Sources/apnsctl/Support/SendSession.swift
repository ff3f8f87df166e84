import ForgeAPNs
import ForgeAPNsCore
import ForgeCampaign
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One real send of `apnsctl send`: tokens from flags or a file, results to stdout, the progress
/// bar and Ctrl-C on stderr; returns the exit code.
struct SendSession {
    enum Tokens {
        /// `--token`, already validated.
        case list([DeviceToken])
        /// `--tokens-file`: opened when sending starts; `count` is known after a `--strict` first pass.
        case file(open: @Sendable () throws -> TokenLines, count: Int?)
        /// `--tokens-file` with `--journal`: the tokens the journal has no final verdict for.
        case journal(JournalCampaign)
    }

    var client: APNSClient
    var shared: APNSPreparedNotification?
    var tokens: Tokens
    var renderer: ResultRenderer
    /// The most per-line sends in flight.
    var width: Int
    var endpoint: String
    /// LA007 across the lines of a tokens file; `nil` when it is silenced.
    var frequentUpdates: FrequentUpdates?

    func run() async -> Int32 {
        let stopper = InterruptHandler()
        return await stopper.catchingInterrupts { await self.run(stopper: stopper) }
    }

    private func run(stopper: InterruptHandler) async -> Int32 {
        let total: Int?
        switch self.tokens {
        case .list(let list): total = list.count
        case .file(_, let count): total = count
        case .journal(let campaign): total = campaign.total
        }
        // A bar for bulk sends only (one token is done before a bar could help), on a terminal only.
        let isBulk = total.map { $0 > 1 } ?? true
        let progress = isBulk && ProgressBar.isAvailable ? ProgressBar(total: total) : nil
        // On a terminal a bulk send prints only what needs attention; the bar shows the rest.
        var renderer = self.renderer
        if renderer.format == .human, isBulk, isatty(STDOUT_FILENO) == 1 { renderer.omitsAccepted = true }
        let sink = ResultSink(
            renderer: renderer, progress: progress, stopper: stopper, frequentUpdates: self.isFromFile ? self.frequentUpdates : nil
        )
        let started = ContinuousClock.now

        // Lines wait in a buffer while results arrive; a tick writes them (and redraws the bar)
        // when the results stall, as during retries.
        let failure = await withTaskGroup(of: Void.self) { group -> Int32? in
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    sink.tick()
                }
            }
            defer { group.cancelAll() }
            return await self.sendAll(sink: sink, stopper: stopper)
        }
        if let failure { return failure }

        let counts = sink.finish(seconds: ProgressBar.seconds(.now - started))
        if let warning = sink.frequentUpdates?.warning() { Output.diagnostic(warning) }
        for hint in sink.hints() { Output.diagnostic(hint) }
        let resume = self.isFromFile ? sink.resumePoint() : nil
        switch stopper.reason {
        case .interrupted:
            var note = "interrupted: \(counts.verdicts.total - counts.verdicts.notSent - counts.inFlight) answered, \(counts.inFlight) in flight at the stop, "
                + "\(counts.verdicts.notSent) not sent"
            if let resume { note += "; " + Self.resumeAdvice(resume) + "\n" + ResumeCommand.line(resumeFrom: resume.line) }
            if self.isJournal { note += "; resume by running the same command again (the journal sends only what has no final verdict)" }
            Output.diagnostic(note)
            return CLIExit.interrupted
        case .unreachable(let detail):
            let answered = counts.verdicts.accepted + counts.verdicts.rejectedCount
            var note = answered == 0
                ? "error: cannot reach \(self.endpoint): \(detail)"
                : "error: \(self.endpoint) became unreachable after \(answered) answered: \(detail)"
            if let resume { note += "\n\(counts.verdicts.notSent) not sent; " + Self.resumeAdvice(resume) + "\n" + ResumeCommand.line(resumeFrom: resume.line) }
            Output.diagnostic(note)
            return CLIExit.unavailable
        default:
            return counts.problems == 0 && counts.badLines == 0 ? 0 : 1
        }
    }

    private var isFromFile: Bool {
        if case .file = self.tokens { return true }
        return false
    }

    private var isJournal: Bool {
        if case .journal = self.tokens { return true }
        return false
    }

    /// `resume with --resume-from L`, and how many tokens after L would go a second time.
    static func resumeAdvice(_ resume: (line: Int, settledAfter: Int)) -> String {
        var text = "resume with --resume-from \(resume.line) (the first line not sent or with no answer)"
        if resume.settledAfter > 0 {
            text += "; \(resume.settledAfter) token\(resume.settledAfter == 1 ? "" : "s") after it already had an answer and would be sent again"
        }
        return text
    }

    /// Sends every token, recording each result in `sink`; returns an exit code when sending could not start.
    private func sendAll(sink: ResultSink, stopper: InterruptHandler) async -> Int32? {
        switch self.tokens {
        case .list(let list):
            guard let shared = self.shared else {
                Output.diagnostic("error: internal: --token without a shared payload")
                return CLIExit.software
            }
            let bulk = self.client.sendBulk(shared, to: list)
            stopper.onStop({ bulk.stop() }, abandon: { bulk.cancel() })
            sink.follow { bulk.counts }
            for await verdict in bulk { sink.record(TokenResult(token: verdict.token, outcome: verdict.outcome), countedBySender: true) }
        case .journal(let campaign):
            guard let shared = self.shared else {
                Output.diagnostic("error: internal: --journal without a shared payload")
                return CLIExit.software
            }
            if let code = await campaign.send(client: self.client, shared: shared, sink: sink, stopper: stopper) { return code }
        case .file(let open, _):
            let perLine = PerLineSender(client: self.client, width: self.width, sink: sink)
            stopper.onStop({ perLine.stop() }, abandon: { perLine.abandon() })
            let lines = LineMap()
            let source = TokenSource(open: open, tally: sink, perLine: perLine, lines: lines, stopper: stopper)
            await withDiscardingTaskGroup { group in
                group.addTask { await perLine.run() }
                defer { perLine.finish() }
                if let shared = self.shared {
                    let bulk = self.client.sendBulk(shared, to: source)
                    stopper.onStop({ bulk.stop() }, abandon: { bulk.cancel() })
                    sink.follow { bulk.counts }
                    for await verdict in bulk {
                        sink.record(
                            TokenResult(token: verdict.token, outcome: verdict.outcome, line: lines.line(of: verdict.index)), countedBySender: true
                        )
                    }
                    if let error = bulk.summary?.inputError { Output.diagnostic("error: reading tokens stopped: \(error)") }
                    // Stopped: the bulk stops reading, so what follows in the file was never read.
                    if bulk.summary?.stoppedReading == true { sink.markInputStopped() }
                } else {
                    // Every usable line carries its own payload: read them all into the per-line sender.
                    var iterator = source.makeAsyncIterator()
                    do {
                        while try await iterator.next() != nil {}
                    } catch {
                        Output.diagnostic("error: reading tokens stopped: \(error)")
                    }
                }
            }
        }
        return nil
    }
}
