/// A visible notification: an alert, a sound, a badge, or any of them (`apns-push-type: alert`).
///
/// ```swift
/// let notification = APNSAlertNotification(
///     alert: APNSAlert(title: "Build finished", body: "main is green"),
///     topic: try APNSBundleID("com.example.ci"),
///     sound: .default,
///     payload: ["build": 4711]
/// )
/// let prepared = try notification.prepared()
/// ```
///
/// - Important: the topic is the bundle id; alerts take no suffix. Priority 10 (the default) delivers
///   at once; use 5 for notifications that can wait.
public struct APNSAlertNotification<Payload: Encodable & Sendable>: APNSNotification {
    /// `aps.alert`.
    public var alert: APNSAlert
    /// `aps.badge`: the number on the app icon; `0` removes it.
    public var badge: Int?
    /// `aps.sound`.
    public var sound: APNSSound?
    /// `aps.thread-id`: groups notifications.
    public var threadID: String?
    /// `aps.category`: a registered notification category, for actions.
    public var category: String?
    /// `aps.mutable-content: 1`: route through the app's Notification Service Extension.
    public var mutableContent: Bool
    /// `aps.content-available: 1`: also wake the app in the background.
    public var contentAvailable: Bool
    /// `aps.target-content-id`: the window to bring forward.
    public var targetContentID: String?
    /// `aps.interruption-level`.
    public var interruptionLevel: APNSInterruptionLevel?
    /// `aps.relevance-score`: 0 to 1, for notification summaries.
    public var relevanceScore: Double?
    /// `aps.filter-criteria`: the Focus filter this notification belongs to.
    public var filterCriteria: String?
    /// Custom keys, encoded beside `aps` (never inside it).
    public var payload: Payload

    /// The app's bundle id; the topic is derived from it.
    public var topic: APNSBundleID
    /// `apns-priority`; `nil` lets APNs use 10.
    public var priority: APNSPriority?
    /// `apns-expiration`.
    public var expiration: APNSExpiration
    /// `apns-collapse-id`.
    public var collapseID: APNSCollapseID?
    /// `apns-id`.
    public var apnsID: APNSID?

    /// The push type: always ``APNSPushType/alert``.
    public var pushType: APNSPushType { .alert }

    /// Creates an alert notification.
    public init(
        alert: APNSAlert,
        topic: APNSBundleID,
        badge: Int? = nil,
        sound: APNSSound? = nil,
        threadID: String? = nil,
        category: String? = nil,
        mutableContent: Bool = false,
        contentAvailable: Bool = false,
        targetContentID: String? = nil,
        interruptionLevel: APNSInterruptionLevel? = nil,
        relevanceScore: Double? = nil,
        filterCriteria: String? = nil,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none,
        collapseID: APNSCollapseID? = nil,
        apnsID: APNSID? = nil,
        payload: Payload
    ) {
        self.alert = alert
        self.topic = topic
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.mutableContent = mutableContent
        self.contentAvailable = contentAvailable
        self.targetContentID = targetContentID
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.filterCriteria = filterCriteria
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    /// Validates and encodes the notification once.
    /// - Throws: ``APNSValidationError`` naming the field: a negative badge, a relevance score outside
    ///   0…1, a critical sound volume outside 0…1, an alert with nothing to show, a custom key named
    ///   `aps`, or a payload over 4096 bytes.
    public func prepared() throws(APNSValidationError) -> APNSPreparedNotification {
        if let badge, badge < 0 {
            throw APNSValidationError(.badPayload, field: "aps.badge", rule: "must be 0 or more (got \(badge))")
        }
        if let relevanceScore, !(0...1).contains(relevanceScore) {
            throw APNSValidationError(
                .badPayload,
                field: "aps.relevance-score",
                rule: "must be between 0 and 1 for notifications (got \(relevanceScore))"
            )
        }
        try self.sound?.validate()
        if self.alert.isEmpty && self.badge == nil && self.sound == nil {
            throw APNSValidationError(
                .badPayload,
                field: "aps.alert",
                rule: "an alert push needs a title, subtitle, body, localisation key, badge or sound; "
                    + "send content-available without them as push type background"
            )
        }
        let aps = AlertAPS(
            alert: self.alert.isEmpty ? nil : self.alert,
            badge: self.badge,
            sound: self.sound,
            threadID: self.threadID,
            category: self.category,
            contentAvailable: self.contentAvailable ? 1 : nil,
            mutableContent: self.mutableContent ? 1 : nil,
            targetContentID: self.targetContentID,
            interruptionLevel: self.interruptionLevel,
            relevanceScore: self.relevanceScore,
            filterCriteria: self.filterCriteria
        )
        return try APNSPreparedNotification(
            pushType: .alert,
            topic: APNSTopic(bundleID: self.topic, pushType: .alert),
            priority: self.priority,
            expiration: self.expiration,
            collapseID: self.collapseID,
            apnsID: self.apnsID,
            encodedBody: APNSPayloadEncoder.encode(aps: aps, custom: self.payload)
        )
    }
}

extension APNSAlertNotification where Payload == APNSNoCustomKeys {
    /// Creates an alert notification with no custom keys.
    public init(
        alert: APNSAlert,
        topic: APNSBundleID,
        badge: Int? = nil,
        sound: APNSSound? = nil,
        threadID: String? = nil,
        category: String? = nil,
        mutableContent: Bool = false,
        contentAvailable: Bool = false,
        targetContentID: String? = nil,
        interruptionLevel: APNSInterruptionLevel? = nil,
        relevanceScore: Double? = nil,
        filterCriteria: String? = nil,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none,
        collapseID: APNSCollapseID? = nil,
        apnsID: APNSID? = nil
    ) {
        self.init(
            alert: alert, topic: topic, badge: badge, sound: sound, threadID: threadID, category: category,
            mutableContent: mutableContent, contentAvailable: contentAvailable, targetContentID: targetContentID,
            interruptionLevel: interruptionLevel, relevanceScore: relevanceScore, filterCriteria: filterCriteria,
            priority: priority, expiration: expiration, collapseID: collapseID, apnsID: apnsID,
            payload: APNSNoCustomKeys()
        )
    }
}

/// The `aps` dictionary of an alert push, written in sorted key order.
struct AlertAPS: APNSWritable {
    var alert: APNSAlert?
    var badge: Int?
    var sound: APNSSound?
    var threadID: String?
    var category: String?
    var contentAvailable: Int?
    var mutableContent: Int?
    var targetContentID: String?
    var interruptionLevel: APNSInterruptionLevel?
    var relevanceScore: Double?
    var filterCriteria: String?

    func write(to object: inout APNSObjectWriter) throws {
        if let alert = self.alert {
            object.object("alert") { alert.write(to: &$0) }
        }
        object.int("badge", self.badge)
        object.string("category", self.category)
        object.int("content-available", self.contentAvailable)
        object.string("filter-criteria", self.filterCriteria)
        object.string("interruption-level", self.interruptionLevel?.rawValue)
        object.int("mutable-content", self.mutableContent)
        try object.double("relevance-score", self.relevanceScore)
        if let sound = self.sound { try sound.write(key: "sound", to: &object) }
        object.string("target-content-id", self.targetContentID)
        object.string("thread-id", self.threadID)
    }
}
