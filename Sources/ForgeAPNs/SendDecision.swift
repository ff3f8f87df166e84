internal import ForgeAPNsCore

/// What a push has been through so far: the state the send decision reads and updates.
struct SendState: Hashable, Sendable {
    /// Copies APNs processed or may have processed: answered ones, and ones lost after they left.
    /// Replays of copies APNs certainly did not process are not attempts.
    var attempts = 0
    /// Copies APNs certainly did not process (a refused stream, a stream above a GOAWAY's last
    /// stream id, a request that never left because no connection could be had).
    var replays = 0
    /// Whether a copy may have reached APNs without its answer reaching us: a later answer may then
    /// be for a second delivery.
    var mayHaveBeenDelivered = false
    /// Tries that found no connection (connect, TLS or ALPN failed): not attempts either, but an
    /// endpoint that cannot be reached ends the push after ``APNSClient/RetryPolicy/attempts`` of them.
    var connectFailures = 0
    /// Whether the provider token was already renewed once for this push.
    var renewedProviderToken = false
}

/// What one try of a push came to, in the terms the decision needs.
enum SendTry: Hashable, Sendable {
    /// APNs answered with `status` (and `reason` when it is not a 2xx).
    case answered(status: Int, reason: APNSErrorReason?)
    /// APNs certainly did not process it: the stream was refused, was above a GOAWAY's last
    /// stream id, or was queued on a connection that closed.
    case notProcessed
    /// No connection could be had (connect, TLS or ALPN failed), so nothing left. `permanent`: it
    /// cannot heal within this run (the name does not resolve, the certificate is not trusted).
    case unreachable(permanent: Bool)
    /// The copy left and its connection failed before the answer: APNs may have processed it.
    case lost
    /// The deadline passed first; `processed` if the copy had left.
    case deadlineExceeded(processed: Bool)
    /// The caller was cancelled; `processed` if the copy had left.
    case cancelled(processed: Bool)
    /// The client or the connection was shut down; `processed` if the copy had left.
    case shutdown(processed: Bool)
    /// The request cannot be sent as it is (a header HTTP/2 refuses).
    case invalidRequest

    /// How the transport's error reads as a try.
    init(_ error: APNSTransportError) {
        switch error.kind {
        case .notProcessed: self = .notProcessed
        case .unreachable: self = .unreachable(permanent: error.isPermanent)
        case .lost: self = .lost
        case .deadlineExceeded: self = .deadlineExceeded(processed: error.mayHaveBeenProcessed)
        case .cancelled: self = .cancelled(processed: error.mayHaveBeenProcessed)
        case .shutdown: self = .shutdown(processed: error.mayHaveBeenProcessed)
        case .invalidRequest: self = .invalidRequest
        }
    }
}

/// What to do after a try: the one table that `send`, `sendBulk`, broadcasts and the channel API
/// follow.
///
/// | try | decision |
/// |---|---|
/// | 2xx | accept (an attempt) |
/// | 403 `ExpiredProviderToken`, first time | renew the provider token and resend at once (not an attempt) |
/// | 403 `InvalidProviderToken`, first time, token from a shared source | the same: ask the source for another |
/// | 429, 500, 503 | retry after a backoff while attempts and the deadline allow (an attempt), else reject |
/// | any other status | reject (an attempt) |
/// | not processed (refused stream, above GOAWAY, queued on a closed connection) | replay after a short backoff while the replay budget and the deadline allow (not an attempt), else fail |
/// | no connection (connect, TLS, ALPN) | try again (the pool backs off between connects) up to `attempts` times (not an attempt), else fail as unreachable |
/// | no connection, permanent (DNS, untrusted certificate) | fail as unreachable |
/// | lost after leaving | may have been delivered (an attempt); retry if the policy resends such pushes, else fail |
/// | deadline, cancellation, shutdown | fail; may have been delivered if the copy had left (an attempt) |
///
/// A failure is `notSent` in a verdict unless some copy may have been delivered.
enum SendDecision: Hashable, Sendable {
    /// APNs accepted it.
    case accept
    /// APNs' answer is final: report it.
    case reject
    /// Renew the provider token, then send again at once.
    case renewProviderToken
    /// Send again after `after` (the try counted as an attempt).
    case retry(after: Duration)
    /// Send again after `after` (the try did not count: APNs never processed it).
    case replay(after: Duration)
    /// Give up without an answer.
    case fail(APNSError.Kind)

