internal import ForgeAPNsCore
internal import Metrics

/// One credential's swift-metrics instruments. Labels are stable; dimensions are the push type and
/// the outcome or reason (never a token), and with several credentials `credential` (`TEAMID/KEYID`
/// or the certificate's label; never the key).
struct ClientMetrics: Sendable {
    /// Sends in flight (`apns_in_flight`).
    let inFlight: Meter
    /// Retries made (`apns_retries_total`).
    let retries: Counter
    /// Replays of pushes APNs did not process (`apns_replays_total`); not attempts.
    let replays: Counter
    /// Provider tokens signed again after `ExpiredProviderToken` (`apns_token_refreshes_total`).
    let tokenRefreshes: Counter
    /// `[("credential", label)]` with several credentials, else nothing.
    private let credential: [(String, String)]

    /// Per push type, made once: creating a swift-metrics handle takes the metrics system's lock
    /// and allocates, which cost more than the send's own bookkeeping when done per push. A list
    /// searched in order (alert first) costs less per push than hashing the push type twice.
    private let perType: [(pushType: APNSPushType, accepted: Counter, duration: Timer)]

    /// Counts a retry or a replay the send decision asked for.
    func count(_ decision: SendDecision) {
        switch decision {
        case .retry: self.retries.increment()
        case .replay: self.replays.increment()
        default: break
        }
    }

    /// - Parameter credential: the credential's label, when the client has several.
    init(credential: String? = nil) {
        let credential = credential.map { [("credential", $0)] } ?? []
        self.credential = credential
        self.inFlight = Meter(label: "apns_in_flight", dimensions: credential)
        self.retries = Counter(label: "apns_retries_total", dimensions: credential)
        self.replays = Counter(label: "apns_replays_total", dimensions: credential)
        self.tokenRefreshes = Counter(label: "apns_token_refreshes_total", dimensions: credential)
        self.perType = APNSPushType.allCases.map { type in
            (
                type,
                Counter(label: "apns_notifications_total", dimensions: [("push_type", type.rawValue), ("result", "accepted")] + credential),
                Timer(label: "apns_send_duration", dimensions: [("push_type", type.rawValue)] + credential)
            )
        }
    }

    private func instruments(_ pushType: APNSPushType) -> (accepted: Counter, duration: Timer)? {
        for entry in self.perType where entry.pushType == pushType { return (entry.accepted, entry.duration) }
        return nil
    }

    func accepted(pushType: APNSPushType, latency: Duration) {
        self.accepted(pushType: pushType, latency: latency, count: 1)
    }

    /// `count` pushes of one bulk batch, answered together after `latency`.
    func accepted(pushType: APNSPushType, latency: Duration, count: Int) {
        guard count > 0, let instruments = self.instruments(pushType) else { return }
        instruments.accepted.increment(by: count)
        let nanoseconds = Self.nanoseconds(latency)
        for _ in 0..<count { instruments.duration.recordNanoseconds(nanoseconds) }
    }

    func rejected(pushType: APNSPushType, reason: String, latency: Duration) {
        Counter(label: "apns_notifications_total", dimensions: [
            ("push_type", pushType.rawValue), ("result", "rejected"), ("reason", reason),
        ] + self.credential).increment()
        self.instruments(pushType)?.duration.recordNanoseconds(Self.nanoseconds(latency))
    }

    func failed(pushType: APNSPushType) {
        Counter(
            label: "apns_notifications_total", dimensions: [("push_type", pushType.rawValue), ("result", "failed")] + self.credential
        ).increment()
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }
}
