public import struct Foundation.Date

/// Starts a Live Activity remotely, sent to the push-to-start token of an `ActivityAttributes` type
/// (iOS 17.2+).
///
/// - Important: a start needs `attributes-type` (the Swift type name of the app's
///   `ActivityAttributes`), `attributes`, `content-state` and an `alert`. On iOS 18+ it can ask for
///   an update token (``inputPushToken``) or subscribe the activity to a broadcast channel
///   (``inputPushChannel``), not both.
public struct APNSLiveActivityStartNotification<
    Attributes: Encodable & Sendable,
    ContentState: Encodable & Sendable
>: APNSNotification {
    /// `aps.attributes-type`: the name of the app's `ActivityAttributes` struct.
    public var attributesType: String
    /// `aps.attributes`: the static attributes.
    public var attributes: Attributes
    /// `aps.content-state`: the first content state.
    public var contentState: ContentState
    /// `aps.alert`: required for a start.
    public var alert: APNSLiveActivityAlert
    /// `aps.timestamp`.
    public var timestamp: Date
    /// `aps.stale-date`.
    public var staleDate: Date?
    /// `aps.relevance-score`.
    public var relevanceScore: Double?
    /// `aps.input-push-token: 1`: the started activity gets an update token (iOS 18+).
    public var inputPushToken: Bool
    /// `aps.input-push-channel`: the broadcast channel the activity subscribes to (iOS 18+).
    public var inputPushChannel: APNSChannelID?
    /// The app's bundle id; the topic is derived from it.
    public var topic: APNSBundleID
    /// `apns-priority`: 5 or 10.
    public var priority: APNSPriority?
    /// `apns-expiration`.
    public var expiration: APNSExpiration
    /// `apns-collapse-id`.
    public var collapseID: APNSCollapseID?
    /// `apns-id`.
    public var apnsID: APNSID?

    /// The push type: always ``APNSPushType/liveactivity``.
    public var pushType: APNSPushType { .liveactivity }

    /// Creates a start push.
    public init(
        attributesType: String,
        attributes: Attributes,
        contentState: ContentState,
        alert: APNSLiveActivityAlert,
        timestamp: Date,
        topic: APNSBundleID,
        staleDate: Date? = nil,
        relevanceScore: Double? = nil,
        inputPushToken: Bool = false,
        inputPushChannel: APNSChannelID? = nil,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none,
        collapseID: APNSCollapseID? = nil,
        apnsID: APNSID? = nil
    ) {
        self.attributesType = attributesType
        self.attributes = attributes
        self.contentState = contentState
        self.alert = alert
        self.timestamp = timestamp
        self.topic = topic
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.inputPushToken = inputPushToken
        self.inputPushChannel = inputPushChannel
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Validates and encodes the notification once.
    /// - Throws: ``APNSValidationError`` for an empty attributes type, both an input push token and
    ///   an input channel, priority 1, or a payload over 4096 bytes.
    public func prepared() throws(APNSValidationError) -> APNSPreparedNotification {
        guard !self.attributesType.isEmpty else {
            throw APNSValidationError(
                .badPayload,
                field: "aps.attributes-type",
                rule: "must name the app's ActivityAttributes type"
            )
        }
        if self.inputPushToken && self.inputPushChannel != nil {
            throw APNSValidationError(
                .badPayload,
                field: "aps.input-push-channel",
                rule: "cannot be combined with input-push-token: an activity gets an update token or a channel"
            )
        }
        let aps = try LiveActivityAPS(
            event: "start", timestamp: self.timestamp, contentState: self.contentState, staleDate: self.staleDate,
            dismissalDate: nil, relevanceScore: self.relevanceScore, alert: self.alert,
            attributesType: self.attributesType, attributes: self.attributes, inputPushToken: self.inputPushToken,
            inputPushChannel: self.inputPushChannel
        )
        return try APNSPreparedNotification(
            pushType: .liveactivity,
            topic: APNSTopic(bundleID: self.topic, pushType: .liveactivity),
            priority: self.priority,
            expiration: self.expiration,
            collapseID: self.collapseID,
            apnsID: self.apnsID,
            encodedBody: APNSPayloadEncoder.encode(aps: aps, custom: APNSNoCustomKeys())
        )
    }
}
