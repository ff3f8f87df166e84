import ForgeAPNs
import ForgeAPNsCore
import Foundation

/// One real send of `apnsctl send`: tokens from flags or a file, results to stdout, the progress
/// bar and Ctrl-C on stderr; returns the exit code.
struct SendSession {
    enum Tokens {
        /// `--token`, already validated.
        case list([DeviceToken])
        /// `--tokens-file`: opened when sending starts; `count` is known after a `--strict` first pass.
        case file(open: @Sendable () throws -> TokenLines, count: Int?)
    }

    var client: APNSClient
    var shared: APNSPreparedNotification?
    var tokens: Tokens
    var renderer: ResultRenderer
    /// The most per-line sends in flight.
    var width: Int
    var endpoint: String

    func run() async -> Int32 {
        let stopper = InterruptHandler()
        await stopper.install()
        defer { stopper.uninstall() }
        let total: Int?
        switch self.tokens {
        case .list(let list): total = list.count
        case .file(_, let count): total = count
        }
        // A bar for bulk sends only (one token is done before a bar could help), on a terminal only.
        let isBulk = total.map { $0 > 1 } ?? true
        let progress = isBulk && ProgressBar.isAvailable ? ProgressBar(total: total) : nil
        let sink = ResultSink(renderer: self.renderer, progress: progress, stopper: stopper)
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
        switch stopper.reason {
        case .interrupted:
            var note = "interrupted: \(counts.total - counts.notSent) sent, \(counts.notSent) not sent"
            if let line = counts.unreadAfterLine { note += "; the input after line \(line) was not read (resume from line \(line + 1))" }
            Output.diagnostic(note)
            return CLIExit.interrupted
        case .unreachable(let detail) where counts.accepted == 0 && counts.rejectedCount == 0:
            var note = "error: cannot reach \(self.endpoint): \(detail)\(ClientFactory.hint(forTransportDetail: detail))"
            if let line = counts.unreadAfterLine {
                note += "\n\(counts.notSent) not sent; the input after line \(line) was not read (resume from line \(line + 1))"
            }
            Output.diagnostic(note)
            return CLIExit.unavailable
        default:
            return counts.problems == 0 && counts.badLines == 0 ? 0 : 1
        }
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
            stopper.onStop { bulk.cancel() }
            for await verdict in bulk { sink.record(TokenResult(token: verdict.token, outcome: verdict.outcome)) }
        case .file(let open, _):
            let perLine = PerLineSender(client: self.client, width: self.width, sink: sink)
            stopper.onStop { perLine.stop() }
            let source = TokenSource(open: open, tally: sink, perLine: perLine)
            await withDiscardingTaskGroup { group in
                group.addTask { await perLine.run() }
                defer { perLine.finish() }
                if let shared = self.shared {
                    let bulk = self.client.sendBulk(shared, to: source)
                    stopper.onStop { bulk.cancel() }
                    for await verdict in bulk { sink.record(TokenResult(token: verdict.token, outcome: verdict.outcome)) }
                    if let error = bulk.summary?.inputError { Output.diagnostic("error: reading tokens stopped: \(error)") }
                    // Cancelled: the bulk stops reading, so what follows in the file was never read.
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
