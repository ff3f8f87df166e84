public import ForgeAPNsCore
public import struct Foundation.Date

/// How the local APNs server judges what the checklist leaves open. Every default is documented at
/// the property, with the rule of docs/local-server-rules.md it settles (R11, R12, …).
public struct LocalAPNSConfiguration: Sendable {
    /// The environment the server plays: `apns-unique-id` is sent in sandbox only, and tokens
    /// registered for the other environment are `BadDeviceToken` (D2).
    public var environment: Environment
    /// Accepted token lengths in hex digits (R11; Apple gives none): 64 to 200.
    public var tokenLengths: ClosedRange<Int>
    /// Whether tokens not in the registry are accepted (default `true`, so benchmarks can use generated tokens).
    public var acceptsUnknownTokens: Bool
    /// The reason for `background` with priority 10 (R12, unverified): `BadPriority` by default; `nil` accepts it.
    public var backgroundPriorityTenReason: APNSErrorReason?
    /// The reason for a topic whose suffix belongs to another push type (R12, unverified):
    /// `DeviceTokenNotForTopic` by default; `nil` accepts it.
    public var topicSuffixMismatchReason: APNSErrorReason?
    /// The stream limit announced once a connection may use more than one stream (C2; Apple's value
    /// is unverified, 1000 was seen in 2021).
    public var maxConcurrentStreams: UInt32
    /// Whether a connection without a client certificate starts with one stream and gets
    /// ``maxConcurrentStreams`` after its first accepted push (C2, documented by Apple). Default `true`.
    public var oneStreamUntilFirstPush: Bool
    /// Whether a rejection other than 410 drops the connection's limit to one stream until the next
    /// accepted push (C3, seen in 2016). Default `false`.
    public var oneStreamAfterRejection: Bool
    /// Closes a connection with GOAWAY `{"reason":"IdleTimeout"}` after this long without a
    /// request (C6; Apple's timeout is unverified). Default `nil`: never.
    public var idleTimeout: Duration?
    /// The burst of pushes one token may receive before `429 TooManyRequests` (T1; Apple's
    /// threshold is unverified). Default `nil`: no limit.
    public var perTokenRateLimit: RateLimit?
    /// The reason for a certificate that does not cover the push's topic (unverified):
    /// `TopicDisallowed` (400) by default.
    public var certificateTopicReason: APNSErrorReason
    /// Channels per app and environment (M1: 10,000 per Apple).
    public var channelLimit: Int
    /// Whether accepted pushes are kept for ``LocalAPNSServer/accepted`` (turn off for long benchmarks;
    /// subscribers of ``LocalAPNSServer/acceptedPushes()`` still see every push).
    package var keepsHistory: Bool
    /// The bundle ids the server serves, as an APNs account's apps: a device push whose topic names
    /// another bundle (after its push-type suffix is removed), or a broadcast or channel request for
    /// another bundle, gets ``unservedTopicReason``. Default `nil`: every bundle is served.
    public var servedBundleIDs: Set<String>?
    /// The reason for a bundle id that is not served: `TopicDisallowed` (400), Apple's "pushing to this
    /// topic is not allowed" (Apple, "Handling notification responses from APNs", the reason table).
    public var unservedTopicReason: APNSErrorReason

    /// Which APNs environment the server plays: the device tokens' environment type.
    public typealias Environment = DeviceEnvironment

    /// At most `pushes` accepted pushes to one token within `seconds`.
    public struct RateLimit: Hashable, Sendable {
        /// Pushes allowed in one window.
        public var pushes: Int
        /// The window's length.
        public var seconds: Double

        /// Creates a limit.
        public init(pushes: Int, seconds: Double) {
            self.pushes = pushes
            self.seconds = seconds
        }
    }

