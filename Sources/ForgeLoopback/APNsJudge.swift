public import ForgeAPNsCore
public import struct Foundation.Date
public import struct Foundation.UUID

/// A verdict on one request: Apple's status, reason and headers, or acceptance.
public struct APNsVerdict: Hashable, Sendable {
    /// The status.
    public var status: Int
    /// The reason, for rejections.
    public var reason: APNSErrorReason?
    /// The 410 timestamp.
    public var timestamp: Date?
    /// The `apns-id` answered (echoed, or generated in upper case as APNs does).
    public var apnsID: String
    /// The `apns-unique-id` (sandbox successes only).
    public var apnsUniqueID: String?

    /// Whether the push was accepted.
    public var isAccepted: Bool { self.status == 200 }
}

/// Judges device-push requests as APNs does, row by row of the checklist in apns-provider-api.md
/// §10 (request shape R1-R12, payload P1-P2, token state D1-D4). Pure: no I/O, so every row is tested
/// without a socket. The order of checks follows pushy's mock (Apple's own order is unverified), so
/// tests give each request one fault.
public struct APNsJudge: Sendable {
    /// The configuration.
    public var configuration: LocalAPNsConfiguration
    /// Registered tokens by lower-case hex.
    public var tokens: [String: LocalAPNsTokenRecord]

    /// Creates a judge.
    public init(configuration: LocalAPNsConfiguration = LocalAPNsConfiguration(), tokens: [String: LocalAPNsTokenRecord] = [:]) {
        self.configuration = configuration
        self.tokens = tokens
    }

    /// A request as the judge sees it: method, path, headers in order (duplicates kept), body.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        /// Creates a request.
        public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8]) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }

        func value(_ name: String) -> String? { self.headers.first(where: { $0.name == name })?.value }
    }

    /// Judges `request`; with an `authenticator`, token authentication (A1-A8) is checked once the
    /// topic is known, for the connection the request came on.
    public func judge(_ request: Request, connectionID: UInt64 = 0, authenticator: TokenAuthenticator? = nil) -> APNsVerdict {
        let echoedID = request.value("apns-id")
        func reject(_ status: Int, _ reason: APNSErrorReason, timestamp: Date? = nil) -> APNsVerdict {
            let id = echoedID.flatMap { try? APNSID($0) }.map { _ in echoedID! } ?? UUID().uuidString
            return APNsVerdict(status: status, reason: reason, timestamp: timestamp, apnsID: id, apnsUniqueID: nil)
        }
        // R2
        guard request.method == "POST" else { return reject(405, .methodNotAllowed) }
        // R10, R9
        let prefix = "/3/device/"
        guard request.path.hasPrefix(prefix) else { return reject(404, .badPath) }
        let tokenText = String(request.path.dropFirst(prefix.count))
        guard !tokenText.isEmpty else { return reject(400, .missingDeviceToken) }
        // R1
        if let id = echoedID, (try? APNSID(id)) == nil { return reject(400, .badMessageID) }
        // R3
        var seen = Set<String>()
        for header in request.headers where !seen.insert(header.name).inserted { return reject(400, .duplicateHeaders) }
        // R11
        guard let token = try? DeviceToken(tokenText, allowedLengths: self.configuration.tokenLengths),
            token.hexString == tokenText
        else { return reject(400, .badDeviceToken) }
        // R4
        guard let topic = request.value("apns-topic"), !topic.isEmpty else { return reject(400, .missingTopic) }
        // A1-A8
        if let authenticator {
            let pushTypeForTopic = request.value("apns-push-type").flatMap(APNSPushType.init(rawValue:)) ?? .alert
            let bundle = pushTypeForTopic == .mdm ? topic : String(topic.dropLast(
                topic.hasSuffix(pushTypeForTopic.topicSuffix ?? "") ? (pushTypeForTopic.topicSuffix ?? "").count : 0
            ))
            if let reason = authenticator.check(authorization: request.value("authorization"), bundleID: bundle, connectionID: connectionID) {
                return reject(reason.status ?? 403, reason)
            }
        }
        // R5
        if let collapseID = request.value("apns-collapse-id"), collapseID.utf8.count > APNSCollapseID.maximumByteCount {
            return reject(400, .badCollapseID)
        }
        // R6
        var priority: APNSPriority?
        if let text = request.value("apns-priority") {
            guard let parsed = try? APNSPriority(headerValue: text) else { return reject(400, .badPriority) }
            priority = parsed
        }
        // R7 (absent is accepted outside watchOS: Apple calls the header recommended)
        var pushType = APNSPushType.alert
        if let text = request.value("apns-push-type") {
            guard let parsed = APNSPushType(rawValue: text) else { return reject(400, .invalidPushType) }
            pushType = parsed
        }
        // R8
        if let text = request.value("apns-expiration"), (try? APNSExpiration(headerValue: text)) == nil {
            return reject(400, .badExpirationDate)
        }
        // R12
        if pushType == .background, priority == .immediately, let reason = self.configuration.backgroundPriorityTenReason {
            return reject(400, reason)
        }
        if let reason = self.configuration.topicSuffixMismatchReason, (try? APNSTopic(topic, pushType: pushType))?.rawValue != topic {
            return reject(400, reason)
        }
        // P1, P2
        guard !request.body.isEmpty else { return reject(400, .payloadEmpty) }
        guard request.body.count <= pushType.payloadSizeLimit else { return reject(413, .payloadTooLarge) }
        // D1-D4
        if let record = self.tokens[token.hexString] {
            let bundle = pushType == .mdm ? topic : String(topic.dropLast(pushType.topicSuffix?.count ?? 0))
            guard record.bundleID == bundle else { return reject(400, .deviceTokenNotForTopic) }
            guard record.environment == self.configuration.environment else { return reject(400, .badDeviceToken) }
            switch record.state {
            case .active: break
            case .unregistered(let date): return reject(410, .unregistered, timestamp: date)
            case .expired(let date): return reject(410, .expiredToken, timestamp: date)
            }
        } else if !self.configuration.acceptsUnknownTokens {
            return reject(400, .badDeviceToken)
        }
        let id = echoedID ?? UUID().uuidString
        let unique = self.configuration.environment == .sandbox ? UUID().uuidString.lowercased() : nil
        return APNsVerdict(status: 200, reason: nil, timestamp: nil, apnsID: id, apnsUniqueID: unique)
    }
}
