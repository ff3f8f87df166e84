import ArgumentParser
import ForgeAPNsCore
import ForgeCampaign
import ForgeCampaignPostgres
import Foundation

extension APNSCtl {
    struct Campaign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Campaigns that survive a crash: report a journal (send --journal), or run one in PostgreSQL across machines.",
            discussion: """
                --postgres URL: postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=require|disable] over TCP (TLS \
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
                    let summary = try await options.run { try await campaign.report { try printer.print($0) } }
                    try printer.finish(summary)
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
                        throw CLIFailure(message: "\(error)", exitCode: CLIExit.dataError)
                    }
                    if rows.isEmpty { break }
                    for row in rows {
                        let line = CampaignReport.Line(row, campaign: journal.campaign)
                        summary.add(line)
                        try printer.print(line)
                    }
                }
                if let fingerprint = journal.fingerprint, !fingerprint.isComplete {
                    try await Self.reportUnread(fingerprint, journal: journal, summary: &summary, printer: printer)
                }
                try printer.finish(summary)
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
            try printer.print(reported)
            index += 1
        }
    }
}

/// Prints a report's lines as `campaign report` does: with --json every line and the summary as
/// JSON objects; otherwise the tokens not accepted, then the summary's sentence.
struct ReportPrinter {
    var json: Bool
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    init(json: Bool) {
        self.json = json
    }

    func text(_ line: CampaignReport.Line) throws -> String? {
        if self.json { return String(decoding: try self.encoder.encode(line), as: UTF8.self) }
        return line.outcome == "accepted" ? nil : line.text
    }

    func print(_ line: CampaignReport.Line) throws {
        if let text = try self.text(line) { Output.result(text) }
    }

    /// Several lines in one write.
    func print(_ lines: [CampaignReport.Line]) throws {
        let texts = try lines.compactMap { try self.text($0) }
        if !texts.isEmpty { Output.result(texts.joined(separator: "\n")) }
    }

    func finish(_ summary: CampaignReport.Summary) throws {
        Output.result(self.json ? String(decoding: try self.encoder.encode(summary), as: UTF8.self) : summary.text)
    }
}
