import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import Foundation

/// What happened to one token, from a bulk verdict or a single send.
struct TokenResult: Sendable {
    var token: String
    var outcome: APNSBulkVerdict.Outcome
    /// Its line in the tokens file, when it came from one.
    var line: Int?

    init(token: String, outcome: APNSBulkVerdict.Outcome, line: Int? = nil) {
        self.token = token
        self.outcome = outcome
        self.line = line
    }

    /// A push that was on its way when a second Ctrl-C stopped waiting for its answer: its fate is
    /// unknown, which is neither a failure of APNs nor of the network.
    var wasInFlightAtStop: Bool {
        if case .failed(let error) = self.outcome, error.kind == .cancelled { return true }
        return false
    }
}

/// The counts of a send, as the summary line reports them: the verdicts as the library counts them
/// (a bulk send's own summary, merged with the pushes sent one by one, counted by the same rule),
/// and what only this command knows.
struct SendCounts: Sendable {
    /// Every verdict, counted as a bulk send counts its own.
    var verdicts = APNSBulkSummary()
    /// Of the failed verdicts, the pushes whose answer was still awaited when a second Ctrl-C
    /// stopped the wait (may have been delivered): reported as in flight, not as failures.
    var inFlight = 0
    /// Lines of the tokens file that were reported and skipped.
    var badLines = 0
    /// Set when Ctrl-C stopped reading the tokens file: every line after this one was never read
    /// (so never sent; resume from the next line).
    var unreadAfterLine: Int?

    /// Failures other than the pushes in flight at the stop.
    var failed: Int { self.verdicts.failed - self.inFlight }
    /// Verdicts other than acceptances.
    var problems: Int { self.verdicts.rejectedCount + self.verdicts.failed + self.verdicts.notSent }

    mutating func add(_ result: TokenResult) {
        self.verdicts.add(result.outcome)
        self.noteInFlight(result)
    }

    /// Counts what only the command knows of a verdict counted elsewhere: whether it was in flight at the stop.
    mutating func noteInFlight(_ result: TokenResult) {
        if result.wasInFlightAtStop { self.inFlight += 1 }
    }
}

/// How results are printed: a line for a person, or one JSON object a token (NDJSON).
enum OutputFormat: String, CaseIterable, Sendable, ExpressibleByArgument {
    case human, json
}

/// Renders results: one human line a token (`line 12: 7c1d…e2 410 Unregistered since …`) or one
/// NDJSON object a token, then a summary.
struct ResultRenderer: Sendable {
    var format: OutputFormat
    /// Accepted pushes are not printed (a bulk send on a terminal shows what needs attention).
    var omitsAccepted = false

    var json: Bool { self.format == .json }

    /// `,"lints":["LA003",…]`, written into every JSON line: the ids of the lints of the one
    /// notification all tokens get (their messages go to stderr once). Empty without lints.
    private var lintsField: [UInt8] = []
    private var lints: [String] = []

    /// - Parameter lints: the ids of the shared notification's lints, for each JSON line.
    init(format: OutputFormat, omitsAccepted: Bool = false, lints: [String] = []) {
        self.format = format
        self.omitsAccepted = omitsAccepted
        self.lints = lints
        self.lintsField = Self.lintsField(lints)
    }

    private static func lintsField(_ lints: [String]) -> [UInt8] {
        guard !lints.isEmpty else { return [] }
        var field = Array(",\"lints\":[".utf8)
        for (index, id) in lints.enumerated() {
            if index > 0 { field.append(UInt8(ascii: ",")) }
            JSONString.append(id, to: &field)
        }
        field.append(UInt8(ascii: "]"))
        return field
    }

    init(json: Bool, lints: [String] = []) { self.init(format: json ? .json : .human, lints: lints) }

