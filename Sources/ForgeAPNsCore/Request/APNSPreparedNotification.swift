/// A device notification that has been validated and encoded once, ready to be sent to any number
/// of device tokens.
///
/// Encoding is the expensive part of a send; a bulk send prepares once and then calls
/// ``request(to:apnsID:)`` for each token, which only builds the `:path`.
///
/// ```swift
/// let prepared = try APNSAlertNotification(alert: .init(title: "Hi"), topic: bundleID).prepared()
/// for token in tokens {
///     let request = prepared.request(to: token)   // shares headers and body
/// }
/// ```
public struct APNSPreparedNotification: Hashable, Sendable {
    /// The push type, which fixed the topic suffix, the priority rule and the size limit.
    public let pushType: APNSPushType
    /// The `apns-topic`.
    public let topic: APNSTopic
    /// The `apns-priority`, or `nil` to let APNs use its default (10).
    public let priority: APNSPriority?
    /// The `apns-expiration`.
    public let expiration: APNSExpiration
    /// The `apns-collapse-id`, if any.
    public let collapseID: APNSCollapseID?
    /// The `apns-id` sent with every request made from this notification, if any.
    public let apnsID: APNSID?
    /// The encoded JSON body.
    public let body: [UInt8]
    /// Every header but `authorization`, in wire order.
    public let headers: [APNSHeaderField]
    /// The method, path prefix, headers and body every request made from this notification shares,
    /// in one object (``APNSHTTPRequest/shared``).
    let requestParts: APNSHTTPRequest.Shared
    /// The parts of the requests that carry an `apns-id` of their own: ``requestParts`` without the
    /// notification's `apns-id` (the same object when it has none), so that a campaign's pushes,
    /// each with its own, share one object too (and the transport's form made of it).
    let requestPartsForOwnAPNSID: APNSHTTPRequest.Shared

    /// Validates a notification given as headers and an already-encoded body.
    ///
    /// - Parameters:
    ///   - pushType: the `apns-push-type`.
    ///   - topic: the `apns-topic` (build it with ``APNSTopic/init(bundleID:pushType:)``).
    ///   - priority: the `apns-priority`; `nil` sends none, except for `background`, which always gets 5.
    ///   - expiration: the `apns-expiration`.
    ///   - collapseID: the `apns-collapse-id`.
    ///   - apnsID: an `apns-id` for every request made from this notification.
    ///   - body: the JSON payload; it must be a JSON object.
    /// - Throws: ``APNSValidationError`` for a priority the push type does not allow
    ///   (``APNSValidationError/Code/badPriority``), an empty or non-object body
    ///   (``APNSValidationError/Code/badPayload``), or a body over the push type's limit
    ///   (``APNSValidationError/Code/payloadTooLarge``).
    public init(
        pushType: APNSPushType,
        topic: APNSTopic,
        priority: APNSPriority? = nil,
        expiration: APNSExpiration = .none,
        collapseID: APNSCollapseID? = nil,
        apnsID: APNSID? = nil,
        body: [UInt8]
    ) throws(APNSValidationError) {
        try APNSPayloadCheck.checkObject(body, field: "payload")
        try self.init(
            pushType: pushType, topic: topic, priority: priority, expiration: expiration, collapseID: collapseID,
            apnsID: apnsID, encodedBody: body
        )
    }

    /// The same checks but the JSON shape, for bodies that ForgePush's encoder wrote itself.
    init(
        pushType: APNSPushType,
        topic: APNSTopic,
        priority: APNSPriority?,
        expiration: APNSExpiration,
        collapseID: APNSCollapseID?,
        apnsID: APNSID?,
        encodedBody body: [UInt8]
    ) throws(APNSValidationError) {
        let priority = priority ?? pushType.impliedPriority
        try APNSPreparedNotification.check(priority: priority, for: pushType)
        try APNSPayloadCheck.checkSize(body.count, limit: pushType.payloadSizeLimit, what: "push type \(pushType)")

        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.body = body

        var headers: [APNSHeaderField] = []
        headers.reserveCapacity(6)
        headers.append(APNSHeaderField("apns-push-type", pushType.rawValue))
        headers.append(APNSHeaderField("apns-topic", topic.rawValue))
        if let priority { headers.append(APNSHeaderField("apns-priority", priority.headerValue)) }
        if let value = expiration.headerValue { headers.append(APNSHeaderField("apns-expiration", value)) }
        if let collapseID { headers.append(APNSHeaderField("apns-collapse-id", collapseID.rawValue)) }
        if let apnsID { headers.append(APNSHeaderField("apns-id", apnsID.description)) }
        self.headers = headers
        self.requestParts = APNSHTTPRequest.Shared(method: "POST", pathPrefix: Self.devicePathPrefix, headers: headers, body: body)
        // The notification's apns-id is its last header.
        self.requestPartsForOwnAPNSID = apnsID == nil
            ? self.requestParts
            : APNSHTTPRequest.Shared(method: "POST", pathPrefix: Self.devicePathPrefix, headers: Array(headers.dropLast()), body: body)
    }

    /// The request that sends this notification to `token`.
    ///
    /// - Parameter apnsID: an `apns-id` for this request only; it replaces the notification's own.
    /// - Returns: a request sharing this notification's headers and body.
    package func request(to token: DeviceToken, apnsID: APNSID? = nil) -> APNSHTTPRequest {
        guard let apnsID else { return APNSHTTPRequest(shared: self.requestParts, pathSuffix: token.hexString) }
        // The push's own header, after the shared ones (in place of the notification's own, if it
        // has one): the shared parts stay one object for every token.
        return APNSHTTPRequest(shared: self.requestPartsForOwnAPNSID, pathSuffix: token.hexString, pushAPNSID: apnsID)
    }

    /// `:path` of a device push, before the token.
    package static let devicePathPrefix = "/3/device/"

    static func check(priority: APNSPriority?, for pushType: APNSPushType) throws(APNSValidationError) {
        guard let priority, !pushType.allowedPriorities.contains(priority) else { return }
        let allowed = pushType.allowedPriorities.map(\.headerValue).joined(separator: " or ")
        throw APNSValidationError(
            .badPriority,
            field: "apns-priority",
            rule: "must be \(allowed) for push type \(pushType) (got \(priority.headerValue))"
        )
    }
}
