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
    private struct ByKind: Sendable {
        let update: Counter
        let end: Counter
        let start: Counter

        init(_ label: String, factory: any MetricsFactory) {
            self.update = Counter(label: label, dimensions: [("kind", "update")], factory: factory)
            self.end = Counter(label: label, dimensions: [("kind", "end")], factory: factory)
            self.start = Counter(label: label, dimensions: [("kind", "start")], factory: factory)
        }

        subscript(kind: PendingPush.Kind) -> Counter {
            switch kind {
            case .update: self.update
            case .end: self.end
            case .start: self.start
            }
        }
    }

    // Made once: a request is the hot path, and a factory's lookup of a label is not free.
    private let requests: ByKind
    private let sent: ByKind
    private let failed: ByKind
    private let supersededCounter: Counter
    private let downgraded: Counter
    private let deferred: Counter
    private let takenOverCounter: Counter
    private let channelThrottledCounter: Counter
    private let broadcastsSent: Counter
    private let lag: [PendingPush.Kind: Timer]

    init(factory: any MetricsFactory) {
        self.requests = ByKind("forge_live_activity_requests_total", factory: factory)
        self.sent = ByKind("forge_live_activity_sent_total", factory: factory)
        self.failed = ByKind("forge_live_activity_failed_total", factory: factory)
        self.supersededCounter = Counter(label: "forge_live_activity_superseded_total", factory: factory)
        self.downgraded = Counter(label: "forge_live_activity_throttles_avoided_total", dimensions: [("how", "downgraded")], factory: factory)
        self.deferred = Counter(label: "forge_live_activity_throttles_avoided_total", dimensions: [("how", "deferred")], factory: factory)
        self.takenOverCounter = Counter(label: "forge_live_activity_taken_over_total", factory: factory)
        self.channelThrottledCounter = Counter(label: "forge_live_activity_channel_throttled_total", factory: factory)
        self.broadcastsSent = Counter(label: "forge_live_activity_broadcasts_sent_total", factory: factory)
        var lag: [PendingPush.Kind: Timer] = [:]
        for kind in [PendingPush.Kind.update, .end, .start] {
            lag[kind] = Timer(
                label: "forge_live_activity_update_lag_seconds", dimensions: [("kind", kind.rawValue)], preferredDisplayUnit: .seconds, factory: factory
            )
        }
        self.lag = lag
    }

    func requested(_ kind: PendingPush.Kind) {
        self.requests[kind].increment()
    }

    func superseded() {
        self.supersededCounter.increment()
    }

    /// An alerting update sent at priority 5: its activity's budget was spent.
    func downgradedUpdate() {
        self.downgraded.increment()
    }

    /// A start held for the install's start budget.
    func deferredStart() {
        self.deferred.increment()
    }

    func takenOver() {
        self.takenOverCounter.increment()
    }

    /// A broadcast APNs answered with 429: its channel backs off.
    func channelThrottled() {
        self.channelThrottledCounter.increment()
    }

    /// A broadcast APNs accepted, and its lag from the group's request.
    func broadcastSent(_ kind: PendingPush.Kind, requestedAt: Date, now: Date) {
        self.broadcastsSent.increment()
        let lag = max(0, now.timeIntervalSince(requestedAt))
        self.lag[kind]?.recordNanoseconds(Int64(lag * 1e9))
    }

    /// A verdict: counted as sent or failed, and its lag from the request recorded.
    func verdict(_ kind: PendingPush.Kind, sent: Bool, requestedAt: Date, now: Date) {
        (sent ? self.sent : self.failed)[kind].increment()
        let lag = max(0, now.timeIntervalSince(requestedAt))
        self.lag[kind]?.recordNanoseconds(Int64(lag * 1e9))
    }
}
