package import ForgeAPNsCore
internal import ForgeCrypto
package import struct Foundation.Date
package import struct Foundation.Data
package import class Foundation.JSONSerialization
#if canImport(Glibc)
internal import Glibc
#endif

/// The judge's decision on one request: Apple's status, reason and headers, or acceptance.
package struct APNSDecision: Hashable, Sendable {
    /// What a request addressed.
    package enum Target: Hashable, Sendable {
        /// `/3/device/<token>` (lower-case hex).
        case device(token: String)
        /// `/4/broadcasts/apps/<bundle>` with its `apns-channel-id`.
        case broadcast(bundleID: String, channelID: String)
        /// The channel management API (`/1/apps/<bundle>/...`).
        case channels(bundleID: String)
        /// Nothing known (bad path).
        case unknown

        /// Whether an accepted request of this target is a push (device or broadcast).
        package var isPush: Bool {
            switch self {
            case .device, .broadcast: return true
            case .channels, .unknown: return false
            }
        }
    }

    /// The status.
    package var status: Int
    /// The reason, for rejections.
    package var reason: APNSErrorReason?
    /// The 410 timestamp.
    package var timestamp: Date?
    /// The request id answered (echoed, or generated in upper case as APNs does).
    package var apnsID: String
    /// The header carrying ``apnsID``: `apns-id` on device pushes, `apns-request-id` on broadcasts and channels.
    package var idHeader: String
    /// The `apns-unique-id` (sandbox device pushes and every broadcast success).
    package var apnsUniqueID: String?
    /// Other headers of a success (`apns-channel-id` on channel creation).
    package var headers: [Header]
    /// The body of a success (channel read and list), else empty.
    package var body: [UInt8]
    /// What the request addressed.
    package var target: Target
    /// The push type header's value (device pushes: `alert` when absent).
    package var pushType: APNSPushType?
    /// A lint note on an accepted payload that a device can read: no `aps` key (P3).
    package var lint: String?
    /// A warning on an accepted payload that a device cannot read, as `body is not valid JSON: …`,
    /// `body is not UTF-8: …` or `body is not a JSON object: …`. P3: APNs is not known to refuse
    /// such a body, so it is accepted; a device drops it.
    package var warning: String? = nil

    /// A response header.
    package struct Header: Hashable, Sendable {
        package var name: String
        package var value: String
    }

    /// Whether the request was accepted (200, or 201 / 204 on the channel API).
    package var isAccepted: Bool { (200..<300).contains(self.status) }
}

