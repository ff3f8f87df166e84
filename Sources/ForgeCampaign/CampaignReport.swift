package import struct Foundation.UUID
internal import ForgeAPNsCore

/// What `apnsctl campaign report --json` prints, the same for a SQLite journal and a PostgreSQL
/// campaign: one ``Line`` per token of the file, in file order, then one ``Summary``.
public enum CampaignReport {
    /// One token's final verdict as the report prints it.
    public struct Line: Encodable, Sendable, Equatable {
        public var token: String
        /// The 0-based position among the file's tokens.
        public var index: Int
        /// The line of the tokens file.
        public var line: Int
        /// `accepted`, `rejected`, `failed` or `not_sent` (``CampaignJournal/Outcome``).
        public var outcome: String
        public var mayHaveBeenDelivered: Bool
        public var apnsID: String?
        public var status: Int?
        public var reason: String?
        /// How many times a sender was handed the token.
        public var sends: Int

        /// A token's stored row as the report shows it: `state` is `sending` (handed to a sender, no
        /// committed verdict) or an ``CampaignJournal/Outcome``'s raw value.
        package init(
            token: String, index: Int, line: Int, state: String, status: Int?, reason: String?, apnsID: String?, sends: Int,
            mayHaveBeenDelivered: Bool, campaign: UUID
        ) {
            self.token = token
            self.index = index
            self.line = line
            // Sent, no committed verdict: its fate is unknown, as a failed push's is.
            let unanswered = state == "sending"
            self.outcome = unanswered ? CampaignJournal.Outcome.failed.rawValue : state
            self.mayHaveBeenDelivered = mayHaveBeenDelivered || unanswered
            // Every send of a token carried the campaign's id for its index.
            self.apnsID = apnsID ?? (sends > 0 ? APNSID(campaign: campaign, index: index).description : nil)
            self.status = status
            self.reason = unanswered ? "sent, no committed verdict" : reason
            self.sends = sends
        }

        /// A journal's row.
        package init(_ row: CampaignJournal.Row, campaign: UUID) {
            self.init(
                token: row.token, index: row.index, line: row.line, state: row.state, status: row.status, reason: row.reason,
                apnsID: row.apnsID, sends: row.sends, mayHaveBeenDelivered: row.mayHaveBeenDelivered, campaign: campaign
            )
        }

        /// The human report's line for a token not accepted.
        package var text: String {
            var text = "line \(self.line): \(self.token) \(self.outcome)"
            if let reason = self.reason { text += " (\(reason))" }
            if self.mayHaveBeenDelivered { text += ", may have been delivered" }
            return text
        }

        enum CodingKeys: String, CodingKey {
            case token, index, line, outcome, status, reason, sends
            case mayHaveBeenDelivered = "may_have_been_delivered"
            case apnsID = "apns_id"
        }

        public func encode(to encoder: any Encoder) throws {
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
    public struct Summary: Encodable, Sendable, Equatable {
        package var summary = true
        public var total = 0
        public var accepted = 0
        public var rejected = 0
        public var failed = 0
        public var notSent = 0
        public var mayHaveBeenDelivered = 0

        package init() {}

        package mutating func add(_ line: Line) {
            self.total += 1
            switch line.outcome {
            case "accepted": self.accepted += 1
            case "rejected": self.rejected += 1
            case "failed": self.failed += 1
            default: self.notSent += 1
            }
            if line.mayHaveBeenDelivered { self.mayHaveBeenDelivered += 1 }
        }

        package var text: String {
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

extension CampaignReport.Line {
    /// Appends the line's JSON object as `campaign report --json` prints it: the keys sorted, absent
    /// values as `null`; byte for byte what `JSONEncoder` with `.sortedKeys` and
    /// `.withoutEscapingSlashes` makes of ``encode(to:)``, at a fraction of its cost (a report of
    /// millions of tokens).
    package func appendJSON(to output: inout [UInt8]) {
        output.append(contentsOf: #"{"apns_id":"#.utf8)
        if let apnsID = self.apnsID { JSONString.append(apnsID, to: &output) } else { output.append(contentsOf: "null".utf8) }
        output.append(contentsOf: #","index":"#.utf8)
        JSONString.append(self.index, to: &output)
        output.append(contentsOf: #","line":"#.utf8)
        JSONString.append(self.line, to: &output)
        output.append(contentsOf: (self.mayHaveBeenDelivered ? #","may_have_been_delivered":true,"outcome":"# : #","may_have_been_delivered":false,"outcome":"#).utf8)
        JSONString.append(self.outcome, to: &output)
        output.append(contentsOf: #","reason":"#.utf8)
        if let reason = self.reason { JSONString.append(reason, to: &output) } else { output.append(contentsOf: "null".utf8) }
        output.append(contentsOf: #","sends":"#.utf8)
        JSONString.append(self.sends, to: &output)
        output.append(contentsOf: #","status":"#.utf8)
        if let status = self.status { JSONString.append(status, to: &output) } else { output.append(contentsOf: "null".utf8) }
        output.append(contentsOf: #","token":"#.utf8)
        JSONString.append(self.token, to: &output)
        output.append(UInt8(ascii: "}"))
    }
}

extension CampaignReport.Summary {
    /// Appends the summary's JSON object: the keys sorted, as `JSONEncoder` with `.sortedKeys` writes it.
    package func appendJSON(to output: inout [UInt8]) {
        output.append(contentsOf: "{\"accepted\":\(self.accepted),\"failed\":\(self.failed),\"may_have_been_delivered\":\(self.mayHaveBeenDelivered),".utf8)
        output.append(contentsOf: "\"not_sent\":\(self.notSent),\"rejected\":\(self.rejected),\"summary\":\(self.summary),\"total\":\(self.total)}".utf8)
    }
}
