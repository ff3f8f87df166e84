internal import ForgeAPNsCore
internal import ForgeSupport
package import struct Foundation.Date

extension APNSJudge {
    /// One sentence that says why `decision` rejected `request`: what the judge saw and what it
    /// expected ("payload is 4,127 bytes; the limit for alert is 4,096"); `nil` for an acceptance.
    ///
    /// Called after ``judge(_:connectionID:now:)`` with the state it judged against, and only for
    /// rejections, so judging itself pays nothing for it. Where one reason has several causes
    /// (`BadDeviceToken`: not hex, another environment, not registered), the causes are checked
    /// again in the judge's order.
    ///
    /// A provider token where another value belongs (a client that swapped the authorization with
    /// the topic, the collapse id or the device token) is named as such, and no sentence quotes a
    /// provider token (``ProviderTokenRedaction``).
    package func explain(_ decision: APNSDecision, for request: Request, now: Date = Date()) -> String? {
        guard let reason = decision.reason, !decision.isAccepted else { return nil }
        if let misplaced = Self.explainMisplacedProviderToken(reason, in: request) { return misplaced }
        return ProviderTokenRedaction.redacting(self.sentence(reason, decision: decision, request: request, now: now))
    }

    /// Where a provider token holds the place of the value a rejection is about: the sentence that
    /// asks whether it was swapped with the authorization; `nil` otherwise. (A value swapped with
    /// the authorization leaves the authorization wrong too, so the provider token rejections look
    /// at the topic and the collapse id as well.)
    private static func explainMisplacedProviderToken(_ reason: APNSErrorReason, in request: Request) -> String? {
        func holdsProviderToken(_ value: String?) -> Bool { value.map(ProviderTokenRedaction.containsProviderToken) ?? false }
        let authentication = reason == .missingProviderToken || reason == .invalidProviderToken || reason == .topicMismatch
        if reason == .badDeviceToken, request.path.hasPrefix(Self.devicePrefix),
            holdsProviderToken(String(request.path.dropFirst(Self.devicePrefix.count)))
        {
            return "the device token in the path holds a provider token: were the device token and the authorization swapped?"
        }
        if authentication || reason == .topicDisallowed || reason == .deviceTokenNotForTopic, holdsProviderToken(request.value("apns-topic")) {
            return "the apns-topic header holds a provider token: were the topic and the authorization swapped?"
        }
        if authentication || reason == .badCollapseID, holdsProviderToken(request.value("apns-collapse-id")) {
            return "the apns-collapse-id header holds a provider token: were the collapse id and the authorization swapped?"
        }
        return nil
    }

