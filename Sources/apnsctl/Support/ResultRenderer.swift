import ForgeAPNs
import ForgeAPNsCore
import Foundation

/// What happened to one token, from a bulk verdict or a single send.
struct TokenResult: Sendable {
    var token: String
    var outcome: APNSBulkVerdict.Outcome
}

/// The counts of a send, as the summary line reports them.
struct SendCounts: Sendable {
    var total = 0
    var accepted = 0
    var rejected: [String: Int] = [:]
    var failed = 0
    var notSent = 0
    /// Verdicts whose push may have been delivered without its answer being known.
    var mayHaveBeenDelivered = 0
    /// Lines of the tokens file that were reported and skipped.
    var badLines = 0
    /// Set when Ctrl-C stopped reading the tokens file: every line after this one was never read
    /// (so never sent; resume from the next line).
    var unreadAfterLine: Int?

    var rejectedCount: Int { self.rejected.values.reduce(0, +) }
    var problems: Int { self.rejectedCount + self.failed + self.notSent }

    mutating func add(_ outcome: APNSBulkVerdict.Outcome) {
        self.total += 1
        if outcome.mayHaveBeenDelivered { self.mayHaveBeenDelivered += 1 }
        switch outcome {
        case .accepted: self.accepted += 1
        case .rejected(let error): self.rejected[error.reason?.rawValue ?? "InvalidToken", default: 0] += 1
        case .failed: self.failed += 1
        case .notSent: self.notSent += 1
        }
    }
}

/// Renders results: one human line a token (`7c1d3f0e…b4e2 200 accepted apns-id=…`) or one NDJSON
/// object a token, then a summary.
struct ResultRenderer: Sendable {
    var json: Bool

    func line(_ result: TokenResult) -> String {
        self.json ? self.jsonLine(result) : self.humanLine(result)
    }

    /// The first 8 and last 4 hex digits.
    static func abbreviate(_ token: String) -> String {
        token.count > 14 ? "\(token.prefix(8))…\(token.suffix(4))" : token
    }

    static func iso8601(_ date: Date) -> String { date.formatted(.iso8601) }

    private func humanLine(_ result: TokenResult) -> String {
        let token = Self.abbreviate(result.token)
        switch result.outcome {
        case .accepted(let sent):
            let attempts = sent.attempts > 1 ? " attempts=\(sent.attempts)" : ""
            let twice = sent.mayHaveBeenDeliveredTwice ? " (an earlier copy may have been delivered too)" : ""
            return "\(token) 200 accepted apns-id=\(sent.apnsID)\(attempts)\(twice)"
        case .rejected(let error):
            var text = "\(token) \(error.status.map(String.init) ?? "-") \(error.reason?.rawValue ?? error.detail)"
            if let timestamp = error.timestamp { text += " since \(Self.iso8601(timestamp))" }
            if let id = error.apnsID { text += " apns-id=\(id)" }
            if error.attempts > 1 { text += " attempts=\(error.attempts)" }
            if error.mayHaveBeenDelivered { text += " (an earlier copy may have been delivered)" }
            return text
        case .failed(let error):
            let attempts = error.attempts > 1 ? " after \(error.attempts) attempts" : ""
            let maybe = error.mayHaveBeenDelivered ? " (may have been delivered)" : ""
            return "\(token) failed \(error.kind.rawValue)\(attempts): \(error.detail.isEmpty ? "no detail" : error.detail)\(maybe)"
        case .notSent(let error):
            return "\(token) not sent: \(error.detail.isEmpty ? error.kind.rawValue : error.detail)"
        }
    }

    private func jsonLine(_ result: TokenResult) -> String {
        var status = "null", apnsID = "null", reason = "null", timestamp = "null", attempts = 0, detail = ""
        let outcome: String
        switch result.outcome {
        case .accepted(let sent):
            outcome = "accepted"
            status = "200"
            apnsID = JSONText.quote(sent.apnsID)
            attempts = sent.attempts
        case .rejected(let error), .failed(let error), .notSent(let error):
            switch result.outcome {
            case .rejected: outcome = "rejected"
            case .failed: outcome = "failed"
            default: outcome = "not_sent"
            }
            status = error.status.map(String.init) ?? "null"
            apnsID = error.apnsID.map(JSONText.quote) ?? "null"
            reason = error.reason.map { JSONText.quote($0.rawValue) } ?? "null"
            timestamp = error.timestamp.map { JSONText.quote(Self.iso8601($0)) } ?? "null"
            attempts = error.attempts
            if case .rejected = result.outcome {} else { detail = error.detail }
        }
        var text = "{\"token\":\(JSONText.quote(result.token)),\"outcome\":\"\(outcome)\",\"status\":\(status),"
            + "\"apns-id\":\(apnsID),\"reason\":\(reason),\"timestamp\":\(timestamp),\"attempts\":\(attempts),"
            + "\"may_have_been_delivered\":\(result.outcome.mayHaveBeenDelivered)"
        if !detail.isEmpty { text += ",\"detail\":\(JSONText.quote(detail))" }
        return text + "}"
    }

    /// `sent N: A accepted, R rejected (Unregistered 3), F failed, S not sent in X.XX s (Y/s)`, or
    /// the same counts as one JSON object with `"summary":true`.
    func summary(_ counts: SendCounts, seconds: Double) -> String {
        let rate = seconds > 0 ? Double(counts.total) / seconds : 0
        let reasons = counts.rejected.sorted { $0.key < $1.key }
        if self.json {
            let byReason = reasons.map { "\(JSONText.quote($0.key)):\($0.value)" }.joined(separator: ",")
            return "{\"summary\":true,\"total\":\(counts.total),\"accepted\":\(counts.accepted),"
                + "\"rejected\":\(counts.rejectedCount),\"rejected_by_reason\":{\(byReason)},\"failed\":\(counts.failed),"
                + "\"not_sent\":\(counts.notSent),\"may_have_been_delivered\":\(counts.mayHaveBeenDelivered),"
                + "\"bad_lines\":\(counts.badLines),"
                + (counts.unreadAfterLine.map { "\"unread_after_line\":\($0)," } ?? "")
                + "\"seconds\":\(String(format: "%.3f", seconds)),\"rate\":\(String(format: "%.1f", rate))}"
        }
        var text = "sent \(counts.total): \(counts.accepted) accepted, \(counts.rejectedCount) rejected"
        if !reasons.isEmpty { text += " (" + reasons.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")" }
        text += ", \(counts.failed) failed, \(counts.notSent) not sent"
        text += " in \(String(format: "%.2f", seconds)) s (\(String(format: "%.0f", rate))/s)"
        if counts.mayHaveBeenDelivered > 0 {
            text += "; \(counts.mayHaveBeenDelivered) may have been delivered without an answer (a resend may duplicate them)"
        }
        if counts.badLines > 0 { text += "; \(counts.badLines) bad input lines skipped" }
        if let line = counts.unreadAfterLine { text += "; input after line \(line) not read" }
        return text
    }
}