    func line(_ result: TokenResult) -> String {
        var bytes: [UInt8] = []
        self.append(result, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `result` gets a line at all.
    func prints(_ result: TokenResult) -> Bool {
        guard self.omitsAccepted, case .accepted(let sent) = result.outcome else { return true }
        return sent.mayHaveBeenDeliveredTwice
    }

    /// Appends the line for `result`, without its newline, to `bytes`: a bulk send writes one per
    /// token, so the JSON is built as bytes, not through string interpolation.
    /// - Parameter extra: lints of this token alone (LA007 across a file), after the shared ones.
    func append(_ result: TokenResult, adding extra: [String] = [], to bytes: inout [UInt8]) {
        if self.json {
            Self.appendJSON(result, to: &bytes)
            let field = extra.isEmpty ? self.lintsField : Self.lintsField(self.lints + extra.filter { !self.lints.contains($0) })
            if !field.isEmpty {
                bytes.removeLast()  // the closing brace
                bytes.append(contentsOf: field)
                bytes.append(UInt8(ascii: "}"))
            }
        } else {
            bytes.append(contentsOf: self.humanLine(result).utf8)
        }
    }

    static func iso8601(_ date: Date) -> String { date.formatted(.iso8601) }

    private func humanLine(_ result: TokenResult) -> String {
        let token = (result.line.map { "line \($0): " } ?? "") + result.token
        if result.wasInFlightAtStop {
            return "\(token) in flight at the stop: no answer awaited (may have been delivered)"
        }
        switch result.outcome {
        case .accepted(let sent):
            let attempts = sent.attempts > 1 ? " attempts=\(sent.attempts)" : ""
            let twice = sent.mayHaveBeenDeliveredTwice ? " (an earlier copy may have been delivered too)" : ""
            return "\(token) 200 \(Output.paint("accepted", .green)) apns-id=\(sent.apnsID)\(attempts)\(twice)"
        case .rejected(let error):
            var text = "\(token) \(error.status.map(String.init) ?? "-") \(Output.paint(error.reason?.rawValue ?? error.detail, .red))"
            if let timestamp = error.timestamp { text += " since \(Self.iso8601(timestamp))" }
            if let id = error.apnsID { text += " apns-id=\(id)" }
            if error.attempts > 1 { text += " attempts=\(error.attempts)" }
            if error.mayHaveBeenDelivered { text += " (an earlier copy may have been delivered)" }
            return text
        case .failed(let error):
            let attempts = error.attempts > 1 ? " after \(error.attempts) attempts" : ""
            let maybe = error.mayHaveBeenDelivered ? " (may have been delivered)" : ""
            return "\(token) \(Output.paint("failed", .red)) \(error.kind.rawValue)\(attempts): \(error.detail.isEmpty ? "no detail" : error.detail)\(maybe)"
        case .notSent(let error):
            return "\(token) \(Output.paint("not sent", .red)): \(error.detail.isEmpty ? error.kind.rawValue : error.detail)"
        }
    }

    /// `{"token":…,"outcome":…,"status":…,"apns_id":…,"reason":…,"timestamp":…,"attempts":…,
    /// "may_have_been_delivered":…}`, with `"detail"` for failures and unsent tokens.
    private static func appendJSON(_ result: TokenResult, to bytes: inout [UInt8]) {
        func field(_ name: String, _ value: String?, quoted: Bool = true) {
            bytes.append(contentsOf: ",\"".utf8)
            bytes.append(contentsOf: name.utf8)
            bytes.append(contentsOf: "\":".utf8)
            guard let value else { return bytes.append(contentsOf: "null".utf8) }
            if quoted { JSONString.append(value, to: &bytes) } else { bytes.append(contentsOf: value.utf8) }
        }
        bytes.append(contentsOf: "{\"token\":".utf8)
        JSONString.append(result.token, to: &bytes)
        if let line = result.line {
            bytes.append(contentsOf: ",\"line\":".utf8)
            JSONString.append(line, to: &bytes)
        }
        switch result.outcome {
        case .accepted(let sent):
            bytes.append(contentsOf: ",\"outcome\":\"accepted\",\"status\":200,\"apns_id\":".utf8)
            JSONString.append(sent.apnsID, to: &bytes)
            bytes.append(contentsOf: ",\"reason\":null,\"timestamp\":null,\"attempts\":".utf8)
            JSONString.append(sent.attempts, to: &bytes)
        case .rejected(let error), .failed(let error), .notSent(let error):
            let outcome: String
            switch result.outcome {
            case .rejected: outcome = "rejected"
            case .failed: outcome = result.wasInFlightAtStop ? "in_flight" : "failed"
            default: outcome = "not_sent"
            }
            field("outcome", outcome)
            field("status", error.status.map(String.init), quoted: false)
            field("apns_id", error.apnsID)
            field("reason", error.reason?.rawValue)
            field("timestamp", error.timestamp.map(Self.iso8601))
            field("attempts", String(error.attempts), quoted: false)
        }
        bytes.append(contentsOf: (result.outcome.mayHaveBeenDelivered ? ",\"may_have_been_delivered\":true" : ",\"may_have_been_delivered\":false").utf8)
        switch result.outcome {
        case .failed(let error) where !error.detail.isEmpty, .notSent(let error) where !error.detail.isEmpty:
            field("detail", error.detail)
        default: break
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// `sent N: A accepted, R rejected (Unregistered 3), F failed, S not sent in X.XX s (Y/s)`, or
    /// the same counts as one JSON object with `"summary":true`.
    func summary(_ counts: SendCounts, seconds: Double) -> String {
        let verdicts = counts.verdicts
        let rate = seconds > 0 ? Double(verdicts.total) / seconds : 0
        let reasons = verdicts.rejected.sorted { $0.key < $1.key }
        if self.json {
            let byReason = reasons.map { "\(JSONText.quote($0.key)):\($0.value)" }.joined(separator: ",")
            return "{\"summary\":true,\"total\":\(verdicts.total),\"accepted\":\(verdicts.accepted),"
                + "\"rejected\":\(verdicts.rejectedCount),\"rejected_by_reason\":{\(byReason)},\"failed\":\(counts.failed),"
                + "\"not_sent\":\(verdicts.notSent),\"in_flight\":\(counts.inFlight),\"may_have_been_delivered\":\(verdicts.mayHaveBeenDelivered),"
                + "\"bad_lines\":\(counts.badLines),"
                + (counts.unreadAfterLine.map { "\"unread_after_line\":\($0)," } ?? "")
                + "\"seconds\":\(String(format: "%.3f", seconds)),\"rate\":\(String(format: "%.1f", rate))}"
        }
        var text = "sent \(verdicts.total): \(verdicts.accepted) accepted, \(verdicts.rejectedCount) rejected"
        if !reasons.isEmpty { text += " (" + reasons.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")" }
        text += ", \(counts.failed) failed, \(verdicts.notSent) not sent"
        if counts.inFlight > 0 { text += ", \(counts.inFlight) in flight at the stop" }
        text += " in \(String(format: "%.2f", seconds)) s (\(String(format: "%.0f", rate))/s)"
        if verdicts.mayHaveBeenDelivered > 0 {
            text += "; \(verdicts.mayHaveBeenDelivered) may have been delivered without an answer (a resend may duplicate them)"
        }
        if counts.badLines > 0 { text += "; \(counts.badLines) bad input lines skipped" }
        if let line = counts.unreadAfterLine { text += "; input after line \(line) not read" }
        return text
    }
}
