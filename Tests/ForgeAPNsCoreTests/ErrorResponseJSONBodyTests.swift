import ForgeAPNsCore
import Foundation
import Testing

private let noHeaders: [(name: String, value: String)] = []

/// Parses what `jsonBody()` wrote, as the client would after the local server sent it.
private func reparse(_ response: APNSErrorResponse) -> APNSErrorResponse {
    APNSErrorResponse(status: response.status, headers: noHeaders, body: response.jsonBody())
}

private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

@Suite("Error response bodies written for the local server")
struct ErrorResponseJSONBodyTests {
    @Test("Every known reason is written as APNs writes it and parses back equal", arguments: APNSErrorReason.allKnown)
    func everyReason(_ reason: APNSErrorReason) throws {
        let status = try #require(reason.status)
        let response = APNSErrorResponse(status: status, reason: reason)
        #expect(text(response.jsonBody()) == #"{"reason":"\#(reason.rawValue)"}"#)
        let parsed = reparse(response)
        #expect(parsed == response)
        // Equality folds the BadEnvironmentKey spellings, so check the spelling survived too.
        #expect(parsed.reason.rawValue == reason.rawValue)
        #expect(parsed.timestamp == nil)
    }

    @Test(
        "410 bodies carry the timestamp as integer milliseconds and parse back to the same Date",
        arguments: [Int64(1_760_000_000_123), 1_760_000_000_000, 1_700_000_000_999, 1_893_456_000_001]
    )
    func withTimestamp(_ milliseconds: Int64) {
        let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        for reason in [APNSErrorReason.unregistered, .expiredToken] {
            let response = APNSErrorResponse(status: 410, reason: reason, timestamp: date)
            #expect(text(response.jsonBody()) == #"{"reason":"\#(reason.rawValue)","timestamp":\#(milliseconds)}"#)
            let parsed = reparse(response)
            #expect(parsed == response)
            #expect(parsed.timestamp == date)
        }
    }

    @Test("A Date with sub-millisecond precision is written as whole milliseconds")
    func subMillisecond() {
        let response = APNSErrorResponse(
            status: 410, reason: .unregistered, timestamp: Date(timeIntervalSince1970: 1_760_000_000.1234)
        )
        #expect(text(response.jsonBody()) == #"{"reason":"Unregistered","timestamp":1760000000123}"#)
    }

    @Test("Millisecond timestamps from 2020 to 2030 survive parse → jsonBody unchanged")
    func decadeSweep() {
        // Deterministic: about 20,000 evenly spaced instants (a prime step, so every digit position moves).
        var mismatches: [Int64] = []
        for milliseconds in stride(from: Int64(1_577_836_800_000), to: 1_893_456_000_000, by: 15_778_001) {
            let body = #"{"reason":"Unregistered","timestamp":\#(milliseconds)}"#
            let parsed = APNSErrorResponse(status: 410, headers: noHeaders, body: Array(body.utf8))
            if text(parsed.jsonBody()) != body { mismatches.append(milliseconds) }
        }
        #expect(mismatches.isEmpty, "first mismatches: \(mismatches.prefix(5))")
    }

    @Test("Millisecond values a Double stores a hair low still come back exact")
    func truncationOutsideTheDecade() {
        // The round trip through Date can land just below the integer (1080000000001 -> ...000.9999999);
        // jsonBody() rounds to nearest so no millisecond is lost (found by sweeping 1970-2100).
        for milliseconds: Int64 in [2_150_000_000_002, 1_080_000_000_001, 4] {
            let body = #"{"reason":"Unregistered","timestamp":\#(milliseconds)}"#
            let parsed = APNSErrorResponse(status: 410, headers: noHeaders, body: Array(body.utf8))
            #expect(parsed.timestamp == Date(timeIntervalSince1970: Double(milliseconds) / 1000))
            #expect(text(parsed.jsonBody()) == body)
        }
    }

    @Test(
        "Reasons that need escaping are written as valid JSON and read back verbatim",
        arguments: [
            "", "Bad\"Topic", #"Back\slash"#, "New\nLine", "Tab\tCarriage\r", "Control\u{01}\u{1F}", "Nul\u{0}",
            "Désolé", "🚫 emoji", "</script>", String(repeating: "x", count: 4096),
        ]
    )
    func escaping(_ raw: String) throws {
        let response = APNSErrorResponse(status: 400, reason: APNSErrorReason(rawValue: raw))
        let body = response.jsonBody()
        // Foundation agrees it is one JSON object whose reason is the string.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(object.count == 1)
        #expect(object["reason"] as? String == raw)
        // And our own parser reads it back unchanged.
        #expect(reparse(response).reason.rawValue == raw)
        #expect(!body.contains { $0 < 0x20 })
    }

    @Test("Only reason and timestamp are written; ids travel in headers")
    func noHeadersInBody() {
        let response = APNSErrorResponse(
            status: 400, reason: .badTopic, apnsID: "6F2A3B4C-0000-4000-8000-000000000001", apnsRequestID: "R",
            apnsUniqueID: "U"
        )
        #expect(text(response.jsonBody()) == #"{"reason":"BadTopic"}"#)
    }
}
