/// A background update (`apns-push-type: background`): `{"aps":{"content-available":1}}` plus custom
/// keys, and nothing that would make it visible.
///
/// - Important: sent with `apns-priority: 5` always (10 is an error for background pushes). The
///   device keeps only the newest pending background push and throttles them: do not send more than
///   two or three an hour.
public struct APNSBackgroundNotification<Payload: Encodable & Sendable>: APNSNotification {
    /// Custom keys, encoded beside `aps`.
    public var payload: Payload
    /// The app's bundle id; the topic is derived from it.
    public var topic: APNSBundleID
    /// `apns-expiration`.
    public var expiration: APNSExpiration
    /// `apns-collapse-id`.
    public var collapseID: APNSCollapseID?
    /// `apns-id`.
    public var apnsID: APNSID?

    /// The push type: always ``APNSPushType/background``.
    public var pushType: APNSPushType { .background }

    /// Creates a background notification.
    public init(
        topic: APNSBundleID,
        expiration: APNSExpiration = .none,
        collapseID: APNSCollapseID? = nil,
        apnsID: APNSID? = nil,
        payload: Payload
    ) {
        self.topic = topic
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }

    /// Validates and encodes the notification once, with priority 5.
    /// - Throws: ``APNSValidationError`` for a custom key named `aps` or a payload over 4096 bytes.
    public func prepared() throws(APNSValidationError) -> APNSPreparedNotification {
        try APNSPreparedNotification(
            pushType: .background,
            topic: APNSTopic(bundleID: self.topic, pushType: .background),
            priority: .consideringDevicePower,
            expiration: self.expiration,
            collapseID: self.collapseID,
            apnsID: self.apnsID,
            encodedBody: APNSPayloadEncoder.encode(aps: BackgroundAPS(), custom: self.payload)
        )
    }
}

extension APNSBackgroundNotification where Payload == APNSNoCustomKeys {
    /// Creates a background notification with no custom keys.
    public init(
        topic: APNSBundleID,
        expiration: APNSExpiration = .none,
        collapseID: APNSCollapseID? = nil,
        apnsID: APNSID? = nil
    ) {
        self.init(topic: topic, expiration: expiration, collapseID: collapseID, apnsID: apnsID, payload: APNSNoCustomKeys())
    }
}

struct BackgroundAPS: APNSWritable {
    func write(to object: inout APNSObjectWriter) { object.int("content-available", 1) }
}
