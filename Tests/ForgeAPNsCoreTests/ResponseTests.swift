import ForgeAPNsCore
import Foundation
import Testing

/// Every documented reason with Apple's status (protocol notes §3.3 and §7.5).
private let documented: [(String, Int)] = [
    ("BadCollapseId", 400), ("BadDeviceToken", 400), ("BadExpirationDate", 400), ("BadMessageId", 400),
    ("BadPriority", 400), ("BadTopic", 400), ("DeviceTokenNotForTopic", 400), ("DuplicateHeaders", 400),
    ("IdleTimeout", 400), ("InvalidPushType", 400), ("MissingDeviceToken", 400), ("MissingTopic", 400),
    ("PayloadEmpty", 400), ("TopicDisallowed", 400), ("BadCertificate", 403), ("BadCertificateEnvironment", 403),
    ("ExpiredProviderToken", 403), ("Forbidden", 403), ("InvalidProviderToken", 403), ("MissingProviderToken", 403),
    ("UnrelatedKeyIdInToken", 403), ("BadEnvironmentKeyIdInToken", 403), ("BadEnvironmentKeyInToken", 403),
    ("BadPath", 404), ("MethodNotAllowed", 405), ("ExpiredToken", 410), ("Unregistered", 410),
    ("PayloadTooLarge", 413), ("TooManyProviderTokenUpdates", 429), ("TooManyRequests", 429),
    ("InternalServerError", 500), ("ServiceUnavailable", 503), ("Shutdown", 503),
    ("FeatureNotEnabled", 400), ("MissingChannelId", 400), ("BadChannelId", 400), ("ChannelNotRegistered", 400),
    ("BadRequestParams", 400), ("BadRequestPayload", 400), ("MissingPushType", 400),
    ("CannotCreateChannelConfig", 400), ("MissingChannelQueueSize", 400), ("TopicMismatch", 403),
]

@Suite("Error reasons")
struct ErrorReasonTests {
    @Test("Every documented reason is known, round-trips and has Apple's status", arguments: documented)
    func known(_ raw: String, _ status: Int) {
        let reason = APNSErrorReason(rawValue: raw)
        #expect(reason.isKnown)
        #expect(reason.rawValue == raw)
        #expect(reason.status == status)
        #expect(reason.disposition != nil)
        #expect(APNSErrorReason.allKnown.contains(reason))
    }

    @Test("allKnown is exactly the documented list")
    func allKnown() {
        #expect(Set(APNSErrorReason.allKnown.map(\.rawValue)) == Set(documented.map(\.0)))
        #expect(APNSErrorReason.allKnown.count == documented.count)
    }

    @Test("Static members carry the wire spelling")
    func staticMembers() {
        #expect(APNSErrorReason.badCollapseID.rawValue == "BadCollapseId")
        #expect(APNSErrorReason.unrelatedKeyIDInToken.rawValue == "UnrelatedKeyIdInToken")
        #expect(APNSErrorReason.missingChannelID.rawValue == "MissingChannelId")
        #expect(APNSErrorReason.unregistered == APNSErrorReason(rawValue: "Unregistered"))
    }

    @Test("Both BadEnvironmentKey spellings are the same reason, each kept verbatim")
    func environmentKeySpellings() {
        let documented = APNSErrorReason(rawValue: "BadEnvironmentKeyIdInToken")
        let observed = APNSErrorReason(rawValue: "BadEnvironmentKeyInToken")
        #expect(documented == observed)
        #expect(documented.hashValue == observed.hashValue)
        #expect(Set([documented, observed]).count == 1)
        #expect(documented.rawValue != observed.rawValue)
        #expect(documented == .badEnvironmentKeyInToken && observed == .badEnvironmentKeyIDInToken)
    }

    @Test("Apple's do-not-retry reasons are never retried")
    func neverRetried() {
        for raw in ["BadDeviceToken", "DeviceTokenNotForTopic", "Forbidden", "ExpiredToken", "Unregistered", "PayloadTooLarge"] {
            #expect(APNSErrorReason(rawValue: raw).disposition != .retryLater, "\(raw)")
        }
        for raw in ["BadDeviceToken", "DeviceTokenNotForTopic", "ExpiredToken", "Unregistered"] {
            #expect(APNSErrorReason(rawValue: raw).disposition == .dropToken, "\(raw)")
        }
    }

    @Test(
        "Dispositions",
        arguments: [
            ("ExpiredProviderToken", APNSErrorReason.Disposition.refreshProviderToken),
            ("TooManyRequests", .retryLater), ("TooManyProviderTokenUpdates", .retryLater),
            ("InternalServerError", .retryLater), ("ServiceUnavailable", .retryLater), ("Shutdown", .retryLater),
            ("IdleTimeout", .retryLater), ("InvalidProviderToken", .fixRequest), ("BadCollapseId", .fixRequest),
            ("MissingTopic", .fixRequest), ("TopicMismatch", .fixRequest), ("Forbidden", .fixRequest),
        ]
    )
    func dispositions(_ raw: String, _ disposition: APNSErrorReason.Disposition) {
        #expect(APNSErrorReason(rawValue: raw).disposition == disposition)
    }

    @Test("Reconnect-first reasons")
    func newConnection() {
        let reconnect = APNSErrorReason.allKnown.filter(\.requiresNewConnection).map(\.rawValue).sorted()
        #expect(reconnect == ["IdleTimeout", "Shutdown", "UnrelatedKeyIdInToken"])
    }

