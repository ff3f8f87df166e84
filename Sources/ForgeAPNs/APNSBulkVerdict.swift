internal import ForgeAPNsCore

/// What happened to one token of a bulk send. Every token gets exactly one.
public struct APNSBulkVerdict: Sendable {
    /// The outcome.
    ///
    /// | outcome | meaning | ``mayHaveBeenDelivered`` |
    /// |---|---|---|
    /// | `accepted` | APNs answered 2xx | an earlier copy may have been delivered too |
    /// | `rejected` | APNs' final answer was an error (or the token was malformed) | an earlier copy may have been delivered |
    /// | `failed` | no answer, and a copy left that APNs may have processed | always |
    /// | `notSent` | APNs certainly processed no copy: a resend cannot deliver it twice | never |
    public enum Outcome: Sendable {
        /// APNs accepted the push.
        case accepted(APNSSendResult)
        /// APNs rejected it (reason and timestamp in the error), or the token was malformed.
        case rejected(APNSError)
        /// No answer, after the retries the policy allows, and a copy may have reached APNs
        /// (its connection died after sending it, or its deadline passed while it was out).
        case failed(APNSError)
        /// APNs processed no copy: the endpoint could not be reached, every copy was refused
        /// unprocessed, or the send was cancelled or shut down before it left.
        case notSent(APNSError)

        /// The verdict of a push that APNs did not accept: its rejection, or `failed` / `notSent`
        /// as the error says whether a copy may have been delivered.
        public init(_ error: APNSError) {
            switch error.kind {
            case .rejected, .invalidNotification: self = .rejected(error)
            default: self = error.mayHaveBeenDelivered ? .failed(error) : .notSent(error)
            }
        }

        /// The error of a push APNs did not accept (`failed` or `notSent`); `nil` otherwise.
        public var failure: APNSError? {
            switch self {
            case .failed(let error), .notSent(let error): return error
            case .accepted, .rejected: return nil
            }
        }

        /// Whether a copy may have reached APNs without its answer being known: for an accepted
        /// push, a second delivery is possible.
        public var mayHaveBeenDelivered: Bool {
            switch self {
            case .accepted(let result): return result.mayHaveBeenDeliveredTwice
            case .rejected(let error), .failed(let error), .notSent(let error): return error.mayHaveBeenDelivered
            }
        }
    }

    /// The token as given.
    public var token: String
    /// Its position in the input, from 0.
    public var index: Int
    /// The outcome.
    public var outcome: Outcome

    public init(token: String, index: Int, outcome: Outcome) {
        self.token = token
        self.index = index
        self.outcome = outcome
    }

    /// Whether a copy may have reached APNs without its answer being known (see ``Outcome``).
    public var mayHaveBeenDelivered: Bool { self.outcome.mayHaveBeenDelivered }

    /// Whether APNs accepted it.
    public var isAccepted: Bool {
        if case .accepted = self.outcome { return true }
        return false
    }
}