    /// Creates a configuration with the documented defaults.
    public init(
        environment: Environment = .sandbox,
        tokenLengths: ClosedRange<Int> = 64...200,
        acceptsUnknownTokens: Bool = true,
        backgroundPriorityTenReason: APNSErrorReason? = .badPriority,
        topicSuffixMismatchReason: APNSErrorReason? = .deviceTokenNotForTopic,
        maxConcurrentStreams: UInt32 = 1000,
        oneStreamUntilFirstPush: Bool = true,
        oneStreamAfterRejection: Bool = false,
        idleTimeout: Duration? = nil,
        perTokenRateLimit: RateLimit? = nil,
        certificateTopicReason: APNSErrorReason = .topicDisallowed,
        channelLimit: Int = 10_000,
        keepsHistory: Bool = true,
        servedBundleIDs: Set<String>? = nil,
        unservedTopicReason: APNSErrorReason = .topicDisallowed
    ) {
        self.environment = environment
        self.tokenLengths = tokenLengths
        self.acceptsUnknownTokens = acceptsUnknownTokens
        self.backgroundPriorityTenReason = backgroundPriorityTenReason
        self.topicSuffixMismatchReason = topicSuffixMismatchReason
        self.maxConcurrentStreams = maxConcurrentStreams
        self.oneStreamUntilFirstPush = oneStreamUntilFirstPush
        self.oneStreamAfterRejection = oneStreamAfterRejection
        self.idleTimeout = idleTimeout
        self.perTokenRateLimit = perTokenRateLimit
        self.certificateTopicReason = certificateTopicReason
        self.channelLimit = channelLimit
        self.keepsHistory = keepsHistory
        self.servedBundleIDs = servedBundleIDs
        self.unservedTopicReason = unservedTopicReason
    }
}

/// What the server knows of device tokens: topic (bundle id), environment and state.
public struct LocalAPNSTokenRecord: Hashable, Sendable {
    /// The token's state.
    public enum State: Hashable, Sendable {
        case active
        /// Unregistered at a date: pushes get 410 `Unregistered` with that timestamp (D3).
        case unregistered(Date)
        /// Expired at a date: 410 `ExpiredToken` (D4).
        case expired(Date)
    }

    /// The bundle id the token was issued for.
    public var bundleID: String
    /// The environment it belongs to.
    public var environment: LocalAPNSConfiguration.Environment
    /// Its state.
    public var state: State

    /// Creates a record.
    public init(bundleID: String, environment: LocalAPNSConfiguration.Environment, state: State = .active) {
        self.bundleID = bundleID
        self.environment = environment
        self.state = state
    }
}

/// An app the server knows: whether its Broadcast capability is on (B1).
public struct LocalAPNSApp: Hashable, Sendable {
    /// The bundle id.
    public var bundleID: String
    /// Whether broadcast pushes and channels are enabled (on by default; off gives `FeatureNotEnabled`).
    public var broadcastEnabled: Bool

    /// Creates an app record.
    public init(bundleID: String, broadcastEnabled: Bool = true) {
        self.bundleID = bundleID
        self.broadcastEnabled = broadcastEnabled
    }
}

/// A broadcast channel (created through the channel API or registered directly).
public struct LocalAPNSChannel: Hashable, Sendable {
    /// The channel id (base64).
    public var id: String
    /// The app it belongs to.
    public var bundleID: String
    /// 0: No Message Stored (expiration must be 0); 1: Most Recent Message Stored.
    public var messageStoragePolicy: Int

    /// Creates a channel record.
    public init(id: String, bundleID: String, messageStoragePolicy: Int) {
        self.id = id
        self.bundleID = bundleID
        self.messageStoragePolicy = messageStoragePolicy
    }
}

/// A client certificate the server accepts (C7), by the SHA-256 of its DER encoding.
public struct LocalAPNSCertificate: Hashable, Sendable {
    /// `APNSCertificateInfo.sha256Fingerprint` of the certificate.
    public var sha256Fingerprint: String
    /// The app it was issued for.
    public var bundleID: String
    /// The environment it is restricted to, or `nil` for a Sandbox & Production certificate.
    public var environment: LocalAPNSConfiguration.Environment?
    /// Whether it has been revoked (403 `BadCertificate`).
    public var revoked: Bool

    /// Creates a certificate record.
    public init(sha256Fingerprint: String, bundleID: String, environment: LocalAPNSConfiguration.Environment? = nil, revoked: Bool = false) {
        self.sha256Fingerprint = sha256Fingerprint
        self.bundleID = bundleID
        self.environment = environment
        self.revoked = revoked
    }

    /// Whether the certificate covers `topic`: its bundle id, or the bundle id with a push-type
    /// suffix (Apple's universal certificates carry the VoIP, complication and other topics).
    public func covers(topic: String) -> Bool {
        topic == self.bundleID || (topic.hasPrefix(self.bundleID + ".") && APNSPushType.allCases.contains {
            guard let suffix = $0.topicSuffix, !suffix.isEmpty else { return false }
            return topic == self.bundleID + suffix
        })
    }
}
