import ForgeAPNsCore
import Foundation
import Testing

private let noHeaders: [(name: String, value: String)] = []

private func rejection(_ body: String, status: Int = 410) -> APNSErrorResponse {
    APNSErrorResponse(status: status, headers: noHeaders, body: Array(body.utf8))
}

/// A body case: what arrives, and the reason and timestamp (milliseconds) the parser must make of it.
private struct BodyCase: Sendable, CustomTestStringConvertible {
    let label: String
    let bytes: [UInt8]
    let reason: String
    let milliseconds: Int64?

    init(_ label: String, _ bytes: [UInt8], reason: String, milliseconds: Int64? = nil) {
        self.label = label
        self.bytes = bytes
        self.reason = reason
        self.milliseconds = milliseconds
    }

    init(_ label: String, _ text: String, reason: String, milliseconds: Int64? = nil) {
        self.init(label, Array(text.utf8), reason: reason, milliseconds: milliseconds)
    }

    var testDescription: String { self.label }
}

private let bodyCases: [BodyCase] = [
    // APNs' own shapes (§3.1).
    BodyCase("reason only", #"{"reason":"BadDeviceToken"}"#, reason: "BadDeviceToken"),
    BodyCase("410 with ms", #"{"reason":"Unregistered","timestamp":1760000000123}"#, reason: "Unregistered", milliseconds: 1_760_000_000_123),
    BodyCase("timestamp first", #"{"timestamp":1760000000123,"reason":"ExpiredToken"}"#, reason: "ExpiredToken", milliseconds: 1_760_000_000_123),
    BodyCase("whitespace", " {\n \"reason\" : \"Unregistered\" ,\t\"timestamp\" : 1760000000000 }\n", reason: "Unregistered", milliseconds: 1_760_000_000_000),
    // Tolerated variations.
    BodyCase("numeric-string timestamp", #"{"reason":"Unregistered","timestamp":"1760000000123"}"#, reason: "Unregistered", milliseconds: 1_760_000_000_123),
    BodyCase("fractional timestamp", #"{"reason":"Unregistered","timestamp":1760000000123.0}"#, reason: "Unregistered", milliseconds: 1_760_000_000_123),
    BodyCase("extra keys", #"{"reason":"BadTopic","detail":{"a":[1,2,{"b":null}]},"n":1.5}"#, reason: "BadTopic"),
    BodyCase("unknown reason", #"{"reason":"SomethingNew"}"#, reason: "SomethingNew"),
    BodyCase("escaped reason", #"{"reason":"Bad\"Topic\\\u00e9"}"#, reason: "Bad\"Topic\\é"),
    BodyCase("byte-order mark", [0xEF, 0xBB, 0xBF] + Array(#"{"reason":"BadTopic"}"#.utf8), reason: "BadTopic"),
    // Missing or garbled bodies: an empty, unknown reason and no timestamp.
    BodyCase("empty body", "", reason: ""),
    BodyCase("not JSON", "not json", reason: ""),
    BodyCase("HTML error page", "<html><body>502 Bad Gateway</body></html>", reason: ""),
    BodyCase("top-level array", #"["Unregistered"]"#, reason: ""),
    BodyCase("top-level string", #""Unregistered""#, reason: ""),
    BodyCase("empty object", "{}", reason: ""),
    BodyCase("truncated", #"{"reason":"Unregis"#, reason: ""),
    BodyCase("reason null", #"{"reason":null}"#, reason: ""),
    BodyCase("reason number", #"{"reason":42}"#, reason: ""),
    BodyCase("reason object", #"{"reason":{"code":"BadTopic"}}"#, reason: ""),
    BodyCase("invalid UTF-8", [0xFF, 0xFE, 0x7B, 0x00, 0xC3], reason: ""),
    BodyCase("lone surrogate", #"{"reason":"\uD800"}"#, reason: ""),
    BodyCase("NUL bytes", [0x00, 0x00, 0x00, 0x00], reason: ""),
    BodyCase("deep nesting", "{\"reason\":" + String(repeating: "[", count: 60_000), reason: ""),
    BodyCase("deep objects", String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000), reason: ""),
    BodyCase("over 64 KiB", "{\"reason\":\"" + String(repeating: "x", count: 70_000) + "\"}", reason: ""),
    // Timestamps that are not a usable time are dropped; the reason survives.
    BodyCase("timestamp true", #"{"reason":"Unregistered","timestamp":true}"#, reason: "Unregistered"),
    BodyCase("timestamp null", #"{"reason":"Unregistered","timestamp":null}"#, reason: "Unregistered"),
    BodyCase("timestamp array", #"{"reason":"Unregistered","timestamp":[1760000000123]}"#, reason: "Unregistered"),
    BodyCase("timestamp negative", #"{"reason":"Unregistered","timestamp":-5}"#, reason: "Unregistered"),
    BodyCase("timestamp 1e300", #"{"reason":"Unregistered","timestamp":1e300}"#, reason: "Unregistered"),
    BodyCase("timestamp past Int64", #"{"reason":"Unregistered","timestamp":99999999999999999999999}"#, reason: "Unregistered"),
    BodyCase("timestamp 1e16", #"{"reason":"Unregistered","timestamp":1e16}"#, reason: "Unregistered"),
    BodyCase("timestamp \"nan\"", #"{"reason":"Unregistered","timestamp":"nan"}"#, reason: "Unregistered"),
    BodyCase("timestamp \"inf\"", #"{"reason":"Unregistered","timestamp":"inf"}"#, reason: "Unregistered"),
    BodyCase("timestamp words", #"{"reason":"Unregistered","timestamp":"yesterday"}"#, reason: "Unregistered"),
    BodyCase("timestamp empty string", #"{"reason":"Unregistered","timestamp":""}"#, reason: "Unregistered"),
]

@Suite("Error response bodies")
struct ErrorResponseBodyTests {
    @Test("Every body shape parses without trapping", arguments: bodyCases)
    fileprivate func bodies(_ bodyCase: BodyCase) {
        let response = APNSErrorResponse(status: 410, headers: noHeaders, body: bodyCase.bytes)
        #expect(response.status == 410)
        #expect(response.reason.rawValue == bodyCase.reason)
        #expect(response.reason.isKnown == APNSErrorReason.allKnown.contains { $0.rawValue == bodyCase.reason })
        #expect(response.timestamp == bodyCase.milliseconds.map { Date(timeIntervalSince1970: Double($0) / 1000) })
    }

    @Test(
        "A 410 millisecond timestamp becomes the exact Date, as a number or a numeric string",
        arguments: [Int64(1_760_000_000_123), 1_760_000_000_000, 1_700_000_000_999, 978_307_200_000, 86_400_001, 2]
    )
    func exactDate(_ milliseconds: Int64) {
        let expected = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let number = rejection(#"{"reason":"Unregistered","timestamp":\#(milliseconds)}"#)
        let string = rejection(#"{"reason":"Unregistered","timestamp":"\#(milliseconds)"}"#)
        #expect(number.timestamp == expected)
        #expect(string.timestamp == expected)
        #expect(number == string)
    }

    @Test("The timestamp is milliseconds, not seconds (§3.1, §9.6)")
    func millisecondsNotSeconds() throws {
        let response = rejection(#"{"reason":"Unregistered","timestamp":1760000000123}"#)
        let timestamp = try #require(response.timestamp)
        #expect(timestamp.timeIntervalSince1970 == 1_760_000_000.123)
        #expect(response.description.contains("2025-10-09T08:53:20Z"))
    }

    @Test("A numeric timestamp of 0 or 1 ms is read like its string form")
    func tinyTimestamps() {
        // On Linux a JSON 0 or 1 also matches `is Bool`; the parser must still read them as numbers.
        for value in [0, 1] {
            #expect(rejection(#"{"reason":"Unregistered","timestamp":"\#(value)"}"#).timestamp != nil)
            #expect(rejection(#"{"reason":"Unregistered","timestamp":\#(value)}"#).timestamp != nil)
        }
    }

    @Test("Any Collection of bytes works: a slice with a non-zero start index, Data, a UTF8View")
    func collections() {
        let framed = Array(#"xx{"reason":"BadTopic"}yy"#.utf8)
        let slice = framed[2..<(framed.count - 2)]
        #expect(APNSErrorResponse(status: 400, headers: noHeaders, body: slice).reason == .badTopic)
        #expect(APNSErrorResponse(status: 400, headers: noHeaders, body: Data(#"{"reason":"BadTopic"}"#.utf8)).reason == .badTopic)
        #expect(APNSErrorResponse(status: 400, headers: noHeaders, body: #"{"reason":"BadTopic"}"#.utf8).reason == .badTopic)
    }

    @Test("Headers of a rejection are read case-insensitively and kept verbatim")
    func rejectionHeaders() {
        let response = APNSErrorResponse(
            status: 400,
            headers: [
                (name: "Content-Type", value: "application/json"), (name: "APNS-ID", value: "6F2A3B4C-0000-4000-8000-00000000000A"),
                (name: "Apns-Request-Id", value: "r-1"), (name: "apns-UNIQUE-id", value: "u-1"),
            ],
            body: Array(#"{"reason":"BadTopic"}"#.utf8)
        )
        #expect(response.apnsID == "6F2A3B4C-0000-4000-8000-00000000000A")
        #expect(response.apnsRequestID == "r-1")
        #expect(response.apnsUniqueID == "u-1")
        #expect(response.reason == .badTopic)
    }

    @Test("Status is kept even when the body disagrees, and the known reason decides the disposition")
    func statusAndReasonDisagree() {
        let response = rejection(#"{"reason":"BadDeviceToken"}"#, status: 500)
        #expect(response.status == 500)
        #expect(response.disposition == .dropToken)
        let unknown = rejection(#"{"reason":"SomethingNew"}"#, status: 500)
        #expect(unknown.disposition == .retryLater)
    }

    @Test("A rejection is an Error that can be caught and matched on its disposition")
    func thrownAndCaught() {
        func send() throws { throw rejection(#"{"reason":"Unregistered","timestamp":1760000000123}"#) }
        do {
            try send()
            Issue.record("expected a rejection")
        } catch let rejection as APNSErrorResponse where rejection.disposition == .dropToken {
            #expect(rejection.reason == .unregistered)
            #expect(rejection.timestamp != nil)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

@Suite("Error response descriptions")
struct ErrorResponseDescriptionTests {
    @Test("410 names the reason, the apns-id and when the token stopped being valid")
    func unregistered() {
        let response = APNSErrorResponse(
            status: 410, headers: [(name: "apns-id", value: "6F2A3B4C-0000-4000-8000-000000000001")],
            body: Array(#"{"reason":"Unregistered","timestamp":1760000000123}"#.utf8)
        )
        #expect(
            response.description
                == "410 Unregistered (apns-id 6F2A3B4C-0000-4000-8000-000000000001, token invalid since 2025-10-09T08:53:20Z)"
        )
    }

    @Test(
        "Other shapes",
        arguments: [
            (APNSErrorResponse(status: 400, reason: .badTopic), "400 BadTopic"),
            (APNSErrorResponse(status: 400, reason: APNSErrorReason(rawValue: "")), "400 (no reason)"),
            (APNSErrorResponse(status: 418, reason: APNSErrorReason(rawValue: "Teapot")), "418 Teapot"),
            (APNSErrorResponse(status: 403, reason: .badEnvironmentKeyIDInToken), "403 BadEnvironmentKeyIdInToken"),
            (APNSErrorResponse(status: 403, reason: .badEnvironmentKeyInToken), "403 BadEnvironmentKeyInToken"),
        ]
    )
    func shapes(_ response: APNSErrorResponse, _ expected: String) {
        #expect(response.description == expected)
    }

    @Test("A broadcast rejection's request id appears in the description")
    func broadcastRequestID() {
        let response = APNSErrorResponse(status: 400, reason: .channelNotRegistered, apnsRequestID: "R-1")
        #expect(response.description.hasPrefix("400 ChannelNotRegistered ("))
        #expect(response.description.contains("R-1"))
    }
}