    private func sentence(_ reason: APNSErrorReason, decision: APNSDecision, request: Request, now: Date) -> String {
        let isDevice = !request.path.hasPrefix(Self.broadcastPrefix) && !request.path.hasPrefix(Self.channelsPrefix)
        let typeHeader = request.value("apns-push-type")
        let pushType = decision.pushType ?? typeHeader.flatMap(APNSPushType.init(rawValue:)) ?? .alert
        let topic = request.value("apns-topic") ?? ""
        let bundle: String
        switch decision.target {
        case .broadcast(let bundleID, _), .channels(let bundleID): bundle = bundleID
        default: bundle = Self.bundleID(of: topic, pushType: pushType)
        }
        switch reason {
        case .methodNotAllowed:
            return "method \(request.method) is not allowed here: APNs takes POST for pushes (channels: POST, GET, DELETE)"
        case .badPath:
            return "path \(request.path) is not /3/device/<token>, /4/broadcasts/apps/<bundle> or /1/apps/<bundle>/channels"
        case .missingDeviceToken:
            return "the path names no device token: POST /3/device/<token>"
        case .badMessageID:
            let header = isDevice ? "apns-id" : "apns-request-id"
            return "\(header) '\(Self.clip(request.value(header) ?? ""))' is not a UUID (8-4-4-4-12 hex digits)"
        case .duplicateHeaders:
            let names = request.headers.map(\.name)
            let repeated = names.enumerated().first { index, name in names[..<index].contains(name) }?.element ?? "?"
            return "header \(repeated) appears more than once"
        case .badDeviceToken:
            return self.explainBadDeviceToken(request)
        case .missingTopic:
            return "no apns-topic header: with a provider token (or a certificate for several topics) the topic is required"
        case .topicDisallowed where bundle != topic || !isDevice:
            if Self.hasPushTypeSuffix(bundle), !isDevice {
                return "bundle id \(bundle) carries a push-type suffix; broadcasts and channels name the bare bundle id"
            }
            return self.explainUnserved(bundle: bundle, topic: topic) ?? "topic \(topic) is not allowed for these credentials"
        case .topicDisallowed:
            return self.explainUnserved(bundle: bundle, topic: topic) ?? "topic \(topic) is not covered by the client certificate"
        case .deviceTokenNotForTopic:
            if let token = decision.target.token, let record = self.tokens[token], record.bundleID != bundle {
                return "token \(Self.short(token)) is registered for \(record.bundleID), not \(bundle)"
            }
            if let suffix = pushType.topicSuffix, !suffix.isEmpty {
                return "topic \(topic) lacks the suffix \(suffix) that push type \(pushType.rawValue) needs"
            }
            return "topic \(topic) carries a push-type suffix, but push type \(pushType.rawValue) takes the bare bundle id"
        case .badCollapseID:
            let count = request.value("apns-collapse-id")?.utf8.count ?? 0
            return "apns-collapse-id is \(Self.grouped(count)) bytes; the limit is \(APNSCollapseID.maximumByteCount)"
        case .badPriority:
            if let text = request.value("apns-priority"), (try? APNSPriority(headerValue: text)) == nil {
                return "apns-priority '\(Self.clip(text))' is not 10, 5 or 1"
            }
            return "a background push must have priority 5 (apns-priority 10 was sent)"
        case .invalidPushType, .missingPushType:
            if !isDevice {
                return typeHeader.map { "apns-push-type '\(Self.clip($0))' is not LiveActivity, the only type for broadcasts and channels" }
                    ?? "no apns-push-type: broadcasts and channels need LiveActivity"
            }
            let names = APNSPushType.allCases.map(\.rawValue).joined(separator: ", ")
            return "apns-push-type '\(Self.clip(typeHeader ?? ""))' is not one of \(names)"
        case .badExpirationDate:
            if let text = request.value("apns-expiration"), (try? APNSExpiration(headerValue: text)) == nil {
                return "apns-expiration '\(Self.clip(text))' is not a UNIX time in seconds"
            }
            return "a channel with message storage policy 0 takes only apns-expiration 0"
        case .payloadEmpty:
            return "the body is empty; a push needs a JSON payload"
        case .payloadTooLarge:
            let limit = isDevice ? pushType.payloadSizeLimit : APNSPayloadLimit.broadcast
            let what = isDevice ? pushType.rawValue : "broadcasts"
            return "payload is \(Self.grouped(request.body.count)) bytes; the limit for \(what) is \(Self.grouped(limit))"
        case .unregistered:
            let when = decision.timestamp.map { " at \(ISODate.string($0))" } ?? ""
            return "token \(Self.short(decision.target.token ?? "")) was unregistered\(when): the app was removed or the token is no longer valid"
        case .expiredToken:
            return "token \(Self.short(decision.target.token ?? "")) has expired"
        case .tooManyRequests:
            let limit = self.configuration.perTokenRateLimit
            return limit.map { "more than \($0.pushes) pushes to this token within \(Self.seconds($0.seconds)) s" }
                ?? "too many pushes to this token"
        case .missingChannelID:
            return "no apns-channel-id header"
        case .badChannelID:
            return "apns-channel-id '\(Self.clip(request.value("apns-channel-id") ?? ""))' is not a channel id (base64)"
        case .channelNotRegistered:
            return "channel \(Self.clip(request.value("apns-channel-id") ?? "")) does not exist for \(bundle)"
        case .featureNotEnabled:
            return "\(bundle) does not have the Broadcast capability enabled"
        case .badRequestPayload:
            return "the body is not a JSON object"
        case .badRequestParams:
            return "the body takes exactly message-storage-policy (0 or 1) and push-type (LiveActivity)"
        case .cannotCreateChannelConfig:
            return "\(bundle) already has \(Self.grouped(self.configuration.channelLimit)) channels, the limit"
        case .badCertificate:
            return request.clientCertificateVerified
                ? "the client certificate is not registered, revoked or out of date"
                : "the client certificate does not verify against the server's client CA"
        case .badCertificateEnvironment:
            return "the client certificate is registered for the other environment than \(self.configuration.environment.rawValue)"
        case .missingProviderToken, .invalidProviderToken, .expiredProviderToken, .tooManyProviderTokenUpdates,
            .unrelatedKeyIDInToken, .badEnvironmentKeyInToken, .topicMismatch:
            if reason == .topicMismatch, request.clientCertificate != nil {
                return "the client certificate does not cover \(bundle)"
            }
            return self.authenticator?.explain(reason, authorization: request.value("authorization"), bundleID: bundle, now: now)
                ?? "\(reason.rawValue) for \(bundle)"
        default:
            return "\(reason.rawValue) (status \(decision.status))"
        }
    }

    private func explainBadDeviceToken(_ request: Request) -> String {
        let text = String(request.path.dropFirst(Self.devicePrefix.count))
        let lengths = self.configuration.tokenLengths
        guard let token = try? DeviceToken(text, allowedLengths: lengths), token.hexString == text else {
            if text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) }),
                text.lowercased() != text
            {
                return "token \(Self.short(text)) is in upper case; APNs tokens are lower-case hex"
            }
            return "token '\(Self.clip(text))' (\(text.utf8.count) characters) is not \(lengths.lowerBound)…\(lengths.upperBound) hex digits"
        }
        if let record = self.tokens[token.hexString] {
            return "token \(Self.short(token.hexString)) belongs to \(record.environment.rawValue); this server plays \(self.configuration.environment.rawValue)"
        }
        return "token \(Self.short(token.hexString)) is not registered, and this server rejects unknown tokens"
    }

    private func explainUnserved(bundle: String, topic: String) -> String? {
        guard let served = self.configuration.servedBundleIDs, !served.contains(bundle) else { return nil }
        let list = served.sorted().joined(separator: ", ")
        let named = bundle == topic || topic.isEmpty ? "topic \(bundle)" : "topic \(topic) (bundle \(bundle))"
        return "\(named) is not served: --topic serves \(list)"
    }

    /// A token as people compare them: the first 8 and last 4 hex digits.
    static func short(_ token: String) -> String {
        token.utf8.count <= 16 ? token : "\(token.prefix(8))…\(token.suffix(4))"
    }

    /// A value quoted in a sentence: at most 64 characters, a provider token redacted first (cut
    /// short, it would no longer be recognised).
    package static func clip(_ text: String) -> String {
        let text = ProviderTokenRedaction.redacting(text)
        return text.count <= 64 ? text : String(text.prefix(61)) + "…"
    }

    /// `4127` as `4,127`.
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return value < 0 ? "-" + out : out
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}

extension APNSDecision.Target {
    /// The device token a device push addressed.
    public var token: String? {
        if case .device(let token) = self { return token }
        return nil
    }
}
