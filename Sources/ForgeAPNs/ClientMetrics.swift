internal import ForgeAPNsCore
internal import ForgeHTTP2
internal import Metrics

/// One credential's swift-metrics instruments. Labels are stable; dimensions are the push type and
/// the outcome or reason (never a token), and with several credentials `credential` (`TEAMID/KEYID`
/// or the certificate's label; never the key).
struct ClientMetrics: Sendable {
    /// Whether the instruments record anything: false when they were made by swift-metrics' no-op
    /// factory (no backend bootstrapped before the client was made), and then a push costs no
    /// metric call at all (five per push otherwise, each through an existential, with a duration
    /// converted to nanoseconds).
    let isEnabled: Bool
    /// Sends in flight (`apns_in_flight`).
    private let inFlight: Meter
    /// Retries made (`apns_retries_total`).
    private let retries: Counter
    /// Replays of pushes APNs did not process (`apns_replays_total`); not attempts.
    private let replays: Counter
    /// Provider tokens signed again after `ExpiredProviderToken` (`apns_token_refreshes_total`).
    private let tokenRefreshes: Counter
    private let factory: any MetricsFactory
    /// `[("credential", label)]` with several credentials, else nothing.
    private let credential: [(String, String)]

    /// Per push type, made once: creating a swift-metrics handle takes the metrics system's lock
    /// and allocates, which cost more than the send's own bookkeeping when done per push. A list
    /// searched in order (alert first) costs less per push than hashing the push type twice.
    private let perType: [(pushType: APNSPushType, accepted: Counter, duration: Timer)]

    /// Counts a retry or a replay the send decision asked for.
    func count(_ decision: SendDecision) {
        guard self.isEnabled else { return }
        switch decision {
        case .retry: self.retries.increment()
        case .replay: self.replays.increment()
        default: break
        }
    }

    /// - Parameters:
    ///   - credential: the credential's label, when the client has several.
    ///   - factory: where the instruments come from; the bootstrapped one by default.
    init(credential: String? = nil, factory: any MetricsFactory = MetricsSystem.factory) {
        let credential = credential.map { [("credential", $0)] } ?? []
        self.credential = credential
        self.factory = factory
        self.isEnabled = !(factory is NOOPMetricsHandler)
        self.inFlight = Meter(label: "apns_in_flight", dimensions: credential, factory: factory)
        self.retries = Counter(label: "apns_retries_total", dimensions: credential, factory: factory)
        self.replays = Counter(label: "apns_replays_total", dimensions: credential, factory: factory)
        self.tokenRefreshes = Counter(label: "apns_token_refreshes_total", dimensions: credential, factory: factory)
        self.perType = APNSPushType.allCases.map { type in
            (
                type,
                Counter(
                    label: "apns_notifications_total", dimensions: [("push_type", type.rawValue), ("result", "accepted")] + credential,
                    factory: factory
                ),
                Timer(label: "apns_send_duration", dimensions: [("push_type", type.rawValue)] + credential, factory: factory)
            )
        }
    }

    /// `count` pushes started (`apns_in_flight` up).
    func started(_ count: Int) {
        if self.isEnabled { self.inFlight.increment(by: Double(count)) }
    }

    /// `count` pushes have their outcome (`apns_in_flight` down).
    func ended(_ count: Int) {
        if self.isEnabled { self.inFlight.decrement(by: Double(count)) }
    }

    /// A provider token signed again after `ExpiredProviderToken`.
    func tokenRefreshed() {
        if self.isEnabled { self.tokenRefreshes.increment() }
    }

    private func instruments(_ pushType: APNSPushType) -> (accepted: Counter, duration: Timer)? {
        for entry in self.perType where entry.pushType == pushType { return (entry.accepted, entry.duration) }
        return nil
    }

    /// `count` pushes (one, or a bulk batch's) sent at `started` and accepted together at `answered`.
    func accepted(pushType: APNSPushType, started: MonotonicInstant, answered: MonotonicInstant, count: Int) {
        guard self.isEnabled, count > 0, let instruments = self.instruments(pushType) else { return }
        instruments.accepted.increment(by: count)
        let nanoseconds = Int64(clamping: answered.nanoseconds &- min(started.nanoseconds, answered.nanoseconds))
        for _ in 0..<count { instruments.duration.recordNanoseconds(nanoseconds) }
    }

    func rejected(pushType: APNSPushType, reason: String, latency: Duration) {
        guard self.isEnabled else { return }
        Counter(label: "apns_notifications_total", dimensions: [
            ("push_type", pushType.rawValue), ("result", "rejected"), ("reason", reason),
        ] + self.credential, factory: self.factory).increment()
        self.instruments(pushType)?.duration.recordNanoseconds(Self.nanoseconds(latency))
    }

    func failed(pushType: APNSPushType) {
        guard self.isEnabled else { return }
        Counter(
            label: "apns_notifications_total", dimensions: [("push_type", pushType.rawValue), ("result", "failed")] + self.credential,
            factory: self.factory
        ).increment()
    }

    /// Whole nanoseconds (one read of the duration's components: each divides 128-bit attoseconds).
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
