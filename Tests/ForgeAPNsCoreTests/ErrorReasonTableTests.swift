import ForgeAPNsCore
import Testing

/// One row of the reason table: the static member, the wire string, Apple's status, what a client
/// should do, and whether it must reconnect first. Written out by hand from the protocol notes
/// (§3.3 device push, §7.5 broadcast and channels) so that a typo in a static member, a status or a
/// classification shows up as one named failing case.
private struct ReasonRow: Sendable, CustomTestStringConvertible {
    let member: APNSErrorReason
    let raw: String
    let status: Int
    let disposition: APNSErrorReason.Disposition
    let reconnect: Bool

    init(
        _ member: APNSErrorReason, _ raw: String, _ status: Int, _ disposition: APNSErrorReason.Disposition,
        reconnect: Bool = false
    ) {
        self.member = member
        self.raw = raw
        self.status = status
        self.disposition = disposition
        self.reconnect = reconnect
    }

    var testDescription: String { "\(self.status) \(self.raw)" }
}

private typealias D = APNSErrorReason.Disposition

/// §3.3: device push. "fix" in Apple's action column is `.fixRequest`; "do not retry" on a token is
/// `.dropToken`; Forbidden and PayloadTooLarge are "do not retry" on the request, so `.fixRequest`.
private let deviceRows: [ReasonRow] = [
    ReasonRow(.badCollapseID, "BadCollapseId", 400, .fixRequest),
    ReasonRow(.badDeviceToken, "BadDeviceToken", 400, .dropToken),
    ReasonRow(.badExpirationDate, "BadExpirationDate", 400, .fixRequest),
    ReasonRow(.badMessageID, "BadMessageId", 400, .fixRequest),
    ReasonRow(.badPriority, "BadPriority", 400, .fixRequest),
    ReasonRow(.badTopic, "BadTopic", 400, .fixRequest),
    ReasonRow(.deviceTokenNotForTopic, "DeviceTokenNotForTopic", 400, .dropToken),
    ReasonRow(.duplicateHeaders, "DuplicateHeaders", 400, .fixRequest),
    ReasonRow(.idleTimeout, "IdleTimeout", 400, .retryLater, reconnect: true),
    ReasonRow(.invalidPushType, "InvalidPushType", 400, .fixRequest),
    ReasonRow(.missingDeviceToken, "MissingDeviceToken", 400, .fixRequest),
    ReasonRow(.missingTopic, "MissingTopic", 400, .fixRequest),
    ReasonRow(.payloadEmpty, "PayloadEmpty", 400, .fixRequest),
    ReasonRow(.topicDisallowed, "TopicDisallowed", 400, .fixRequest),
    ReasonRow(.badCertificate, "BadCertificate", 403, .fixRequest),
    ReasonRow(.badCertificateEnvironment, "BadCertificateEnvironment", 403, .fixRequest),
    ReasonRow(.expiredProviderToken, "ExpiredProviderToken", 403, .refreshProviderToken),
    ReasonRow(.forbidden, "Forbidden", 403, .fixRequest),
    ReasonRow(.invalidProviderToken, "InvalidProviderToken", 403, .fixRequest),
    ReasonRow(.missingProviderToken, "MissingProviderToken", 403, .fixRequest),
    ReasonRow(.unrelatedKeyIDInToken, "UnrelatedKeyIdInToken", 403, .fixRequest, reconnect: true),
    ReasonRow(.badEnvironmentKeyIDInToken, "BadEnvironmentKeyIdInToken", 403, .fixRequest),
    ReasonRow(.badEnvironmentKeyInToken, "BadEnvironmentKeyInToken", 403, .fixRequest),
    ReasonRow(.badPath, "BadPath", 404, .fixRequest),
    ReasonRow(.methodNotAllowed, "MethodNotAllowed", 405, .fixRequest),
    ReasonRow(.expiredToken, "ExpiredToken", 410, .dropToken),
    ReasonRow(.unregistered, "Unregistered", 410, .dropToken),
    ReasonRow(.payloadTooLarge, "PayloadTooLarge", 413, .fixRequest),
    ReasonRow(.tooManyProviderTokenUpdates, "TooManyProviderTokenUpdates", 429, .retryLater),
    ReasonRow(.tooManyRequests, "TooManyRequests", 429, .retryLater),
    ReasonRow(.internalServerError, "InternalServerError", 500, .retryLater),
    ReasonRow(.serviceUnavailable, "ServiceUnavailable", 503, .retryLater),
    ReasonRow(.shutdown, "Shutdown", 503, .retryLater, reconnect: true),
]

