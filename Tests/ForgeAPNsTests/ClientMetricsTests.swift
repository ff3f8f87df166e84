@testable import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import Metrics
import MetricsTestKit
import Testing

/// The client's instruments record what a send reports through them, and cost nothing when no
/// metrics backend was bootstrapped (swift-metrics' no-op factory).
@Suite("Client metrics")
struct ClientMetricsTests {
    @Test("Each report reaches its instrument, with its dimensions and the latency in nanoseconds")
    func recorded() throws {
        let factory = TestMetrics()
        let metrics = ClientMetrics(credential: "FORGETEAM1/FORGEKEY01", factory: factory)
        #expect(metrics.isEnabled)
        let credential = ("credential", "FORGETEAM1/FORGEKEY01")

        metrics.started(3)
        metrics.ended(1)
        #expect(try factory.expectMeter("apns_in_flight", [credential]).lastValue == 2)

        let started = MonotonicInstant(nanoseconds: 5_000_000_000)
        metrics.accepted(pushType: .alert, started: started, answered: started + .microseconds(1500), count: 2)
        metrics.accepted(pushType: .alert, started: started, answered: started + .seconds(2), count: 0)
        let accepted = try factory.expectCounter("apns_notifications_total", [("push_type", "alert"), ("result", "accepted"), credential])
        #expect(accepted.totalValue == 2)
        let duration = try factory.expectTimer("apns_send_duration", [("push_type", "alert"), credential])
        #expect(duration.values == [1_500_000, 1_500_000])

        metrics.rejected(pushType: .alert, reason: "BadDeviceToken", latency: .milliseconds(3))
        #expect(try factory.expectCounter(
            "apns_notifications_total", [("push_type", "alert"), ("result", "rejected"), ("reason", "BadDeviceToken"), credential]
        ).totalValue == 1)
        #expect(duration.values.last == 3_000_000)

        metrics.failed(pushType: .background)
        #expect(try factory.expectCounter("apns_notifications_total", [("push_type", "background"), ("result", "failed"), credential])
            .totalValue == 1)

        metrics.count(.retry(after: .seconds(1)))
        metrics.count(.replay(after: .zero))
        metrics.count(.replay(after: .zero))
        metrics.count(.accept)
        metrics.tokenRefreshed()
        #expect(try factory.expectCounter("apns_retries_total", [credential]).totalValue == 1)
        #expect(try factory.expectCounter("apns_replays_total", [credential]).totalValue == 2)
        #expect(try factory.expectCounter("apns_token_refreshes_total", [credential]).totalValue == 1)
    }

    @Test("With one credential the instruments carry no credential dimension")
    func unlabelled() throws {
        let factory = TestMetrics()
        let metrics = ClientMetrics(factory: factory)
        let started = MonotonicInstant.now
        metrics.accepted(pushType: .liveactivity, started: started, answered: started, count: 1)
        #expect(try factory.expectCounter("apns_notifications_total", [("push_type", "liveactivity"), ("result", "accepted")]).totalValue == 1)
    }

    @Test("Made by the no-op factory, the instruments are off and a push makes no metric call")
    func noBackend() {
        #expect(!ClientMetrics(factory: NOOPMetricsHandler.instance).isEnabled)
        #expect(ClientMetrics(factory: TestMetrics()).isEnabled)
    }

    @Test("Nanoseconds of a duration, sub-nanosecond parts dropped")
    func nanoseconds() {
        #expect(ClientMetrics.nanoseconds(.seconds(2) + .nanoseconds(7)) == 2_000_000_007)
        #expect(ClientMetrics.nanoseconds(.microseconds(1.5)) == 1_500)
        #expect(ClientMetrics.nanoseconds(.zero) == 0)
    }
}
