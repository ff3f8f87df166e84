internal import ForgeAPNsCore
internal import Metrics

/// The client's swift-metrics instruments. Labels are stable; dimensions are the push type and
/// the outcome or reason (never a token).
struct ClientMetrics: Sendable {
    /// Sends in flight (`apns_in_flight`).
    let inFlight = Meter(label: "apns_in_flight")
    /// Retries made (`apns_retries_total`).
    let retries = Counter(label: "apns_retries_total")
    /// Provider tokens signed again after `ExpiredProviderToken` (`apns_token_refreshes_total`).
    let tokenRefreshes = Counter(label: "apns_token_refreshes_total")

    func accepted(pushType: APNSPushType, latency: Duration) {
        Counter(label: "apns_notifications_total", dimensions: [("push_type", pushType.rawValue), ("result", "accepted")]).increment()
        Timer(label: "apns_send_duration", dimensions: [("push_type", pushType.rawValue)]).recordNanoseconds(Self.nanoseconds(latency))
    }

    func rejected(pushType: APNSPushType, reason: String, latency: Duration) {
        Counter(label: "apns_notifications_total", dimensions: [
            ("push_type", pushType.rawValue), ("result", "rejected"), ("reason", reason),
        ]).increment()
        Timer(label: "apns_send_duration", dimensions: [("push_type", pushType.rawValue)]).recordNanoseconds(Self.nanoseconds(latency))
    }

    func failed(pushType: APNSPushType) {
        Counter(label: "apns_notifications_total", dimensions: [("push_type", pushType.rawValue), ("result", "failed")]).increment()
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }
}