/// §7.5: the reasons only broadcast and channel management send (the shared ones are in `deviceRows`).
private let broadcastRows: [ReasonRow] = [
    ReasonRow(.featureNotEnabled, "FeatureNotEnabled", 400, .fixRequest),
    ReasonRow(.missingChannelID, "MissingChannelId", 400, .fixRequest),
    ReasonRow(.badChannelID, "BadChannelId", 400, .fixRequest),
    ReasonRow(.channelNotRegistered, "ChannelNotRegistered", 400, .fixRequest),
    ReasonRow(.badRequestParams, "BadRequestParams", 400, .fixRequest),
    ReasonRow(.badRequestPayload, "BadRequestPayload", 400, .fixRequest),
    ReasonRow(.missingPushType, "MissingPushType", 400, .fixRequest),
    ReasonRow(.cannotCreateChannelConfig, "CannotCreateChannelConfig", 400, .fixRequest),
    ReasonRow(.missingChannelQueueSize, "MissingChannelQueueSize", 400, .fixRequest),
    ReasonRow(.topicMismatch, "TopicMismatch", 403, .fixRequest),
]

private let allRows = deviceRows + broadcastRows

/// Apple's retry paragraph in §3.3, word for word: "Never retry BadDeviceToken, DeviceTokenNotForTopic,
/// Forbidden, ExpiredToken, Unregistered or PayloadTooLarge."
private let appleDoNotRetry = [
    "BadDeviceToken", "DeviceTokenNotForTopic", "Forbidden", "ExpiredToken", "Unregistered", "PayloadTooLarge",
]

@Suite("Error reason table: every reason's member, spelling, status and disposition")
struct ErrorReasonTableTests {
    @Test("The static member carries the wire spelling and parses back to itself", arguments: allRows)
    fileprivate func memberSpelling(_ row: ReasonRow) {
        #expect(row.member.rawValue == row.raw)
        #expect(row.member.description == row.raw)
        #expect(row.member.isKnown)
        let parsed = APNSErrorReason(rawValue: row.raw)
        #expect(parsed == row.member)
        #expect(parsed.rawValue == row.raw)
        #expect(parsed.hashValue == row.member.hashValue)
    }

    @Test("Status is the one Apple pairs with the reason", arguments: allRows)
    fileprivate func status(_ row: ReasonRow) {
        #expect(APNSErrorReason(rawValue: row.raw).status == row.status)
    }

    @Test("Disposition follows Apple's client-action column", arguments: allRows)
    fileprivate func disposition(_ row: ReasonRow) {
        let reason = APNSErrorReason(rawValue: row.raw)
        #expect(reason.disposition == row.disposition)
        // A rejection carrying the reason at Apple's status classifies the same way.
        let rejection = APNSErrorResponse(status: row.status, reason: reason)
        #expect(rejection.disposition == row.disposition)
    }

    @Test("Only UnrelatedKeyIdInToken, Shutdown and IdleTimeout need a new connection", arguments: allRows)
    fileprivate func reconnect(_ row: ReasonRow) {
        #expect(APNSErrorReason(rawValue: row.raw).requiresNewConnection == row.reconnect)
    }

