import ForgeLoopbackUI
import Testing

@Suite("The token reports' forwarder: what an answer means, and the bounded backoff (no I/O)")
struct ActivityReportForwarderTests {
    @Test("2xx and 3xx are sent, 4xx refused for good, 5xx and no answer retried", arguments: [
        (200, ActivityReportForwarder.Verdict.sent), (204, .sent), (301, .sent), (400, .refused), (404, .refused), (429, .refused),
        (500, .retry), (503, .retry),
    ])
    func verdicts(status: Int, verdict: ActivityReportForwarder.Verdict) {
        #expect(ActivityReportForwarder.verdict(status: status) == verdict)
    }

    @Test("No answer (refused or lost connection, time-out) is retried")
    func noAnswer() {
        #expect(ActivityReportForwarder.verdict(status: nil) == .retry)
    }

    @Test("The wait doubles from 100 ms and stops growing at 5 s")
    func backoff() {
        let retry = ActivityReportForwarder.Retry()
        #expect((1...8).map { retry.delay(after: $0) } == [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600), .milliseconds(3200),
            .seconds(5), .seconds(5),
        ])
        #expect(retry.attempts == 8)
    }
}
