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