    /// Whether the next try is a replay of a copy APNs did not process.
    var isReplay: Bool {
        if case .replay = self { return true }
        return false
    }

    /// Decides what follows `outcome`, updating `state`.
    /// - Parameters:
    ///   - renewableToken: whether the client sends provider tokens (so one can be renewed).
    ///   - renewsInvalidToken: whether `InvalidProviderToken` is renewed too (tokens from a shared
    ///     source, which may have handed out one being replaced).
    ///   - remaining: time left before the deadline.
    ///   - random: a value in `0...1` for the backoff's jitter, drawn only when a wait is computed
    ///     (the system generator is a system call; an accepted push must not pay for it).
    static func after(
        _ outcome: SendTry, state: inout SendState, policy: APNSClient.RetryPolicy, renewableToken: Bool,
        renewsInvalidToken: Bool = false, remaining: Duration, random: @autoclosure () -> Double = .random(in: 0...1)
    ) -> SendDecision {
        switch outcome {
        case .answered(let status, _) where (200..<300).contains(status):
            state.attempts += 1
            return .accept
        case .answered(_, let reason?)
        where (reason == .expiredProviderToken || (renewsInvalidToken && reason == .invalidProviderToken)) && renewableToken
            && !state.renewedProviderToken:
            state.renewedProviderToken = true
            return .renewProviderToken
        case .answered(let status, let reason):
            state.attempts += 1
            let disposition = reason?.disposition ?? APNSErrorReason.Disposition.forUnknownReason(status: status)
            guard disposition == .retryLater else { return .reject }
            let wait = policy.backoff(retry: state.attempts, random: random())
            return state.attempts < policy.attempts && wait < remaining ? .retry(after: wait) : .reject
        case .unreachable(let permanent):
            state.connectFailures += 1
            guard !permanent, state.connectFailures < policy.attempts else { return .fail(.unreachable) }
            // The pool spaces connects to a failing endpoint; no wait of its own on top.
            return .zero < remaining ? .replay(after: .zero) : .fail(.unreachable)
        case .notProcessed:
            state.replays += 1
            let wait = policy.replayBackoff(replay: state.replays, random: random())
            return state.replays <= policy.replays && wait < remaining ? .replay(after: wait) : .fail(.transport)
        case .lost:
            state.attempts += 1
            state.mayHaveBeenDelivered = true
            let wait = policy.backoff(retry: state.attempts, random: random())
            guard policy.retriesPossiblyDelivered, state.attempts < policy.attempts, wait < remaining else {
                return .fail(.transport)
            }
            return .retry(after: wait)
        case .deadlineExceeded(let processed):
            Self.count(processed, in: &state)
            return .fail(.deadlineExceeded)
        case .cancelled(let processed):
            Self.count(processed, in: &state)
            return .fail(.cancelled)
        case .shutdown(let processed):
            Self.count(processed, in: &state)
            return .fail(.shutdown)
        case .invalidRequest:
            return .fail(.invalidNotification)
        }
    }

    /// A copy that left before the try ended is an attempt that may have been delivered.
    private static func count(_ processed: Bool, in state: inout SendState) {
        guard processed else { return }
        state.attempts += 1
        state.mayHaveBeenDelivered = true
    }
}

extension APNSError {
    /// APNs' final answer to a push, after what `state` says it went through.
    init(_ rejection: APNSErrorResponse, state: SendState) {
        self.init(
            kind: .rejected, status: rejection.status, reason: rejection.reason, timestamp: rejection.timestamp,
            apnsID: rejection.apnsID ?? rejection.apnsRequestID, attempts: state.attempts,
            mayHaveBeenDelivered: state.mayHaveBeenDelivered, detail: rejection.reason.rawValue
        )
    }
}
