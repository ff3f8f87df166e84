import ArgumentParser
import ForgeAPNsCore
import ForgeCampaign
import Foundation

extension APNSCtl {
    struct Campaign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Read a campaign's journal (apnsctl send --journal).",
            subcommands: [Report.self]
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
        var journal: String

        @Flag(name: .long, help: "One JSON object per token, then a summary object.")
        var json = false

        func run() async throws {
            try await runReportingFailures {
                guard FileManager.default.fileExists(atPath: self.journal) else {
                    throw CLIFailure(message: "--journal: file '\(self.journal)' does not exist", exitCode: CLIExit.noInput)
                }
                let journal: CampaignJournal
                let rows: [CampaignJournal.Row]
                do {
                    journal = try CampaignJournal.openForReading(path: self.journal)
                    rows = try await journal.report()
                } catch {
                    throw CLIFailure(message: "\(error)", exitCode: CLIExit.dataError)
                }
                var summary = Summary()
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                for row in rows {
                    let line = Line(row, campaign: journal.campaign)
                    summary.add(line)
                    if self.json {
                        Output.result(String(decoding: try encoder.encode(line), as: UTF8.self))
                    } else if line.outcome != "accepted" {
                        var text = "line \(line.line): \(line.token) \(line.outcome)"
                        if let reason = line.reason { text += " (\(reason))" }
                        if line.mayHaveBeenDelivered { text += ", may have been delivered" }
                        Output.result(text)
                    }
                }
                Output.result(self.json ? String(decoding: try encoder.encode(summary), as: UTF8.self) : summary.text)
            }
        }
    }

    /// One token's final verdict as the report prints it.
    struct Line: Encodable {
        var token: String
        var index: Int
        var line: Int
        var outcome: String
        var mayHaveBeenDelivered: Bool
        var apnsID: String?
        var status: Int?
        var reason: String?
        var sends: Int

        init(_ row: CampaignJournal.Row, campaign: UUID) {
            self.token = row.token
            self.index = row.index
            self.line = row.line
            // Sent, no committed verdict: its fate is unknown, as a failed push's is.
            let unanswered = row.state == "sending"
            self.outcome = unanswered ? CampaignJournal.Outcome.failed.rawValue : row.state
            self.mayHaveBeenDelivered = row.mayHaveBeenDelivered || unanswered
            // Every send of a token carried the campaign's id for its index.
            self.apnsID = row.apnsID ?? (row.sends > 0 ? APNSID(campaign: campaign, index: row.index).description : nil)
            self.status = row.status
            self.reason = unanswered ? "sent, no committed verdict" : row.reason
            self.sends = row.sends
        }

        enum CodingKeys: String, CodingKey {
            case token, index, line, outcome, status, reason, sends
            case mayHaveBeenDelivered = "may_have_been_delivered"
            case apnsID = "apns_id"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(self.token, forKey: .token)
            try container.encode(self.index, forKey: .index)
            try container.encode(self.line, forKey: .line)
            try container.encode(self.outcome, forKey: .outcome)
            try container.encode(self.mayHaveBeenDelivered, forKey: .mayHaveBeenDelivered)
            // Absent values as null, so every object has the same keys.
            try container.encode(self.apnsID, forKey: .apnsID)
            try container.encode(self.status, forKey: .status)
            try container.encode(self.reason, forKey: .reason)
            try container.encode(self.sends, forKey: .sends)
        }
    }

    /// The counts of a report.
    struct Summary: Encodable {
        var summary = true
        var total = 0
        var accepted = 0
        var rejected = 0
        var failed = 0
        var notSent = 0
        var mayHaveBeenDelivered = 0

        mutating func add(_ line: Line) {
            self.total += 1
            switch line.outcome {
            case "accepted": self.accepted += 1
            case "rejected": self.rejected += 1
            case "failed": self.failed += 1
            default: self.notSent += 1
            }
            if line.mayHaveBeenDelivered { self.mayHaveBeenDelivered += 1 }
        }

        var text: String {
            "campaign: \(self.total) tokens: \(self.accepted) accepted, \(self.rejected) rejected, \(self.failed) failed, "
                + "\(self.notSent) not sent; \(self.mayHaveBeenDelivered) may have been delivered (sent again, or no answer)"
        }

        enum CodingKeys: String, CodingKey {
            case summary, total, accepted, rejected, failed
            case notSent = "not_sent"
            case mayHaveBeenDelivered = "may_have_been_delivered"
        }
    }
}
