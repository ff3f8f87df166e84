internal import ForgeAPNsCore

/// Counts of a finished bulk send.
public struct APNSBulkSummary: Sendable, CustomStringConvertible {
    /// Tokens read.
    public var total = 0
    /// Accepted by APNs.
    public var accepted = 0
    /// Rejected, by reason (`BadDeviceToken`, `Unregistered`, … and `InvalidToken` for malformed input).
    public var rejected: [String: Int] = [:]
    /// No answer, and a copy may have been delivered.
    public var failed = 0
    /// Certainly not processed by APNs (unreachable, refused, cancelled or shut down first).
    public var notSent = 0
    /// Verdicts of any outcome whose push may have been delivered without its answer being known
    /// (``APNSBulkVerdict/mayHaveBeenDelivered``): every `failed` one, and accepted or rejected
    /// ones that an earlier lost copy may have duplicated.
    public var mayHaveBeenDelivered = 0
    /// Wall time from start to the last verdict.
    public var duration: Duration = .zero
    /// Set when the token sequence itself threw: tokens after that point were never read.
    public var inputError: String?
    /// Set when the bulk send was cancelled before the token sequence ended: ``total`` tokens
    /// were read (each has its verdict), the rest never were.
    public var stoppedReading = false

    /// Creates empty counts.
    public init() {}

    /// Rejections of every reason.
    public var rejectedCount: Int { self.rejected.values.reduce(0, +) }

    /// Counts one token's verdict: the rule a bulk send counts its own verdicts by, for callers that
    /// add verdicts of their own (pushes sent one by one beside a bulk send) to one summary. A
    /// rejection counts under its reason, or `InvalidToken` when the token was refused before
    /// anything was sent.
    public mutating func add(_ outcome: APNSBulkVerdict.Outcome) {
        self.total += 1
        if outcome.mayHaveBeenDelivered { self.mayHaveBeenDelivered += 1 }
        switch outcome {
        case .accepted: self.accepted += 1
        case .rejected(let error): self.rejected[error.reason?.rawValue ?? "InvalidToken", default: 0] += 1
        case .failed: self.failed += 1
        case .notSent: self.notSent += 1
        }
    }

    /// Adds the verdict counts of `other` (its duration, input error and stop are not merged).
    package mutating func addCounts(of other: APNSBulkSummary) {
        self.total += other.total
        self.accepted += other.accepted
        self.failed += other.failed
        self.notSent += other.notSent
        self.mayHaveBeenDelivered += other.mayHaveBeenDelivered
        self.rejected.merge(other.rejected, uniquingKeysWith: +)
    }

    public var description: String {
        var text = "\(self.total) tokens: \(self.accepted) accepted, \(self.rejectedCount) rejected"
        if !self.rejected.isEmpty {
            text += " (" + self.rejected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
        }
        text += ", \(self.failed) failed, \(self.notSent) not sent"
        if self.mayHaveBeenDelivered > 0 { text += "; \(self.mayHaveBeenDelivered) may have been delivered" }
        if let inputError = self.inputError { text += "; input stopped: \(inputError)" }
        if self.stoppedReading { text += "; cancelled: tokens after the first \(self.total) were not read" }
        return text
    }
}