    @Test("A reason's status class agrees with its disposition", arguments: allRows)
    fileprivate func statusClass(_ row: ReasonRow) {
        // 410 is always a dead token; 5xx is always transient; nothing but 403 refreshes the JWT.
        if row.status == 410 { #expect(row.member.disposition == .dropToken) }
        if row.status >= 500 { #expect(row.member.disposition == .retryLater) }
        if row.member.disposition == .refreshProviderToken { #expect(row.status == 403) }
    }

    @Test("Apple's do-not-retry reasons are never retryLater", arguments: appleDoNotRetry)
    func neverRetryLater(_ raw: String) {
        let reason = APNSErrorReason(rawValue: raw)
        #expect(reason.isKnown)
        #expect(reason.disposition != .retryLater)
        #expect(reason.disposition != .refreshProviderToken)
        #expect(!reason.requiresNewConnection)
        // Whatever status it arrives with, the known reason wins over the status.
        for status in [400, 403, 410, 413, 429, 500, 503] {
            #expect(APNSErrorResponse(status: status, reason: reason).disposition != .retryLater)
        }
    }

    @Test("The table and allKnown list the same 43 reasons, each once")
    func tableMatchesAllKnown() {
        let tableRaws = allRows.map(\.raw)
        #expect(Set(tableRaws).count == tableRaws.count)
        #expect(tableRaws.count == 43)
        #expect(APNSErrorReason.allKnown.map(\.rawValue).sorted() == tableRaws.sorted())
        #expect(APNSErrorReason.allKnown.allSatisfy { $0.isKnown })
    }

    @Test("Distinct known spellings are unequal, except the two BadEnvironmentKey spellings")
    func pairwiseEquality() {
        let environmentKey: Set = ["BadEnvironmentKeyIdInToken", "BadEnvironmentKeyInToken"]
        let reasons = APNSErrorReason.allKnown
        for left in reasons {
            for right in reasons where left.rawValue != right.rawValue {
                let shouldBeEqual = environmentKey.contains(left.rawValue) && environmentKey.contains(right.rawValue)
                #expect((left == right) == shouldBeEqual, "\(left.rawValue) vs \(right.rawValue)")
            }
        }
        // Hashing agrees with equality: the set folds exactly the one pair.
        #expect(Set(reasons).count == reasons.count - 1)
    }

    @Test("Both BadEnvironmentKey spellings: equal, same hash, own rawValue, same status and disposition")
    func environmentKeySpellings() {
        let documented = APNSErrorReason(rawValue: "BadEnvironmentKeyIdInToken")
        let observed = APNSErrorReason(rawValue: "BadEnvironmentKeyInToken")
        #expect(documented == observed)
        var leftHasher = Hasher()
        documented.hash(into: &leftHasher)
        var rightHasher = Hasher()
        observed.hash(into: &rightHasher)
        #expect(leftHasher.finalize() == rightHasher.finalize())
        #expect(documented.rawValue == "BadEnvironmentKeyIdInToken")
        #expect(observed.rawValue == "BadEnvironmentKeyInToken")
        #expect(documented.description != observed.description)
        #expect(documented.status == observed.status)
        #expect(documented.disposition == observed.disposition)
        // Usable as a dictionary key: the second spelling finds the first one's entry.
        let counts: [APNSErrorReason: Int] = [documented: 1]
        #expect(counts[observed] == 1)
    }
}

/// Strings that are not reasons ForgePush knows, including near misses of known ones.
private let unknownStrings = [
    "", "SomethingNew", "badDeviceToken", "BADDEVICETOKEN", " BadTopic", "BadTopic ", "BadTopic\n",
    "Service Unavailable",  // §7.5 prints it with a space; the wire spelling is unverified
    "BadEnvironmentKeyIDInToken", "BadCollapseID", "MissingChannelID", "Bad\u{0}Topic", "Désolé", "🚫",
    String(repeating: "x", count: 10_000),
]

@Suite("Unknown error reasons")
struct UnknownErrorReasonTests {
    @Test("Unknown strings are kept verbatim, unknown, without status or disposition", arguments: unknownStrings)
    func keptVerbatim(_ raw: String) {
        let reason = APNSErrorReason(rawValue: raw)
        #expect(reason.rawValue == raw)
        #expect(reason.rawValue.utf8.elementsEqual(raw.utf8))
        #expect(!reason.isKnown)
        #expect(reason.status == nil)
        #expect(reason.disposition == nil)
        #expect(!reason.requiresNewConnection)
        #expect(!APNSErrorReason.allKnown.contains(reason))
        #expect(reason == APNSErrorReason(rawValue: raw))
        #expect(reason.hashValue == APNSErrorReason(rawValue: raw).hashValue)
    }

    @Test("The same-looking known and unknown reasons never compare equal", arguments: unknownStrings)
    func neverEqualToKnown(_ raw: String) {
        for known in APNSErrorReason.allKnown {
            #expect(APNSErrorReason(rawValue: raw) != known)
        }
    }

    @Test(
        "Unknown reasons are classified by status",
        arguments: [
            (500, D.retryLater), (501, .retryLater), (502, .retryLater), (503, .retryLater), (504, .retryLater),
            (599, .retryLater), (429, .retryLater), (410, .dropToken), (403, .fixRequest), (400, .fixRequest),
            (401, .fixRequest), (404, .fixRequest), (405, .fixRequest), (413, .fixRequest), (499, .fixRequest),
        ]
    )
    func byStatus(_ status: Int, _ expected: APNSErrorReason.Disposition) {
        #expect(D.forUnknownReason(status: status) == expected)
        let rejection = APNSErrorResponse(status: status, reason: APNSErrorReason(rawValue: "SomethingNew"))
        #expect(rejection.disposition == expected)
        let empty = APNSErrorResponse(status: status, reason: APNSErrorReason(rawValue: ""))
        #expect(empty.disposition == expected)
    }

    @Test("Every 4xx and 5xx status gets a disposition, and only 410 drops the token")
    func everyStatus() {
        for status in 400...599 {
            let disposition = D.forUnknownReason(status: status)
            #expect((disposition == .dropToken) == (status == 410), "\(status)")
            #expect(disposition != .refreshProviderToken, "\(status)")
            #expect((disposition == .retryLater) == (status == 429 || status >= 500), "\(status)")
        }
    }

    @Test("The broadcast page's 'Service Unavailable' spelling is retried by its 503 status")
    func spacedServiceUnavailable() {
        let rejection = APNSErrorResponse(
            status: 503, headers: [(name: String, value: String)](),
            body: Array(#"{"reason":"Service Unavailable"}"#.utf8)
        )
        #expect(!rejection.reason.isKnown)
        #expect(rejection.reason.rawValue == "Service Unavailable")
        #expect(rejection.disposition == .retryLater)
    }

    @Test("Disposition descriptions are the bounded names, safe as metric labels")
    func dispositionDescriptions() {
        #expect(D.dropToken.description == "dropToken")
        #expect(D.fixRequest.description == "fixRequest")
        #expect(D.refreshProviderToken.description == "refreshProviderToken")
        #expect(D.retryLater.description == "retryLater")
        #expect(Set([D.dropToken, .fixRequest, .refreshProviderToken, .retryLater]).count == 4)
    }
}