/// Judges requests as APNs does, rule by rule of docs/local-server-rules.md, whose codes label the
/// checks below: device pushes (R1-R12, A1-A8, certificates C7, P1-P2, T1, D1-D4), broadcasts
/// (B1-B7) and the channel API (M1-M4). No I/O, so every row is tested without a socket. The order of checks follows pushy's mock
/// (Apple's own order is unverified), so tests give each request one fault.
///
/// The judge keeps state that requests change (channels, per-token rate windows): the server calls it
/// under a lock.
package struct APNSJudge: Sendable {
    /// The configuration.
    package var configuration: LocalAPNSConfiguration
    /// Registered tokens by lower-case hex.
    package var tokens: [String: LocalAPNSTokenRecord]
    /// Known apps by bundle id (apps not listed have broadcast enabled).
    package var apps: [String: LocalAPNSApp]
    /// Broadcast channels by id.
    package var channels: [String: LocalAPNSChannel]
    /// Accepted client certificates by SHA-256 fingerprint.
    package var certificates: [String: LocalAPNSCertificate]
    /// Token authentication; `nil` accepts requests without a provider token.
    package var authenticator: TokenAuthenticator?
    private var rateWindows: [String: (start: Date, count: Int)] = [:]
    /// Parsed client certificates by DER bytes: the registry is consulted on every request, so a
    /// registration or revocation takes effect at once.
    private var certificateCache: [[UInt8]: (fingerprint: String, notAfter: Date)?] = [:]
    /// The body last checked by ``payloadFindings(_:)`` and what it found: a bulk send's pushes
    /// share their payload, so it is read once, not per push.
    private var lastPayload: (body: [UInt8], findings: (warning: String?, lint: String?))?

    /// Creates a judge.
    package init(
        configuration: LocalAPNSConfiguration = LocalAPNSConfiguration(),
        tokens: [String: LocalAPNSTokenRecord] = [:],
        apps: [LocalAPNSApp] = [],
        channels: [LocalAPNSChannel] = [],
        certificates: [LocalAPNSCertificate] = [],
        authenticator: TokenAuthenticator? = nil
    ) {
        self.configuration = configuration
        self.tokens = tokens
        self.apps = Dictionary(apps.map { ($0.bundleID, $0) }, uniquingKeysWith: { _, last in last })
        self.channels = Dictionary(channels.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
        self.certificates = Dictionary(certificates.map { ($0.sha256Fingerprint, $0) }, uniquingKeysWith: { _, last in last })
        self.authenticator = authenticator
    }

    /// A request as the judge sees it: method, path, headers in order (duplicates kept), body, and
    /// the client certificate of its connection.
    package struct Request: Sendable {
        package var method: String
        package var path: String
        package var headers: [(name: String, value: String)]
        package var body: [UInt8]
        /// The DER client certificate the connection presented, if any.
        package var clientCertificate: [UInt8]?
        /// Whether it verified against the server's client CA.
        package var clientCertificateVerified: Bool

        /// Creates a request.
        package init(
            method: String, path: String, headers: [(name: String, value: String)], body: [UInt8],
            clientCertificate: [UInt8]? = nil, clientCertificateVerified: Bool = false
        ) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
            self.clientCertificate = clientCertificate
            self.clientCertificateVerified = clientCertificateVerified
        }

        func value(_ name: String) -> String? {
            // By index: a `for header in` loop copies each pair, retaining and releasing every value
            // it passes (a judged push looks up about eight names).
            for index in self.headers.indices where self.headers[index].name == name { return self.headers[index].value }
            return nil
        }
    }

    static let devicePrefix = "/3/device/"
    static let broadcastPrefix = "/4/broadcasts/apps/"
    static let channelsPrefix = "/1/apps/"

    /// Judges `request`, which came on `connectionID`, at `now`.
    package mutating func judge(_ request: Request, connectionID: UInt64 = 0, now: Date = Date()) -> APNSDecision {
        if request.path.hasPrefix(Self.broadcastPrefix) {
            return self.judgeBroadcast(request, connectionID: connectionID, now: now)
        }
        if request.path.hasPrefix(Self.channelsPrefix) {
            return self.judgeChannelRequest(request, connectionID: connectionID, now: now)
        }
        return self.judgeDevicePush(request, connectionID: connectionID, now: now)
    }

    // MARK: Device pushes

    private mutating func judgeDevicePush(_ request: Request, connectionID: UInt64, now: Date) -> APNSDecision {
        let echoedID = request.value("apns-id")
        var target = APNSDecision.Target.unknown
        var pushType: APNSPushType?
        func reject(_ status: Int, _ reason: APNSErrorReason, timestamp: Date? = nil) -> APNSDecision {
            let id = echoedID.flatMap { (try? APNSID($0)) != nil ? $0 : nil } ?? GeneratedID.upper()
            return APNSDecision(
                status: status, reason: reason, timestamp: timestamp, apnsID: id, idHeader: "apns-id", apnsUniqueID: nil,
                headers: [], body: [], target: target, pushType: pushType, lint: nil
            )
        }
        // R2
        guard request.method == "POST" else { return reject(405, .methodNotAllowed) }
        // R10, R9
        guard request.path.hasPrefix(Self.devicePrefix) else { return reject(404, .badPath) }
        // The prefix is ASCII: bytes, not characters, to drop (no grapheme breaking per push).
        let tokenText = String(Substring(request.path.utf8.dropFirst(Self.devicePrefix.utf8.count)))
        guard !tokenText.isEmpty else { return reject(400, .missingDeviceToken) }
        // R1
        if let id = echoedID, (try? APNSID(id)) == nil { return reject(400, .badMessageID) }
        // R3
        if let reason = Self.duplicateHeaders(request) { return reject(400, reason) }
        // R11
        guard let token = try? DeviceToken(tokenText, allowedLengths: self.configuration.tokenLengths),
            token.hexString == tokenText
        else { return reject(400, .badDeviceToken) }
        target = .device(token: token.hexString)
        // R7 is checked below in Apple's order; the topic's bundle needs the type now.
        let typeHeader = request.value("apns-push-type")
        let namedType = typeHeader.flatMap(APNSPushType.init(rawValue:))
        let claimedType = namedType ?? .alert
        pushType = typeHeader == nil ? .alert : namedType
        // R4, C7, A1-A8
        let certificate: LocalAPNSCertificate?
        switch self.certificate(of: request, now: now) {
        case .rejected(let reason): return reject(403, reason)
        case .accepted(let record): certificate = record
        case .none: certificate = nil
        }
        let topic: String
        if let value = request.value("apns-topic"), !value.isEmpty {
            topic = value
        } else if let certificate {
            topic = certificate.bundleID  // a single-topic certificate may omit it (R4)
        } else {
            return reject(400, .missingTopic)
        }
        let bundle = Self.bundleID(of: topic, pushType: claimedType)
        if let certificate {
            guard certificate.covers(topic: topic) else { return reject(400, self.configuration.certificateTopicReason) }
        } else if let authenticator = self.authenticator,
            let reason = authenticator.check(authorization: request.value("authorization"), bundleID: bundle, connectionID: connectionID)
        {
            return reject(reason.status ?? 403, reason)
        }
        if let served = self.configuration.servedBundleIDs, !served.contains(bundle) {
            return reject(self.configuration.unservedTopicReason.status ?? 400, self.configuration.unservedTopicReason)
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
        if typeHeader != nil, namedType == nil { return reject(400, .invalidPushType) }
        // R8
        if let text = request.value("apns-expiration"), (try? APNSExpiration(headerValue: text)) == nil {
            return reject(400, .badExpirationDate)
        }
        // R12
        if claimedType == .background, priority == .immediately, let reason = self.configuration.backgroundPriorityTenReason {
            return reject(400, reason)
        }
        if let reason = self.configuration.topicSuffixMismatchReason, !Self.topic(topic, fits: claimedType) {
            return reject(400, reason)
        }
        // P1, P2
        guard !request.body.isEmpty else { return reject(400, .payloadEmpty) }
        guard request.body.count <= claimedType.payloadSizeLimit else { return reject(413, .payloadTooLarge) }
        // D1-D4
        if let record = self.tokens[token.hexString] {
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
        // T1
        if let limit = self.configuration.perTokenRateLimit, !self.admit(token.hexString, limit: limit, now: now) {
            return reject(429, .tooManyRequests)
        }
        let unique = self.configuration.environment == .sandbox ? GeneratedID.lower() : nil
        let findings: (warning: String?, lint: String?)
        if let last = self.lastPayload, last.body == request.body {
            findings = last.findings
        } else {
            findings = Self.payloadFindings(request.body)
            self.lastPayload = (request.body, findings)
        }
        return APNSDecision(
            status: 200, reason: nil, timestamp: nil, apnsID: echoedID ?? GeneratedID.upper(), idHeader: "apns-id",
            apnsUniqueID: unique, headers: [], body: [], target: target, pushType: claimedType,
            lint: findings.lint, warning: findings.warning
        )
    }

    /// P3 on an accepted payload: a warning when a device cannot read it (JSONSerialization's rules:
    /// UTF-8, valid JSON, one object, numbers that fit a double), else a lint note when it has no `aps`.
    static func payloadFindings(_ body: [UInt8]) -> (warning: String?, lint: String?) {
        if let problem = APNSPayloadLint.jsonProblem(in: body) { return ("body is " + problem, nil) }
        return (nil, APNSPayloadLint.apsProblem(in: body))
    }

    /// The bundle id a topic names: without the push type's suffix (MDM topics are not bundle ids).
    static func bundleID(of topic: String, pushType: APNSPushType) -> String {
        guard let suffix = pushType.topicSuffix, !suffix.isEmpty, Self.endsWith(topic, suffix) else { return topic }
        return String(Substring(topic.utf8.dropLast(suffix.utf8.count)))
    }

    /// Whether `topic` carries exactly the suffix `pushType` needs (none for alert and background).
    static func topic(_ topic: String, fits pushType: APNSPushType) -> Bool {
        guard let own = pushType.topicSuffix else { return true }  // mdm
        if !own.isEmpty { return Self.endsWith(topic, own) && topic.utf8.count > own.utf8.count }
        return !Self.hasPushTypeSuffix(topic)
    }

    /// Whether `text` ends with the bytes of `suffix`, as APNs compares a topic: byte for byte, not
    /// by characters (and without the cost of grapheme breaking on every push).
    static func endsWith(_ text: String, _ suffix: String) -> Bool {
        let count = suffix.utf8.count
        guard text.utf8.count >= count else { return false }
        guard count > 0 else { return true }
        // Native strings (every header value, every literal suffix) hold contiguous UTF-8: one memcmp.
        let compared = text.utf8.withContiguousStorageIfAvailable { text in
            suffix.utf8.withContiguousStorageIfAvailable { suffix in
                memcmp(text.baseAddress! + (text.count - count), suffix.baseAddress!, count) == 0
            }
        }
        if let compared = compared ?? nil { return compared }
        return text.utf8.suffix(count).elementsEqual(suffix.utf8)
    }

    static func duplicateHeaders(_ request: Request) -> APNSErrorReason? {
        // A handful of headers: pairwise comparison beats hashing each name.
        // Indices, not elements: no copy of each pair (and of its value) per comparison.
        let headers = request.headers
        for index in headers.indices.dropFirst() {
            for earlier in headers.startIndex..<index where headers[earlier].name == headers[index].name { return .duplicateHeaders }
        }
        return nil
    }

    /// Counts a push to `token` in its rate window; `false` when the window is full.
    private mutating func admit(_ token: String, limit: LocalAPNSConfiguration.RateLimit, now: Date) -> Bool {
        if let window = self.rateWindows[token], now.timeIntervalSince(window.start) < limit.seconds {
            guard window.count < limit.pushes else { return false }
            self.rateWindows[token] = (window.start, window.count + 1)
        } else {
            if self.rateWindows.count > 100_000 { self.rateWindows.removeAll(keepingCapacity: true) }
            self.rateWindows[token] = (now, 1)
        }
        return true
    }

    // MARK: Certificates (C7)

    private enum CertificateOutcome {
        case none
        case accepted(LocalAPNSCertificate)
        case rejected(APNSErrorReason)
    }

    /// The certificate of the request's connection, judged: unverified, unknown, revoked or out of
    /// date is `BadCertificate`; registered for the other environment is `BadCertificateEnvironment`.
    private mutating func certificate(of request: Request, now: Date) -> CertificateOutcome {
        guard let der = request.clientCertificate else { return .none }
        guard request.clientCertificateVerified else { return .rejected(.badCertificate) }
        let identity: (fingerprint: String, notAfter: Date)?
        if let cached = self.certificateCache[der] {
            identity = cached
        } else {
            identity = (try? APNSCertificateInfo(der: der)).map { ($0.sha256Fingerprint, $0.notAfter) }
            if self.certificateCache.count > 1024 { self.certificateCache.removeAll() }
            self.certificateCache[der] = .some(identity)
        }
        guard let identity, now <= identity.notAfter, let record = self.certificates[identity.fingerprint], !record.revoked else {
            return .rejected(.badCertificate)
        }
        if let environment = record.environment, environment != self.configuration.environment {
            return .rejected(.badCertificateEnvironment)
        }
        return .accepted(record)
    }

    /// Authenticates a broadcast or channel request for `bundle`; B5's `TopicMismatch` when the
    /// credentials do not cover it.
    private mutating func authenticateApp(_ request: Request, bundle: String, connectionID: UInt64, now: Date) -> APNSErrorReason? {
        switch self.certificate(of: request, now: now) {
        case .rejected(let reason): return reason
        case .accepted(let certificate): return certificate.bundleID == bundle ? nil : .topicMismatch
        case .none:
            return self.authenticator?.check(
                authorization: request.value("authorization"), bundleID: bundle, connectionID: connectionID,
                topicNotCoveredReason: .topicMismatch
            )
        }
    }

    // MARK: Broadcasts (B1-B7)

    private mutating func judgeBroadcast(_ request: Request, connectionID: UInt64, now: Date) -> APNSDecision {
        let bundle = String(request.path.dropFirst(Self.broadcastPrefix.count))
        let echoedID = request.value("apns-request-id")
        let channelHeader = request.value("apns-channel-id")
        var target = APNSDecision.Target.unknown
        func reject(_ status: Int, _ reason: APNSErrorReason) -> APNSDecision {
            let id = echoedID.flatMap { (try? APNSID($0)) != nil ? $0 : nil } ?? GeneratedID.upper()
            return APNSDecision(
                status: status, reason: reason, timestamp: nil, apnsID: id, idHeader: "apns-request-id", apnsUniqueID: nil,
                headers: [], body: [], target: target, pushType: .liveactivity, lint: nil
            )
        }
        guard request.method == "POST" else { return reject(405, .methodNotAllowed) }
        guard !bundle.isEmpty, !bundle.contains("/") else { return reject(404, .badPath) }
        target = .broadcast(bundleID: bundle, channelID: channelHeader ?? "")
        if let reason = self.appChecks(request, requestID: echoedID, bundle: bundle, connectionID: connectionID, now: now) {
            return reject(reason.status ?? 400, reason)
        }
        // B3 (case-insensitive: Apple's page writes both "Liveactivity" and "LiveActivity")
        guard let type = request.value("apns-push-type") else { return reject(400, .missingPushType) }
        guard type.lowercased() == "liveactivity" else { return reject(400, .invalidPushType) }
        // B2
        guard let channelID = channelHeader else { return reject(400, .missingChannelID) }
        guard (try? APNSChannelID(channelID)) != nil else { return reject(400, .badChannelID) }
        guard let channel = self.channels[channelID], channel.bundleID == bundle else { return reject(400, .channelNotRegistered) }
        // B4 (the headers are "required" in Apple's table; an absent one is accepted: unverified)
        if let text = request.value("apns-priority"), (try? APNSPriority(headerValue: text)) == nil { return reject(400, .badPriority) }
        if let text = request.value("apns-expiration") {
            guard let expiration = try? APNSExpiration(headerValue: text) else { return reject(400, .badExpirationDate) }
            if channel.messageStoragePolicy == 0, expiration != .immediately { return reject(400, .badExpirationDate) }
        }
        // B6
        guard !request.body.isEmpty else { return reject(400, .payloadEmpty) }
        guard request.body.count <= APNSPayloadLimit.broadcast else { return reject(413, .payloadTooLarge) }
        // B7
        let findings = Self.payloadFindings(request.body)
        return APNSDecision(
            status: 200, reason: nil, timestamp: nil, apnsID: echoedID ?? GeneratedID.upper(), idHeader: "apns-request-id",
            apnsUniqueID: GeneratedID.lower(), headers: [], body: [], target: target, pushType: .liveactivity,
            lint: findings.lint, warning: findings.warning
        )
    }

    /// The checks broadcasts and the channel API share: request id, duplicate headers, a bundle id
    /// without a push-type suffix (B5), credentials covering it, and the Broadcast capability (B1).
    private mutating func appChecks(
        _ request: Request, requestID: String?, bundle: String, connectionID: UInt64, now: Date
    ) -> APNSErrorReason? {
        if let id = requestID, (try? APNSID(id)) == nil { return .badMessageID }
        if let reason = Self.duplicateHeaders(request) { return reason }
        if Self.hasPushTypeSuffix(bundle) { return .topicDisallowed }
        if let reason = self.authenticateApp(request, bundle: bundle, connectionID: connectionID, now: now) { return reason }
        if let served = self.configuration.servedBundleIDs, !served.contains(bundle) { return self.configuration.unservedTopicReason }
        if let app = self.apps[bundle], !app.broadcastEnabled { return .featureNotEnabled }
        return nil
    }

    static func hasPushTypeSuffix(_ bundle: String) -> Bool {
        APNSPushType.allCases.contains { type in
            guard let suffix = type.topicSuffix, !suffix.isEmpty else { return false }
            return Self.endsWith(bundle, suffix)
        }
    }

    // MARK: Channel management (M1-M4)

    private mutating func judgeChannelRequest(_ request: Request, connectionID: UInt64, now: Date) -> APNSDecision {
        let rest = request.path.dropFirst(Self.channelsPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        let echoedID = request.value("apns-request-id")
        var target = APNSDecision.Target.unknown
        func reject(_ status: Int, _ reason: APNSErrorReason) -> APNSDecision {
            let id = echoedID.flatMap { (try? APNSID($0)) != nil ? $0 : nil } ?? GeneratedID.upper()
            return APNSDecision(
                status: status, reason: reason, timestamp: nil, apnsID: id, idHeader: "apns-request-id", apnsUniqueID: nil,
                headers: [], body: [], target: target, pushType: nil, lint: nil
            )
        }
        func succeed(_ status: Int, headers: [APNSDecision.Header] = [], body: [UInt8] = []) -> APNSDecision {
            APNSDecision(
                status: status, reason: nil, timestamp: nil, apnsID: echoedID ?? GeneratedID.upper(), idHeader: "apns-request-id",
                apnsUniqueID: nil, headers: headers, body: body, target: target, pushType: nil, lint: nil
            )
        }
        // M4: /1/apps/<bundle>/channels or /1/apps/<bundle>/all-channels
        guard rest.count == 2, !rest[0].isEmpty, rest[1] == "channels" || rest[1] == "all-channels" else {
            return reject(404, .badPath)
        }
        let bundle = String(rest[0])
        let listing = rest[1] == "all-channels"
        let allowed = listing ? ["GET"] : ["POST", "GET", "DELETE"]
        guard allowed.contains(request.method) else { return reject(405, .methodNotAllowed) }
        target = .channels(bundleID: bundle)
        if let reason = self.appChecks(request, requestID: echoedID, bundle: bundle, connectionID: connectionID, now: now) {
            return reject(reason.status ?? 400, reason)
        }
        if listing {
            let ids = self.channels.values.filter { $0.bundleID == bundle }.map(\.id).sorted()
            return succeed(200, body: Array(Self.json(["channels": ids]).utf8))
        }
        if request.method == "POST" {
            // M1, M2
            guard let object = Self.jsonObject(request.body) else { return reject(400, .badRequestPayload) }
            let known: Set<String> = ["message-storage-policy", "push-type"]
            guard object.keys.allSatisfy(known.contains) else { return reject(400, .badRequestParams) }
            guard let type = object["push-type"] as? String else { return reject(400, .missingPushType) }
            guard type.lowercased() == "liveactivity" else { return reject(400, .invalidPushType) }
            guard let policy = object["message-storage-policy"] as? Int, policy == 0 || policy == 1 else {
                return reject(400, .badRequestParams)
            }
            guard self.channels.values.lazy.filter({ $0.bundleID == bundle }).count < self.configuration.channelLimit else {
                return reject(400, .cannotCreateChannelConfig)
            }
            var id: String
            repeat { id = Self.newChannelID() } while self.channels[id] != nil
            self.channels[id] = LocalAPNSChannel(id: id, bundleID: bundle, messageStoragePolicy: policy)
            return succeed(201, headers: [APNSDecision.Header(name: "apns-channel-id", value: id)])
        }
        // Read, delete: B2's channel checks.
        guard let channelID = request.value("apns-channel-id") else { return reject(400, .missingChannelID) }
        guard (try? APNSChannelID(channelID)) != nil else { return reject(400, .badChannelID) }
        guard let channel = self.channels[channelID], channel.bundleID == bundle else { return reject(400, .channelNotRegistered) }
        if request.method == "DELETE" {
            self.channels[channelID] = nil
            return succeed(204)
        }
        let body = #"{"message-storage-policy":\#(channel.messageStoragePolicy),"push-type":"LiveActivity"}"#
        return succeed(200, body: Array(body.utf8))
    }

    /// A random channel id: 16 bytes, base64 with padding (Apple's length is undocumented).
    static func newChannelID() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString()
    }

    private static func jsonObject(_ body: [UInt8]) -> [String: Any]? {
        guard !body.isEmpty else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    private static func json(_ object: [String: [String]]) -> String {
        let members = object.sorted { $0.key < $1.key }.map { key, values in
            "\"\(key)\":[" + values.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        }
        return "{" + members.joined(separator: ",") + "}"
    }
}
