internal import Metrics
internal import struct Foundation.Date
internal import struct Foundation.TimeInterval

/// What the manager counts (swift-metrics, in the factory of ``LiveActivityManager/Configuration/metrics``):
///
/// - `forge_live_activity_requests_total{kind}`: updates, ends and starts asked for (`kind`:
///   `update`, `end`, `start`);
/// - `forge_live_activity_sent_total{kind}` and `forge_live_activity_failed_total{kind}`: requested
///   pushes APNs accepted, and those it did not (or that failed for good);
/// - `forge_live_activity_superseded_total`: requested pushes replaced by a newer one before they went;
/// - `forge_live_activity_throttles_avoided_total{how}`: `downgraded` (an alerting update sent at
///   priority 5: its activity's budget was spent) and `deferred` (a start held for the install's
///   start budget) — each a push iOS would have dropped;
/// - `forge_live_activity_update_lag_seconds{kind}`: from the request to APNs' verdict (a
///   histogram), the lag a backend sees when it falls behind;
/// - `forge_live_activity_taken_over_total`: pushes taken over after another manager's lease ran
///   out (they may have been delivered twice).
struct ManagerMetrics: Sendable {
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func requested(_ kind: PendingPush.Kind) {
        Counter(label: "forge_live_activity_requests_total", dimensions: [("kind", kind.rawValue)], factory: self.factory).increment()
    }

    func superseded() {
        Counter(label: "forge_live_activity_superseded_total", factory: self.factory).increment()
    }

    func throttleAvoided(_ how: String) {
        Counter(label: "forge_live_activity_throttles_avoided_total", dimensions: [("how", how)], factory: self.factory).increment()
    }

    func takenOver() {
        Counter(label: "forge_live_activity_taken_over_total", factory: self.factory).increment()
    }

    /// A verdict: counted as sent or failed, and its lag from the request recorded.
    func verdict(_ kind: PendingPush.Kind, sent: Bool, requestedAt: Date, now: Date) {
        Counter(label: sent ? "forge_live_activity_sent_total" : "forge_live_activity_failed_total", dimensions: [("kind", kind.rawValue)],
                factory: self.factory).increment()
        let lag = max(0, now.timeIntervalSince(requestedAt))
        Timer(label: "forge_live_activity_update_lag_seconds", dimensions: [("kind", kind.rawValue)], preferredDisplayUnit: .seconds,
              factory: self.factory).recordNanoseconds(Int64(lag * 1e9))
    }
}
