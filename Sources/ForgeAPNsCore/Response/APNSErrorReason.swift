/// The `reason` APNs gives when it rejects a request, kept exactly as received.
///
/// Every reason string Apple documents for device pushes ("Handling notification responses from
/// APNs") and for broadcasts and channel management ("Sending broadcast push notification requests
/// to APNs", "Sending channel management requests to APNs") has a static member. Reasons ForgePush does not know are
/// kept verbatim (``isKnown`` is `false`) and classified by their HTTP status, so a new reason from
/// Apple never crashes a client or loses information.
///
/// - Important: Apple documents `BadEnvironmentKeyIdInToken` but APNs has been seen sending
///   `BadEnvironmentKeyInToken`. Both spellings compare equal and hash alike, and each keeps its own
///   ``rawValue``.
public struct APNSErrorReason: Hashable, Sendable, CustomStringConvertible, RawRepresentable {
    /// The reason as received.
    public let rawValue: String

    /// The known reason this value is, if any (both BadEnvironmentKey spellings share one).
    private let known: Known?

    /// Wraps a reason string; never fails.
    public init(rawValue: String) {
        self.rawValue = rawValue
        self.known = Known.byRawValue[rawValue]
    }

    private init(_ known: Known, spelling: String? = nil) {
        self.rawValue = spelling ?? known.rawValue
        self.known = known
    }

    /// Whether ForgePush knows this reason.
    public var isKnown: Bool { self.known != nil }

