public import ForgeAPNsCore
public import struct Foundation.Date

/// How the local APNs server judges what the checklist leaves open. Every default is documented at
/// the property, with the row of the checklist (apns-provider-api.md §10) it settles.
public struct LocalAPNsConfiguration: Sendable {
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

    /// Which APNs environment the server plays.
    public enum Environment: String, Hashable, Sendable {
        case sandbox, production
    }

    /// Creates a configuration with the documented defaults.
    public init(
        environment: Environment = .sandbox,
        tokenLengths: ClosedRange<Int> = 64...200,
        acceptsUnknownTokens: Bool = true,
        backgroundPriorityTenReason: APNSErrorReason? = .badPriority,
        topicSuffixMismatchReason: APNSErrorReason? = .deviceTokenNotForTopic
    ) {
        self.environment = environment
        self.tokenLengths = tokenLengths
        self.acceptsUnknownTokens = acceptsUnknownTokens
        self.backgroundPriorityTenReason = backgroundPriorityTenReason
        self.topicSuffixMismatchReason = topicSuffixMismatchReason
    }
}

/// What the server knows of device tokens: topic (bundle id), environment and state.
public struct LocalAPNsTokenRecord: Hashable, Sendable {
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
    public var environment: LocalAPNsConfiguration.Environment
    /// Its state.
    public var state: State

    /// Creates a record.
    public init(bundleID: String, environment: LocalAPNsConfiguration.Environment, state: State = .active) {
        self.bundleID = bundleID
        self.environment = environment
        self.state = state
    }
}
