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
    /// and allocates, which cost more than the send's own bookkeeping when done per push.
    private let acceptedCounters: [APNSPushType: Counter]
    private let durations: [APNSPushType: Timer]

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
        var counters: [APNSPushType: Counter] = [:]
        var timers: [APNSPushType: Timer] = [:]
        for type in APNSPushType.allCases {
            counters[type] = Counter(
                label: "apns_notifications_total", dimensions: [("push_type", type.rawValue), ("result", "accepted")] + credential
            )
            timers[type] = Timer(label: "apns_send_duration", dimensions: [("push_type", type.rawValue)] + credential)
        }
        self.acceptedCounters = counters
        self.durations = timers
    }

    func accepted(pushType: APNSPushType, latency: Duration) {
        self.acceptedCounters[pushType]?.increment()
        self.durations[pushType]?.recordNanoseconds(Self.nanoseconds(latency))
    }

    /// `count` pushes of one bulk batch, answered together after `latency`.
    func accepted(pushType: APNSPushType, latency: Duration, count: Int) {
        guard count > 0 else { return }
        self.acceptedCounters[pushType]?.increment(by: count)
        guard let timer = self.durations[pushType] else { return }
        let nanoseconds = Self.nanoseconds(latency)
        for _ in 0..<count { timer.recordNanoseconds(nanoseconds) }
    }

    func rejected(pushType: APNSPushType, reason: String, latency: Duration) {
        Counter(label: "apns_notifications_total", dimensions: [
            ("push_type", pushType.rawValue), ("result", "rejected"), ("reason", reason),
        ] + self.credential).increment()
        self.durations[pushType]?.recordNanoseconds(Self.nanoseconds(latency))
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