    public var description: String { self.rawValue.isEmpty ? "(no reason)" : self.rawValue }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs.known, rhs.known) {
        case (let left?, let right?): return left == right
        case (nil, nil): return lhs.rawValue == rhs.rawValue
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        if let known = self.known {
            hasher.combine(0)
            hasher.combine(known)
        } else {
            hasher.combine(1)
            hasher.combine(self.rawValue)
        }
    }

    /// The HTTP status Apple pairs with this reason, or `nil` for an unknown reason.
    public var status: Int? { self.known?.status }

    /// What a client should do about this reason.
    ///
    /// For unknown reasons, ``Disposition/forUnknownReason(status:)`` decides from the status.
    public var disposition: Disposition? { self.known?.disposition }

    /// Whether the connection should be replaced before trying again (`UnrelatedKeyIdInToken`, `Shutdown`,
    /// `IdleTimeout`).
    public var requiresNewConnection: Bool {
        switch self.known {
        case .unrelatedKeyIDInToken, .shutdown, .idleTimeout: return true
        default: return false
        }
    }

    // MARK: Device push (`/3/device/`)

    /// 400: `apns-collapse-id` longer than 64 bytes.
    public static let badCollapseID = APNSErrorReason(.badCollapseID)
    /// 400: the token is invalid or from the other environment. Never retry.
    public static let badDeviceToken = APNSErrorReason(.badDeviceToken)
    /// 400: `apns-expiration` is invalid (or non-zero on a No-Message-Stored channel).
    public static let badExpirationDate = APNSErrorReason(.badExpirationDate)
    /// 400: `apns-id` (or `apns-request-id`) is invalid.
    public static let badMessageID = APNSErrorReason(.badMessageID)
    /// 400: `apns-priority` is invalid.
    public static let badPriority = APNSErrorReason(.badPriority)
    /// 400: `apns-topic` is invalid.
    public static let badTopic = APNSErrorReason(.badTopic)
    /// 400: the token does not belong to this topic. Never retry.
    public static let deviceTokenNotForTopic = APNSErrorReason(.deviceTokenNotForTopic)
    /// 400: a header appears more than once.
    public static let duplicateHeaders = APNSErrorReason(.duplicateHeaders)
    /// 400: idle timeout.
    public static let idleTimeout = APNSErrorReason(.idleTimeout)
    /// 400: `apns-push-type` is invalid (for broadcasts: not LiveActivity).
    public static let invalidPushType = APNSErrorReason(.invalidPushType)
    /// 400: no token in `:path`.
    public static let missingDeviceToken = APNSErrorReason(.missingDeviceToken)
    /// 400: `apns-topic` is required but absent.
    public static let missingTopic = APNSErrorReason(.missingTopic)
    /// 400: the body is empty.
    public static let payloadEmpty = APNSErrorReason(.payloadEmpty)
    /// 400: pushing to this topic is not allowed.
    public static let topicDisallowed = APNSErrorReason(.topicDisallowed)
    /// 403: the certificate is invalid.
    public static let badCertificate = APNSErrorReason(.badCertificate)
    /// 403: the certificate is for the other environment.
    public static let badCertificateEnvironment = APNSErrorReason(.badCertificateEnvironment)
    /// 403: the provider token is older than an hour: make a new one and retry.
    public static let expiredProviderToken = APNSErrorReason(.expiredProviderToken)
    /// 403: the action is not allowed. Never retry.
    public static let forbidden = APNSErrorReason(.forbidden)
    /// 403: the provider token is invalid or its signature does not verify.
    public static let invalidProviderToken = APNSErrorReason(.invalidProviderToken)
    /// 403: no client certificate and no provider token.
    public static let missingProviderToken = APNSErrorReason(.missingProviderToken)
    /// 403: the key id is unrelated to the key of this connection's first push: open a new connection.
    public static let unrelatedKeyIDInToken = APNSErrorReason(.unrelatedKeyIDInToken)
    /// 403: the key is restricted to the other environment (Apple's documented spelling).
    public static let badEnvironmentKeyIDInToken = APNSErrorReason(.badEnvironmentKeyInToken, spelling: "BadEnvironmentKeyIdInToken")
    /// 403: the key is restricted to the other environment (the spelling APNs has been seen sending).
    public static let badEnvironmentKeyInToken = APNSErrorReason(.badEnvironmentKeyInToken)
    /// 404: the `:path` is invalid.
    public static let badPath = APNSErrorReason(.badPath)
    /// 405: the method is not POST (or not allowed on that path).
    public static let methodNotAllowed = APNSErrorReason(.methodNotAllowed)
    /// 410: the token expired. Never retry; drop it.
    public static let expiredToken = APNSErrorReason(.expiredToken)
    /// 410: the token is no longer active for the topic. Never retry; drop it.
    public static let unregistered = APNSErrorReason(.unregistered)
    /// 413: the payload is too large. Never retry.
    public static let payloadTooLarge = APNSErrorReason(.payloadTooLarge)
    /// 429: the provider token changed more than once in 20 minutes on this connection.
    public static let tooManyProviderTokenUpdates = APNSErrorReason(.tooManyProviderTokenUpdates)
    /// 429: too many requests to the same token: retry after a delay.
    public static let tooManyRequests = APNSErrorReason(.tooManyRequests)
    /// 500: internal server error.
    public static let internalServerError = APNSErrorReason(.internalServerError)
    /// 503: the service is unavailable.
    public static let serviceUnavailable = APNSErrorReason(.serviceUnavailable)
    /// 503: the server is shutting down: reconnect, then retry.
    public static let shutdown = APNSErrorReason(.shutdown)

    // MARK: Broadcast and channel management

    /// 400: the Broadcast capability is not enabled for the topic.
    public static let featureNotEnabled = APNSErrorReason(.featureNotEnabled)
    /// 400: `apns-channel-id` is absent.
    public static let missingChannelID = APNSErrorReason(.missingChannelID)
    /// 400: `apns-channel-id` is badly encoded or too long.
    public static let badChannelID = APNSErrorReason(.badChannelID)
    /// 400: the channel does not exist.
    public static let channelNotRegistered = APNSErrorReason(.channelNotRegistered)
    /// 400: the JSON body has an unknown attribute.
    public static let badRequestParams = APNSErrorReason(.badRequestParams)
    /// 400: the JSON body cannot be parsed.
    public static let badRequestPayload = APNSErrorReason(.badRequestPayload)
    /// 400: `apns-push-type` is absent.
    public static let missingPushType = APNSErrorReason(.missingPushType)
    /// 400: the channel limit is reached.
    public static let cannotCreateChannelConfig = APNSErrorReason(.cannotCreateChannelConfig)
    /// 400: `message-storage-policy` missing or invalid (undocumented; reported by a third-party client).
    public static let missingChannelQueueSize = APNSErrorReason(.missingChannelQueueSize)
    /// 403: the credentials' bundle ids do not include the topic in the path.
    public static let topicMismatch = APNSErrorReason(.topicMismatch)

    /// Every reason ForgePush knows, with both BadEnvironmentKey spellings.
    public static let allKnown: [APNSErrorReason] =
        Known.allCases.map { APNSErrorReason($0) } + [.badEnvironmentKeyIDInToken]
}

extension APNSErrorReason {
    /// What a client should do with a rejected request.
    ///
    /// | Disposition | Reasons | Why |
    /// |---|---|---|
    /// | ``dropToken`` | BadDeviceToken, DeviceTokenNotForTopic, ExpiredToken, Unregistered | the token will never work for this topic and environment; Apple: do not retry |
    /// | ``fixRequest`` | the request-shape reasons (BadCollapseId, BadTopic, PayloadTooLarge, …), the credential reasons (InvalidProviderToken, BadCertificate, MissingProviderToken, BadEnvironmentKey…, UnrelatedKeyIdInToken, TopicMismatch), Forbidden, and the broadcast request reasons | the same request fails again until someone changes it or the configuration; Apple: do not retry Forbidden or PayloadTooLarge |
    /// | ``refreshProviderToken`` | ExpiredProviderToken | sign a new token, then retry once |
    /// | ``retryLater`` | TooManyRequests, TooManyProviderTokenUpdates, InternalServerError, ServiceUnavailable, Shutdown, IdleTimeout | transient: back off (and reconnect where ``APNSErrorReason/requiresNewConnection``) |
    public struct Disposition: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case dropToken, fixRequest, refreshProviderToken, retryLater
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The token is permanently invalid for this topic: stop sending to it. Never retried.
        public static let dropToken = Disposition(.dropToken)
        /// The request or the configuration is wrong: retrying it unchanged fails again.
        public static let fixRequest = Disposition(.fixRequest)
        /// The provider token expired: refresh it and retry once.
        public static let refreshProviderToken = Disposition(.refreshProviderToken)
        /// A transient condition: retry after a back-off.
        public static let retryLater = Disposition(.retryLater)

