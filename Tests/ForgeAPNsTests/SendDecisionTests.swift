@testable import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import Testing

/// The decision table every send follows, row by row, with no I/O.
@Suite("Send decision: one table for send, sendBulk, broadcasts and apnsctl")
struct SendDecisionTests {
    let policy = APNSClient.RetryPolicy(attempts: 3, backoffBase: .milliseconds(200), backoffCap: .seconds(10), jitter: 0.5, replays: 4)

    /// Runs the decision on `outcomes` in turn from a fresh state; returns every decision and the final state.
    func run(
        _ outcomes: [SendTry], policy: APNSClient.RetryPolicy? = nil, renewable: Bool = true, remaining: Duration = .seconds(30)
    ) -> ([SendDecision], SendState) {
        var state = SendState()
        let decisions = outcomes.map {
            SendDecision.after($0, state: &state, policy: policy ?? self.policy, renewableToken: renewable, remaining: remaining, random: 0)
        }
        return (decisions, state)
    }

    @Test("2xx is accepted on the first attempt, nothing possibly delivered twice")
    func accepted() {
        let (decisions, state) = self.run([.answered(status: 200, reason: nil)])
        #expect(decisions == [.accept])
        #expect(state == SendState(attempts: 1, replays: 0, mayHaveBeenDelivered: false, connectFailures: 0))
    }

    @Test("Permanent rejections are final at once", arguments: [
        (400, APNSErrorReason.badDeviceToken), (410, .unregistered), (413, .payloadTooLarge), (403, .invalidProviderToken),
        (400, .topicDisallowed), (404, .badPath),
    ])
    func permanentRejection(_ status: Int, _ reason: APNSErrorReason) {
        let (decisions, state) = self.run([.answered(status: status, reason: reason)])
        #expect(decisions == [.reject])
        #expect(state.attempts == 1 && !state.mayHaveBeenDelivered)
    }

    @Test("429, 500 and 503 are retried with a doubling backoff until the attempts run out", arguments: [
        (429, APNSErrorReason.tooManyRequests), (500, .internalServerError), (503, .serviceUnavailable),
    ])
    func retryLater(_ status: Int, _ reason: APNSErrorReason) {
        let answer = SendTry.answered(status: status, reason: reason)
        let (decisions, state) = self.run([answer, answer, answer])
        #expect(decisions == [.retry(after: .milliseconds(200)), .retry(after: .milliseconds(400)), .reject])
        #expect(state.attempts == 3 && state.replays == 0)
    }

    @Test("A retry that would end after the deadline is not made: the answer is final")
    func retryPastDeadline() {
        let (decisions, _) = self.run([.answered(status: 429, reason: .tooManyRequests)], remaining: .milliseconds(150))
        #expect(decisions == [.reject])
    }

    @Test("An unknown 5xx reason is retried like a known one; an unknown 4xx is final")
    func unknownReasons() {
        #expect(self.run([.answered(status: 502, reason: APNSErrorReason(rawValue: "Whatever"))]).0 == [.retry(after: .milliseconds(200))])
        #expect(self.run([.answered(status: 418, reason: APNSErrorReason(rawValue: "Teapot"))]).0 == [.reject])
    }

    @Test("An expired provider token is renewed once, not counted; the second expiry is final")
    func expiredProviderToken() {
        let expired = SendTry.answered(status: 403, reason: .expiredProviderToken)
        let (decisions, state) = self.run([expired, expired])
        #expect(decisions == [.renewProviderToken, .reject])
        #expect(state.attempts == 1 && state.renewedProviderToken)
        // Certificate authentication has no token to renew.
        #expect(self.run([expired], renewable: false).0 == [.reject])
    }

