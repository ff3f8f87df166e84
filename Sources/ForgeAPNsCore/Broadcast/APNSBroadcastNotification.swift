public import struct Foundation.Date

/// A Live Activity update or end sent to every activity subscribed to a broadcast channel
/// (`POST /4/broadcasts/apps/<bundle id>`, iOS 18+).
///
/// - Important: broadcasts update or end, never start. The path carries the bare bundle id (no
///   push-type suffix) and there is no `apns-topic`. `apns-priority` and `apns-expiration` are
///   required; the expiration must be `0` on a "No Message Stored" channel. Payloads may be 5120 bytes.
public struct APNSBroadcastNotification<ContentState: Encodable & Sendable>: Sendable {
    /// The channel, as created with the channel management API.
    public var channelID: APNSChannelID
    /// The app's bundle id, used bare in the path.
    public var bundleID: APNSBundleID
    /// `aps.event`: update or end.
    public var event: APNSLiveActivityEvent
    /// `aps.content-state`.
    public var contentState: ContentState
    /// `aps.timestamp`.
    public var timestamp: Date
    /// `aps.stale-date`.
    public var staleDate: Date?
    /// `aps.relevance-score`.
    public var relevanceScore: Double?
    /// `aps.alert`.
    public var alert: APNSLiveActivityAlert?
    /// `apns-priority` (required): 5 or 10.
    public var priority: APNSPriority
    /// `apns-expiration` (required): ``APNSExpiration/immediately`` by default, which every channel accepts.
    public var expiration: APNSExpiration
    /// `apns-request-id`: echoed in the response.
    public var requestID: APNSID?

    /// Creates a broadcast.
    public init(
        channelID: APNSChannelID,
        bundleID: APNSBundleID,
        event: APNSLiveActivityEvent,
        contentState: ContentState,
        timestamp: Date,
        staleDate: Date? = nil,
        relevanceScore: Double? = nil,
        alert: APNSLiveActivityAlert? = nil,
        priority: APNSPriority = .immediately,
        expiration: APNSExpiration = .immediately,
        requestID: APNSID? = nil
    ) {
        self.channelID = channelID
        self.bundleID = bundleID
        self.event = event
        self.contentState = contentState
        self.timestamp = timestamp
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.alert = alert
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
    }

    /// Validates and encodes the broadcast.
    /// - Throws: ``APNSValidationError`` for priority 1, no expiration, or a payload over 5120 bytes.
    public func prepared() throws(APNSValidationError) -> APNSPreparedBroadcast {
        let aps = try LiveActivityAPS<ContentState, APNSNoCustomKeys>(
            event: self.event.rawValue, timestamp: self.timestamp, contentState: self.contentState,
            staleDate: self.staleDate, dismissalDate: self.event.dismissalDate, relevanceScore: self.relevanceScore,
            alert: self.alert
        )
        return try APNSPreparedBroadcast(
            bundleID: self.bundleID,
            channelID: self.channelID,
            priority: self.priority,
            expiration: self.expiration,
            requestID: self.requestID,
            body: APNSPayloadEncoder.encode(aps: aps, custom: APNSNoCustomKeys())
        )
    }
}

/// A validated, encoded broadcast, ready to send.
public struct APNSPreparedBroadcast: Hashable, Sendable {
    /// The bundle id in the path.
    public let bundleID: APNSBundleID
    /// The `apns-channel-id`.
    public let channelID: APNSChannelID
    /// The `apns-priority`.
    public let priority: APNSPriority
    /// The `apns-expiration`.
    public let expiration: APNSExpiration
    /// The `apns-request-id`, if any.
    public let requestID: APNSID?
    /// The encoded JSON body.
    public let body: [UInt8]

    /// Validates a broadcast given as headers and an already-encoded body.
    /// - Throws: ``APNSValidationError`` for priority 1, no expiration, a body that is not a JSON
    ///   object, or one over 5120 bytes.
    public init(
        bundleID: APNSBundleID,
        channelID: APNSChannelID,
        priority: APNSPriority,
        expiration: APNSExpiration,
        requestID: APNSID? = nil,
        body: [UInt8]
    ) throws(APNSValidationError) {
        try APNSPreparedNotification.check(priority: priority, for: .liveactivity)
        guard expiration.headerValue != nil else {
            throw APNSValidationError(
                .badExpiration,
                field: "apns-expiration",
                rule: "is required for broadcasts; use 0 on a No-Message-Stored channel"
            )
        }
        try APNSPayloadCheck.checkObject(body, field: "payload")
        try APNSPayloadCheck.checkSize(body.count, limit: APNSPayloadLimit.broadcast, what: "broadcasts")
        self.bundleID = bundleID
        self.channelID = channelID
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
        self.body = body
    }

    /// The request for this broadcast.
    package func request() -> APNSHTTPRequest {
        var headers = [
            APNSHeaderField("apns-channel-id", self.channelID.rawValue),
            APNSHeaderField("apns-push-type", APNSPushType.liveactivity.rawValue),
            APNSHeaderField("apns-priority", self.priority.headerValue),
            APNSHeaderField("apns-expiration", self.expiration.headerValue ?? "0"),
        ]
        if let requestID { headers.append(APNSHeaderField("apns-request-id", requestID.description)) }
        return APNSHTTPRequest(
            method: "POST",
            path: "/4/broadcasts/apps/" + self.bundleID.rawValue,
            headers: headers,
            body: self.body
        )
    }
}