        /// The disposition of a reason ForgePush does not know: 5xx and 429 are retried later, 410
        /// drops the token, other 4xx need a fix.
        public static func forUnknownReason(status: Int) -> Disposition {
            switch status {
            case 429, 500...599: return .retryLater
            case 410: return .dropToken
            default: return .fixRequest
            }
        }

        public var description: String { self.base.rawValue }
    }
}

extension APNSErrorReason {
    /// The known reasons: the canonical spelling, Apple's status, and the disposition.
    fileprivate enum Known: String, Hashable, Sendable, CaseIterable {
        case badCollapseID = "BadCollapseId"
        case badDeviceToken = "BadDeviceToken"
        case badExpirationDate = "BadExpirationDate"
        case badMessageID = "BadMessageId"
        case badPriority = "BadPriority"
        case badTopic = "BadTopic"
        case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
        case duplicateHeaders = "DuplicateHeaders"
        case idleTimeout = "IdleTimeout"
        case invalidPushType = "InvalidPushType"
        case missingDeviceToken = "MissingDeviceToken"
        case missingTopic = "MissingTopic"
        case payloadEmpty = "PayloadEmpty"
        case topicDisallowed = "TopicDisallowed"
        case badCertificate = "BadCertificate"
        case badCertificateEnvironment = "BadCertificateEnvironment"
        case expiredProviderToken = "ExpiredProviderToken"
        case forbidden = "Forbidden"
        case invalidProviderToken = "InvalidProviderToken"
        case missingProviderToken = "MissingProviderToken"
        case unrelatedKeyIDInToken = "UnrelatedKeyIdInToken"
        /// Both `BadEnvironmentKeyInToken` (seen on the wire) and `BadEnvironmentKeyIdInToken` (documented).
        case badEnvironmentKeyInToken = "BadEnvironmentKeyInToken"
        case badPath = "BadPath"
        case methodNotAllowed = "MethodNotAllowed"
        case expiredToken = "ExpiredToken"
        case unregistered = "Unregistered"
        case payloadTooLarge = "PayloadTooLarge"
        case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
        case tooManyRequests = "TooManyRequests"
        case internalServerError = "InternalServerError"
        case serviceUnavailable = "ServiceUnavailable"
        case shutdown = "Shutdown"
        case featureNotEnabled = "FeatureNotEnabled"
        case missingChannelID = "MissingChannelId"
        case badChannelID = "BadChannelId"
        case channelNotRegistered = "ChannelNotRegistered"
        case badRequestParams = "BadRequestParams"
        case badRequestPayload = "BadRequestPayload"
        case missingPushType = "MissingPushType"
        case cannotCreateChannelConfig = "CannotCreateChannelConfig"
        case missingChannelQueueSize = "MissingChannelQueueSize"
        case topicMismatch = "TopicMismatch"

        static let byRawValue: [String: Known] = {
            var table = Dictionary(uniqueKeysWithValues: Known.allCases.map { ($0.rawValue, $0) })
            table["BadEnvironmentKeyIdInToken"] = .badEnvironmentKeyInToken
            return table
        }()

        var status: Int {
            switch self {
            case .badCollapseID, .badDeviceToken, .badExpirationDate, .badMessageID, .badPriority, .badTopic,
                .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
                .missingTopic, .payloadEmpty, .topicDisallowed, .featureNotEnabled, .missingChannelID, .badChannelID,
                .channelNotRegistered, .badRequestParams, .badRequestPayload, .missingPushType,
                .cannotCreateChannelConfig, .missingChannelQueueSize:
                return 400
            case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
                .missingProviderToken, .unrelatedKeyIDInToken, .badEnvironmentKeyInToken, .topicMismatch:
                return 403
            case .badPath: return 404
            case .methodNotAllowed: return 405
            case .expiredToken, .unregistered: return 410
            case .payloadTooLarge: return 413
            case .tooManyProviderTokenUpdates, .tooManyRequests: return 429
            case .internalServerError: return 500
            case .serviceUnavailable, .shutdown: return 503
            }
        }

        var disposition: Disposition {
            switch self {
            case .badDeviceToken, .deviceTokenNotForTopic, .expiredToken, .unregistered:
                return .dropToken
            case .expiredProviderToken:
                return .refreshProviderToken
            case .tooManyRequests, .tooManyProviderTokenUpdates, .internalServerError, .serviceUnavailable, .shutdown,
                .idleTimeout:
                return .retryLater
            default:
                return .fixRequest
            }
        }
    }
}
