import ArgumentParser
import ForgeAPNsCore
import ForgeCampaign
import ForgeCampaignPostgres
import Foundation
import Synchronization

extension APNSCtl {
    struct Campaign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Campaigns that survive a crash: report a journal (send --journal), or run one in PostgreSQL across machines.",
            discussion: """
                --postgres URL: postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=require|prefer|disable] over TCP (TLS \
                required and verified unless sslmode=disable), or postgres://USER@/DB?host=/SOCKET/DIR[&port=N] over \
                the server's Unix socket in that folder. The password may come from PGPASSWORD.
                """,
            subcommands: [Create.self, Work.self, Watch.self, Report.self]
        )
    }
}

extension APNSCtl.Campaign {
    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print one final verdict per token of a campaign, and a summary.",
            discussion: """
                With --json: one object per token of the file, in file order ("token", "index" from 0 among the \
                file's tokens, "line", "outcome": accepted, rejected, failed or not_sent, "may_have_been_delivered", \
                "apns_id", "status", "reason", "sends"), then {"summary":true,…} with the counts. A token sent \
                with no committed verdict (the sender was killed and not re-run) is reported as failed, \
                may_have_been_delivered. Without --json: the tokens not accepted, then the summary.
                """
        )

        @Option(name: .long, help: ArgumentHelp("The campaign's journal, as given to send --journal.", valueName: "path"))
        var journal: String?

        @OptionGroup(title: "PostgreSQL (instead of --journal)") var postgres: OptionalPostgresOptions

        @Flag(name: .long, help: "One JSON object per token, then a summary object.")
        var json = false

        func run() async throws {
            guard (self.journal == nil) != (self.postgres.postgres == nil) else {
                throw ValidationError("Give --journal FILE or --postgres URL --name N.")
            }
            try await runReportingFailures {
                let printer = ReportPrinter(json: self.json)
                if let options = try self.postgres.resolved() {
                    let campaign = try await options.open()
                    let summary: CampaignReport.Summary
                    do {
                        summary = try await options.run { try await campaign.report { printer.print($0) } }
                    } catch {
                        // The lines read before the failure are shown, then its message.
                        printer.flush()
                        throw error
                    }
                    printer.finish(summary)
                    return
                }
                guard let path = self.journal, FileManager.default.fileExists(atPath: path) else {
                    throw CLIFailure(message: "--journal: file '\(self.journal ?? "")' does not exist", exitCode: CLIExit.noInput)
                }
                let journal: CampaignJournal
                do {
                    journal = try CampaignJournal.openForReading(path: path)
                } catch {
                    throw CLIFailure(message: "\(error)", exitCode: CLIExit.dataError)
                }
                // A page (one chunk of the journal) at a time: memory does not grow with the campaign.
                var summary = CampaignReport.Summary()
                while true {
                    let rows: [CampaignJournal.Row]
                    do {
                        rows = try await journal.rows(from: summary.total)
                    } catch {
                        printer.flush()
                        throw CLIFailure(message: "\(error)", exitCode: CLIExit.dataError)
                    }
                    if rows.isEmpty { break }
                    for row in rows {
                        let line = CampaignReport.Line(row, campaign: journal.campaign)
                        summary.add(line)
                        printer.print(line)
                    }
                }
                if let fingerprint = journal.fingerprint, !fingerprint.isComplete {
                    try await Self.reportUnread(fingerprint, journal: journal, summary: &summary, printer: printer)
                }
                printer.finish(summary)
            }
        }
    }
}

extension APNSCtl.Campaign.Report {
    /// The tokens of a campaign whose send stopped before reading its whole file: each `not_sent`,
    /// read from the file (after checking that its first tokens are the journal's), so the report
    /// still has one line per token of the file.
    static func reportUnread(
        _ fingerprint: CampaignJournal.Fingerprint, journal: CampaignJournal, summary: inout CampaignReport.Summary, printer: ReportPrinter
    ) async throws {
        // Its diagnostics follow the lines before them.
        printer.flush()
        let registered = summary.total
        guard let pushType = APNSPushType(rawValue: fingerprint.pushType), let topic = try? APNSTopic(fingerprint.topic, pushType: pushType),
            let lines = try? TokenLines(
                path: fingerprint.tokensPath,
                headers: NotificationOptions.Headers(
                    topicText: fingerprint.topic, pushType: pushType, topic: topic, priority: nil, expiration: .none, collapseID: nil, apnsID: nil
                ),
                hasSharedPayload: true
            )
        else {
            Output.diagnostic(
                "campaign: its send read \(registered) tokens of '\(fingerprint.tokensPath)', which cannot be read now: the tokens after them are not in this report"
            )
            return
        }
        lines.quiet = true
        do {
            _ = try await JournalCampaign.compareRegistered(registered, lines: lines, journal: journal)
        } catch {
            Output.diagnostic("campaign: '\(fingerprint.tokensPath)' changed since its send read it: the tokens after the first \(registered) are not in this report")
            return
        }
        var index = registered
        while let line = lines.next() {
            guard case .entry(let entry) = line else { continue }
            let row = CampaignJournal.Row.unread(index: index, line: entry.line, token: entry.token.hexString)
            let reported = CampaignReport.Line(row, campaign: journal.campaign)
            summary.add(reported)
            printer.print(reported)
            index += 1
        }
    }
}

/// Prints a report's lines as `campaign report` does: with --json every line and the summary as
/// JSON objects (``CampaignReport/Line/appendJSON(to:)``); otherwise the tokens not accepted, then
/// the summary's sentence. Lines printed one by one are written a buffer at a time; a batch is
/// written at once, so a worker's committed verdicts show as they are committed.
final class ReportPrinter: Sendable {
    let json: Bool
    private let buffer = Mutex<[UInt8]>([])
    private static let bufferSize = 1 << 16

    init(json: Bool) {
        self.json = json
    }

    /// Buffers `line`, writing the buffer once it is full.
    func print(_ line: CampaignReport.Line) {
        let full = self.buffer.withLock { buffer -> [UInt8]? in
            self.append(line, to: &buffer)
            guard buffer.count >= Self.bufferSize else { return nil }
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        if let full { Output.results(full) }
    }

    /// Writes what is buffered and `lines` now.
    func print(_ lines: [CampaignReport.Line]) {
        let bytes = self.buffer.withLock { buffer -> [UInt8] in
            for line in lines { self.append(line, to: &buffer) }
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        if !bytes.isEmpty { Output.results(bytes) }
    }

    /// Writes what is buffered (before a diagnostic, which must follow the lines before it).
    func flush() {
        self.print([])
    }

    /// Writes what is buffered, then the summary.
    func finish(_ summary: CampaignReport.Summary) {
        self.flush()
        if self.json {
            var bytes: [UInt8] = []
            summary.appendJSON(to: &bytes)
            bytes.append(0x0a)
            Output.results(bytes)
        } else {
            Output.result(summary.text)
        }
    }

    private func append(_ line: CampaignReport.Line, to buffer: inout [UInt8]) {
        if self.json {
            line.appendJSON(to: &buffer)
        } else {
            guard line.outcome != "accepted" else { return }
            buffer.append(contentsOf: line.text.utf8)
        }
        buffer.append(0x0a)
    }
}
