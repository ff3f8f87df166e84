public import struct Foundation.Date

/// `aps.event` of a Live Activity update or end, on a device token or a broadcast channel.
public struct APNSLiveActivityEvent: Hashable, Sendable, CustomStringConvertible {
    enum Kind: Hashable, Sendable {
        case update
        case end(dismissalDate: Date?)
    }

    let kind: Kind

    /// `update`: a new content state.
    public static let update = APNSLiveActivityEvent(kind: .update)

    /// `end`: the final content state. With no dismissal date the ended activity stays on the Lock
    /// Screen for up to four hours; a past date removes it at once.
    public static func end(dismissalDate: Date? = nil) -> APNSLiveActivityEvent { APNSLiveActivityEvent(kind: .end(dismissalDate: dismissalDate)) }

    /// The wire value of `aps.event`.
    public var rawValue: String {
        switch self.kind {
        case .update: return "update"
        case .end: return "end"
        }
    }

    var dismissalDate: Date? {
        if case .end(let date) = self.kind { return date }
        return nil
    }

    public var description: String { self.rawValue }
}

/// An update to or the end of a running Live Activity, sent to the activity's update token
/// (`apns-push-type: liveactivity`).
///
/// ```swift
/// let update = APNSLiveActivityNotification(
///     event: .update,
///     contentState: Delivery.ContentState(status: "On its way", etaMinutes: 12),
///     timestamp: .now,
///     topic: try APNSBundleID("com.example.app")
/// )
/// ```
///
/// - Important: the topic gets `.push-type.liveactivity`; priority is 5 or 10 (10, the default,
///   counts against the ActivityKit budget). `contentState` must decode into the app's `ContentState`
///   with a default `JSONDecoder`, so it is encoded with default strategies (a `Date` becomes seconds
///   since 2001). The device ignores updates whose `timestamp` is older than the last one it applied.
public struct APNSLiveActivityNotification<ContentState: Encodable & Sendable>: APNSNotification {
    /// `aps.event`.
    public var event: APNSLiveActivityEvent
    /// `aps.content-state`.
    public var contentState: ContentState
    /// `aps.timestamp`: when the update was made, sent in whole seconds.
    public var timestamp: Date
    /// `aps.stale-date`: when the activity becomes stale.
    public var staleDate: Date?
    /// `aps.relevance-score`: any number; the highest wins the Dynamic Island.
    public var relevanceScore: Double?
    /// `aps.alert`.
    public var alert: APNSLiveActivityAlert?
    /// The app's bundle id; the topic is derived from it.
    public var topic: APNSBundleID
    /// `apns-priority`: 5 or 10; `nil` lets APNs use 10.
    public var priority: APNSPriority?
    /// `apns-expiration`.
    public var expiration: APNSExpiration
    /// `apns-collapse-id`.
    public var collapseID: APNSCollapseID?
    /// `apns-id`.
    public var apnsID: APNSID?

    /// The push type: always ``APNSPushType/liveactivity``.
    public var pushType: APNSPushType { .liveactivity }

    /// Creates an update or end push.
    public init(
        event: APNSLiveActivityEvent,
        contentState: ContentState,
        timestamp: Date,
        topic: APNSBundleID,
        staleDate: Date? = nil,
        relevanceScore: Double? = nil,
        alert: APNSLiveActivityAlert? = nil,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none,
        collapseID: APNSCollapseID? = nil,
        apnsID: APNSID? = nil
    ) {
        self.event = event
        self.contentState = contentState
        self.timestamp = timestamp
        self.topic = topic
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.alert = alert
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// Validates and encodes the notification once.
    /// - Throws: ``APNSValidationError`` for priority 1, a date before 1970, or a payload over 4096 bytes.
    public func prepared() throws(APNSValidationError) -> APNSPreparedNotification {
        try APNSPreparedNotification(
            pushType: .liveactivity,
            topic: APNSTopic(bundleID: self.topic, pushType: .liveactivity),
            priority: self.priority,
            expiration: self.expiration,
            collapseID: self.collapseID,
            apnsID: self.apnsID,
            encodedBody: APNSPayloadEncoder.encode(aps: self.aps(), custom: APNSNoCustomKeys())
        )
    }

    func aps() throws(APNSValidationError) -> LiveActivityAPS<ContentState, APNSNoCustomKeys> {
        try LiveActivityAPS(
            event: self.event.rawValue, timestamp: self.timestamp, contentState: self.contentState,
            staleDate: self.staleDate, dismissalDate: self.event.dismissalDate, relevanceScore: self.relevanceScore,
            alert: self.alert
        )
    }
}

/// Whole seconds since 1970, rounded down, for the `aps` date fields.
func epochSeconds(_ date: Date, field: String) throws(APNSValidationError) -> Int {
    let seconds = date.timeIntervalSince1970
    guard seconds >= 0, seconds < 1e15 else {
        throw APNSValidationError(.badPayload, field: field, rule: "must be a date after 1970 (got \(date))")
    }
    return Int(seconds.rounded(.down))
}

/// The `aps` dictionary of every Live Activity push (device or broadcast, start, update or end),
/// written in sorted key order.
struct LiveActivityAPS<ContentState: Encodable, Attributes: Encodable>: APNSWritable {
    var event: String
    var timestamp: Int
    var contentState: ContentState
    var staleDate: Int?
    var dismissalDate: Int?
    var relevanceScore: Double?
    var alert: APNSLiveActivityAlert?
    var attributesType: String? = nil
    var attributes: Attributes? = nil
    var inputPushToken: Int? = nil
    var inputPushChannel: String? = nil

    /// Checks and converts the dates to whole seconds since 1970.
    init(
        event: String,
        timestamp: Date,
        contentState: ContentState,
        staleDate: Date?,
        dismissalDate: Date?,
        relevanceScore: Double?,
        alert: APNSLiveActivityAlert?,
        attributesType: String? = nil,
        attributes: Attributes? = nil,
        inputPushToken: Bool = false,
        inputPushChannel: APNSChannelID? = nil
    ) throws(APNSValidationError) {
        self.event = event
        self.timestamp = try epochSeconds(timestamp, field: "aps.timestamp")
        self.contentState = contentState
        self.staleDate = try staleDate.map { date throws(APNSValidationError) in try epochSeconds(date, field: "aps.stale-date") }
        self.dismissalDate = try dismissalDate.map { date throws(APNSValidationError) in
            try epochSeconds(date, field: "aps.dismissal-date")
        }
        self.relevanceScore = relevanceScore
        self.alert = alert
        self.attributesType = attributesType
        self.attributes = attributes
        self.inputPushToken = inputPushToken ? 1 : nil
        self.inputPushChannel = inputPushChannel?.rawValue
    }

    func write(to object: inout APNSObjectWriter) throws {
        if let alert = self.alert {
            try object.object("alert") { try alert.write(to: &$0) }
        }
        try object.encodable("attributes", self.attributes)
        object.string("attributes-type", self.attributesType)
        try object.encodable("content-state", self.contentState)
        object.int("dismissal-date", self.dismissalDate)
        object.string("event", self.event)
        object.string("input-push-channel", self.inputPushChannel)
        object.int("input-push-token", self.inputPushToken)
        try object.double("relevance-score", self.relevanceScore)
        object.int("stale-date", self.staleDate)
        object.int("timestamp", self.timestamp)
    }
}
