/// A notification whose payload is given whole, as JSON bytes or as an `Encodable`: VoIP,
/// complication, File Provider, location, Push to Talk, widgets, controls and MDM pushes, or any push
/// type when the payload was written by hand (`apnsctl send --payload`).
///
/// ```swift
/// let call = try APNSPayloadNotification.voip(["caller": "Ada"], bundleID: bundleID)
/// let reload = APNSPayloadNotification.widgets(bundleID: bundleID)
/// ```
public struct APNSPayloadNotification: APNSNotification {
    /// The `apns-push-type`.
    public var pushType: APNSPushType
    /// The `apns-topic`.
    public var topic: APNSTopic
    /// The JSON body.
    public var body: [UInt8]
    /// `apns-priority`; `nil` sends none (5 for background).
    public var priority: APNSPriority?
    /// `apns-expiration`.
    public var expiration: APNSExpiration
    /// `apns-collapse-id`.
    public var collapseID: APNSCollapseID?
    /// `apns-id`.
    public var apnsID: APNSID?

    /// A notification with a ready-made JSON body.
    /// - Parameter body: the payload's bytes; checked to be one JSON object when prepared.
    public init(
        pushType: APNSPushType,
        topic: APNSTopic,
        json body: [UInt8],
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none,
        collapseID: APNSCollapseID? = nil,
        apnsID: APNSID? = nil
    ) {
        self.pushType = pushType
        self.topic = topic
        self.body = body
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
    }

    /// A notification whose payload is `payload` encoded as JSON (it must encode as an object).
    /// - Throws: ``APNSValidationError/Code/badPayload`` when it does not encode as a JSON object.
    public init(
        pushType: APNSPushType,
        topic: APNSTopic,
        payload: some Encodable,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none,
        collapseID: APNSCollapseID? = nil,
        apnsID: APNSID? = nil
    ) throws(APNSValidationError) {
        self.init(
            pushType: pushType, topic: topic, json: try APNSPayloadEncoder.encode(custom: payload),
            priority: priority, expiration: expiration, collapseID: collapseID, apnsID: apnsID
        )
    }

    /// Validates the headers and the body.
    /// - Throws: ``APNSValidationError`` for a priority the push type does not allow, a body that is
    ///   not one JSON object, or one over the push type's limit.
    public func prepared() throws(APNSValidationError) -> APNSPreparedNotification {
        try APNSPreparedNotification(
            pushType: self.pushType,
            topic: self.topic,
            priority: self.priority,
            expiration: self.expiration,
            collapseID: self.collapseID,
            apnsID: self.apnsID,
            body: self.body
        )
    }
}

extension APNSPayloadNotification {
    /// A VoIP push (PushKit) to `<bundle>.voip`; payloads up to 5120 bytes.
    public static func voip(
        _ payload: some Encodable,
        bundleID: APNSBundleID,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none,
        apnsID: APNSID? = nil
    ) throws(APNSValidationError) -> APNSPayloadNotification {
        try .bundled(.voip, payload, bundleID: bundleID, priority: priority, expiration: expiration, apnsID: apnsID)
    }

    /// A watchOS complication update to `<bundle>.complication`.
    public static func complication(
        _ payload: some Encodable,
        bundleID: APNSBundleID,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none
    ) throws(APNSValidationError) -> APNSPayloadNotification {
        try .bundled(.complication, payload, bundleID: bundleID, priority: priority, expiration: expiration)
    }

    /// A File Provider change signal to `<bundle>.pushkit.fileprovider`.
    public static func fileProvider(
        _ payload: some Encodable,
        bundleID: APNSBundleID,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none
    ) throws(APNSValidationError) -> APNSPayloadNotification {
        try .bundled(.fileprovider, payload, bundleID: bundleID, priority: priority, expiration: expiration)
    }

    /// A location query to `<bundle>.location-query` (token authentication only).
    public static func location(
        _ payload: some Encodable,
        bundleID: APNSBundleID,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none
    ) throws(APNSValidationError) -> APNSPayloadNotification {
        try .bundled(.location, payload, bundleID: bundleID, priority: priority, expiration: expiration)
    }

    /// A Push to Talk update to `<bundle>.voip-ptt`.
    public static func pushToTalk(
        _ payload: some Encodable,
        bundleID: APNSBundleID,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none
    ) throws(APNSValidationError) -> APNSPayloadNotification {
        try .bundled(.pushtotalk, payload, bundleID: bundleID, priority: priority, expiration: expiration)
    }

    /// A WidgetKit reload to `<bundle>.push-type.widgets`: `{"aps":{"content-changed":true}}`.
    public static func widgets(
        bundleID: APNSBundleID,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none
    ) -> APNSPayloadNotification {
        .contentChanged(.widgets, bundleID: bundleID, priority: priority, expiration: expiration)
    }

    /// A control reload to `<bundle>.push-type.controls`: `{"aps":{"content-changed":true}}`.
    public static func controls(
        bundleID: APNSBundleID,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none
    ) -> APNSPayloadNotification {
        .contentChanged(.controls, bundleID: bundleID, priority: priority, expiration: expiration)
    }

    /// An MDM wake-up: `{"mdm":"<PushMagic>"}` to the topic of the MDM push certificate.
    /// - Throws: ``APNSValidationError/Code/badTopic`` when `topic` is malformed.
    public static func mdm(
        pushMagic: String,
        topic: String,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none
    ) throws(APNSValidationError) -> APNSPayloadNotification {
        try APNSPayloadNotification(
            pushType: .mdm, topic: APNSTopic(topic, pushType: .mdm), payload: ["mdm": pushMagic],
            priority: priority, expiration: expiration
        )
    }

    /// A push to the topic `pushType` derives from `bundleID`, with `payload` encoded as the whole body.
    private static func bundled(
        _ pushType: APNSPushType,
        _ payload: some Encodable,
        bundleID: APNSBundleID,
        priority: APNSPriority?,
        expiration: APNSExpiration,
        apnsID: APNSID? = nil
    ) throws(APNSValidationError) -> APNSPayloadNotification {
        try APNSPayloadNotification(
            pushType: pushType, topic: APNSTopic(bundleID: bundleID, pushType: pushType), payload: payload,
            priority: priority, expiration: expiration, apnsID: apnsID
        )
    }

    /// `{"aps":{"content-changed":true}}`, the body of widget and control reloads.
    private static func contentChanged(
        _ pushType: APNSPushType,
        bundleID: APNSBundleID,
        priority: APNSPriority?,
        expiration: APNSExpiration
    ) -> APNSPayloadNotification {
        APNSPayloadNotification(
            pushType: pushType, topic: APNSTopic(bundleID: bundleID, pushType: pushType),
            json: Array(#"{"aps":{"content-changed":true}}"#.utf8), priority: priority, expiration: expiration
        )
    }
}