    @Test("Unknown reasons are kept verbatim and classified by status")
    func unknown() {
        let reason = APNSErrorReason(rawValue: "SomethingNew")
        #expect(!reason.isKnown)
        #expect(reason.rawValue == "SomethingNew")
        #expect(reason.status == nil && reason.disposition == nil)
        #expect(reason != APNSErrorReason(rawValue: "SomethingElse"))
        #expect(reason == APNSErrorReason(rawValue: "SomethingNew"))
        #expect(APNSErrorReason(rawValue: "badDeviceToken").isKnown == false)  // case matters on the wire
        typealias D = APNSErrorReason.Disposition
        #expect(D.forUnknownReason(status: 500) == .retryLater)
        #expect(D.forUnknownReason(status: 503) == .retryLater)
        #expect(D.forUnknownReason(status: 429) == .retryLater)
        #expect(D.forUnknownReason(status: 410) == .dropToken)
        #expect(D.forUnknownReason(status: 400) == .fixRequest)
        #expect(D.forUnknownReason(status: 403) == .fixRequest)
    }
}

@Suite("Responses")
struct ResponseTests {
    private func headers(_ pairs: [(String, String)]) -> [(name: String, value: String)] { pairs.map { (name: $0.0, value: $0.1) } }

    @Test("A 410 body's millisecond timestamp becomes the exact date")
    func unregistered() {
        let response = APNSErrorResponse(
            status: 410, headers: headers([("apns-id", "6F2A3B4C-0000-4000-8000-000000000001")]),
            body: Array(#"{"reason":"Unregistered","timestamp":1760000000123}"#.utf8)
        )
        #expect(response.reason == .unregistered)
        #expect(response.timestamp == Date(timeIntervalSince1970: 1_760_000_000.123))
        #expect(response.apnsID == "6F2A3B4C-0000-4000-8000-000000000001")
        #expect(response.disposition == .dropToken)
        #expect(response.description.hasPrefix("410 Unregistered (apns-id 6F2A3B4C-0000-4000-8000-000000000001, token invalid since 2025-10-09"))
    }

    @Test(
        "Bodies of every shape parse without trapping",
        arguments: [
            ("", "", false), ("not json", "", false), ("[]", "", false), (#"{"reason":42}"#, "", false),
            (#"{"reason":"BadTopic","extra":{"a":[1]}}"#, "BadTopic", false),
            (#"{"reason":"Unregistered","timestamp":"1760000000000"}"#, "Unregistered", true),
            (#"{"reason":"Unregistered","timestamp":true}"#, "Unregistered", false),
            (#"{"reason":"Unregistered","timestamp":1}"#, "Unregistered", true),
            (#"{"reason":"Unregistered","timestamp":0}"#, "Unregistered", true),
            (#"{"reason":"Unregistered","timestamp":1e300}"#, "Unregistered", false),
            (#"{"reason":"Unregistered","timestamp":-5}"#, "Unregistered", false),
            ("{\"reason\":\"Bad\u{0}\"", "", false),
        ]
    )
    func bodies(_ body: String, _ reason: String, _ hasTimestamp: Bool) {
        let response = APNSErrorResponse(status: 410, headers: headers([]), body: Array(body.utf8))
        #expect(response.reason.rawValue == reason)
        #expect((response.timestamp != nil) == hasTimestamp)
    }

    @Test("Without a reason the status decides the disposition")
    func noReason() {
        #expect(APNSErrorResponse(status: 503, headers: headers([]), body: [UInt8]()).disposition == .retryLater)
        #expect(APNSErrorResponse(status: 400, headers: headers([]), body: [UInt8]()).description == "400 (no reason)")
    }

    @Test("A rejection's apns-* headers are read case-insensitively, verbatim")
    func headersOfARejection() {
        let response = APNSErrorResponse(
            status: 400,
            headers: headers([
                ("APNS-ID", "123E4567-E89B-12D3-A456-426614174000"), ("apns-unique-id", " u-1 "),
                ("Apns-Request-Id", "r-1"), ("apns-channel-id", "dHJhY2tpbmc="), ("content-length", "0"),
            ]),
            body: Array(#"{"reason":"BadDeviceToken"}"#.utf8)
        )
        #expect(response.apnsID == "123E4567-E89B-12D3-A456-426614174000")
        #expect(response.apnsUniqueID == " u-1 ")
        #expect(response.apnsRequestID == "r-1")
        #expect(response.reason == .badDeviceToken)
    }

    @Test("Millisecond timestamps survive parse and jsonBody, including ones a Double stores a hair low",
          arguments: [2_150_000_000_002, 1_080_000_000_001, 4, 1_760_000_000_123, 1_700_000_000_000])
    func millisecondRoundTrip(_ milliseconds: Int64) {
        let body = #"{"reason":"Unregistered","timestamp":\#(milliseconds)}"#
        let parsed = APNSErrorResponse(status: 410, headers: headers([]), body: Array(body.utf8))
        #expect(String(decoding: parsed.jsonBody(), as: UTF8.self) == body)
    }

    @Test("jsonBody is what APNs sends and parses back", arguments: [nil, Date(timeIntervalSince1970: 1_760_000_000.123)])
    func jsonBody(_ timestamp: Date?) {
        let reason: APNSErrorReason = timestamp == nil ? .badDeviceToken : .unregistered
        let response = APNSErrorResponse(status: timestamp == nil ? 400 : 410, reason: reason, timestamp: timestamp)
        let body = String(decoding: response.jsonBody(), as: UTF8.self)
        #expect(body == (timestamp == nil ? #"{"reason":"BadDeviceToken"}"# : #"{"reason":"Unregistered","timestamp":1760000000123}"#))
        let parsed = APNSErrorResponse(status: response.status, headers: headers([]), body: response.jsonBody())
        #expect(parsed == response)
        #expect(parsed.timestamp == timestamp)
    }
}