    @Test("Unprocessed copies are replayed, the first at once, then backing off; never attempts; the budget ends them")
    func replays() {
        let refused = SendTry.notProcessed
        let (decisions, state) = self.run(Array(repeating: refused, count: 5))
        #expect(decisions == [
            .replay(after: .zero), .replay(after: .milliseconds(10)), .replay(after: .milliseconds(20)), .replay(after: .milliseconds(40)),
            .fail(.transport),
        ])
        #expect(state.attempts == 0 && state.replays == 5 && !state.mayHaveBeenDelivered)
        // So the verdict of a push that never reached APNs is "not sent".
        let error = APNSError(kind: .transport, attempts: state.attempts, mayHaveBeenDelivered: state.mayHaveBeenDelivered)
        guard case .notSent = APNSBulkVerdict.Outcome(error) else { Issue.record("not 'not sent'"); return }
    }

    @Test("The replay backoff is capped at one second, however long the budget")
    func replayBackoffCap() {
        let policy = APNSClient.RetryPolicy(replays: 100)
        #expect(policy.replayBackoff(replay: 60, random: 0) == .seconds(1))
        #expect(policy.replayBackoff(replay: 60, random: 1) == .milliseconds(500))
    }

    @Test("No connection: tried again as often as the attempts allow, then not sent; never attempts")
    func unreachable() {
        let failed = SendTry.unreachable(permanent: false)
        let (decisions, state) = self.run([failed, failed, failed])
        #expect(decisions == [.replay(after: .zero), .replay(after: .zero), .fail(.unreachable)])
        #expect(state.attempts == 0 && state.connectFailures == 3 && !state.mayHaveBeenDelivered)
    }

    @Test("A permanent connect failure (DNS, untrusted certificate) is not tried again")
    func permanent() {
        let (decisions, state) = self.run([.unreachable(permanent: true)])
        #expect(decisions == [.fail(.unreachable)] && state.replays == 0)
    }

    @Test("A copy lost after it left may have been delivered: retried, and the acceptance says a duplicate is possible")
    func lostThenAccepted() {
        let (decisions, state) = self.run([.lost, .answered(status: 200, reason: nil)])
        #expect(decisions == [.retry(after: .milliseconds(200)), .accept])
        #expect(state.attempts == 2 && state.mayHaveBeenDelivered)
    }

    @Test("A lost copy is not resent when the policy says so: failed, may have been delivered")
    func lostNoResend() {
        let policy = APNSClient.RetryPolicy(retriesPossiblyDelivered: false)
        let (decisions, state) = self.run([.lost], policy: policy)
        #expect(decisions == [.fail(.transport)] && state.mayHaveBeenDelivered)
        let error = APNSError(kind: .transport, attempts: state.attempts, mayHaveBeenDelivered: state.mayHaveBeenDelivered)
        guard case .failed = APNSBulkVerdict.Outcome(error) else { Issue.record("not 'failed'"); return }
    }

    @Test("Replays between lost copies do not use up the attempts")
    func replaysDoNotCount() {
        let (decisions, state) = self.run([.notProcessed, .lost, .notProcessed, .answered(status: 200, reason: nil)])
        #expect(decisions == [.replay(after: .zero), .retry(after: .milliseconds(200)), .replay(after: .milliseconds(10)), .accept])
        #expect(state.attempts == 2 && state.replays == 2 && state.mayHaveBeenDelivered)
    }

    @Test("Deadline, cancellation and shutdown end the send; a copy that had left may have been delivered",
          arguments: [true, false])
    func stops(_ processed: Bool) {
        for (outcome, kind) in [(SendTry.deadlineExceeded(processed: processed), APNSError.Kind.deadlineExceeded),
                                (.cancelled(processed: processed), .cancelled), (.shutdown(processed: processed), .shutdown)] {
            let (decisions, state) = self.run([outcome])
            #expect(decisions == [.fail(kind)])
            #expect(state.mayHaveBeenDelivered == processed && state.attempts == (processed ? 1 : 0))
        }
    }

    @Test("Transport errors read as tries: processed or not, and the stops")
    func transportErrors() {
        #expect(SendTry(APNSTransportError(.notProcessed, detail: "")) == .notProcessed)
        #expect(SendTry(APNSTransportError(.unreachable, detail: "")) == .unreachable(permanent: false))
        #expect(SendTry(APNSTransportError(.unreachable, isPermanent: true, detail: "")) == .unreachable(permanent: true))
        #expect(SendTry(APNSTransportError(.lost, detail: "")) == .lost)
        #expect(SendTry(APNSTransportError(.deadlineExceeded, detail: "")) == .deadlineExceeded(processed: false))
        #expect(SendTry(APNSTransportError(.cancelled, mayHaveBeenProcessed: true, detail: "")) == .cancelled(processed: true))
        #expect(SendTry(APNSTransportError(.shutdown, mayHaveBeenProcessed: true, detail: "")) == .shutdown(processed: true))
        #expect(SendTry(APNSTransportError(.invalidRequest, detail: "")) == .invalidRequest)
    }

    @Test("The pool reads HTTP/2 failures as transport errors, in one place")
    func http2Failures() {
        func kind(_ error: HTTP2ClientError) -> SendTry { SendTry(ConnectionPool.transportError(error)) }
        #expect(kind(HTTP2ClientError(.refusedStream, mayHaveBeenProcessed: false)) == .notProcessed)
        #expect(kind(HTTP2ClientError(.goingAway, mayHaveBeenProcessed: false)) == .notProcessed)
        #expect(kind(HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false)) == .unreachable(permanent: false))
        #expect(kind(HTTP2ClientError(.tlsFailed, mayHaveBeenProcessed: false)) == .unreachable(permanent: false))
        #expect(kind(HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "no such host", permanent: true)) == .unreachable(permanent: true))
        #expect(kind(HTTP2ClientError(.connectionClosed, mayHaveBeenProcessed: true)) == .lost)
        // Queued on a connection that spoke HTTP/2 and then closed: never left, replayed (not a connect failure).
        #expect(kind(HTTP2ClientError(.connectionClosed, mayHaveBeenProcessed: false)) == .notProcessed)
        #expect(kind(HTTP2ClientError(.peerUnresponsive, mayHaveBeenProcessed: true)) == .lost)
        #expect(kind(HTTP2ClientError(.deadlineExceeded, mayHaveBeenProcessed: false)) == .deadlineExceeded(processed: false))
        #expect(kind(HTTP2ClientError(.cancelled, mayHaveBeenProcessed: true)) == .cancelled(processed: true))
        #expect(kind(HTTP2ClientError(.invalidRequest, mayHaveBeenProcessed: false)) == .invalidRequest)
    }

    @Test("Verdicts from errors: rejections, then failed exactly when a copy may have been delivered")
    func verdicts() {
        func name(_ outcome: APNSBulkVerdict.Outcome) -> String {
            switch outcome {
            case .accepted: "accepted"
            case .rejected: "rejected"
            case .failed: "failed"
            case .notSent: "notSent"
            }
        }
        #expect(name(.init(APNSError(kind: .rejected, status: 410))) == "rejected")
        #expect(name(.init(APNSError(kind: .rejected, status: 429, mayHaveBeenDelivered: true))) == "rejected")
        #expect(APNSBulkVerdict.Outcome(APNSError(kind: .rejected, status: 429, mayHaveBeenDelivered: true)).mayHaveBeenDelivered)
        #expect(name(.init(APNSError(kind: .invalidNotification))) == "rejected")
        for kind in [APNSError.Kind.transport, .unreachable, .deadlineExceeded, .cancelled, .shutdown, .credentials] {
            #expect(name(.init(APNSError(kind: kind, mayHaveBeenDelivered: true))) == "failed")
            #expect(name(.init(APNSError(kind: kind, mayHaveBeenDelivered: false))) == "notSent")
        }
    }
}
