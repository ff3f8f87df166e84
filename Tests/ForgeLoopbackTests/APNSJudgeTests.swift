import ForgeAPNsCore
@testable import ForgeLoopback
import Foundation
import Testing

private let token = String(repeating: "ab", count: 32)
private let body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

private func request(
    method: String = "POST",
    path: String = "/3/device/" + token,
    headers: [(String, String)] = [("apns-topic", "com.example.app"), ("apns-push-type", "alert")],
    body: [UInt8] = body
) -> APNSJudge.Request {
    APNSJudge.Request(method: method, path: path, headers: headers.map { (name: $0.0, value: $0.1) }, body: body)
}

private func replacing(_ name: String, with value: String?) -> [(String, String)] {
    var headers = [("apns-topic", "com.example.app"), ("apns-push-type", "alert")].filter { $0.0 != name }
    if let value { headers.append((name, value)) }
    return headers
}

@Suite("Local APNs judge: request shape, payload, token state")
struct APNSJudgeTests {
    let judge = APNSJudge()

    func judged(_ request: APNSJudge.Request) -> APNSDecision {
        var judge = self.judge
        return judge.judge(request)
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var row: String
        var request: APNSJudge.Request
        var status: Int
        var reason: String
        var testDescription: String { "\(self.row) -> \(self.status) \(self.reason)" }
    }

    static let rows: [Row] = [
        Row(row: "R1 apns-id not a UUID", request: request(headers: replacing("apns-id", with: "42")), status: 400, reason: "BadMessageId"),
        Row(row: "R2 method not POST", request: request(method: "GET"), status: 405, reason: "MethodNotAllowed"),
        Row(row: "R3 header repeated", request: request(headers: replacing("apns-priority", with: "10") + [("apns-priority", "5")]),
            status: 400, reason: "DuplicateHeaders"),
        Row(row: "R4 topic absent", request: request(headers: replacing("apns-topic", with: nil)), status: 400, reason: "MissingTopic"),
        Row(row: "R5 collapse id over 64 bytes", request: request(headers: replacing("apns-collapse-id", with: String(repeating: "x", count: 65))),
            status: 400, reason: "BadCollapseId"),
        Row(row: "R6 priority not 10/5/1", request: request(headers: replacing("apns-priority", with: "7")), status: 400, reason: "BadPriority"),
        Row(row: "R7 push type unknown", request: request(headers: replacing("apns-push-type", with: "notification")), status: 400,
            reason: "InvalidPushType"),
        Row(row: "R8 expiration not an integer", request: request(headers: replacing("apns-expiration", with: "soon")), status: 400,
            reason: "BadExpirationDate"),
        Row(row: "R9 path without token", request: request(path: "/3/device/"), status: 400, reason: "MissingDeviceToken"),
        Row(row: "R10 path elsewhere", request: request(path: "/2/device/" + token), status: 404, reason: "BadPath"),
        Row(row: "R11 token not hex", request: request(path: "/3/device/" + String(repeating: "zz", count: 32)), status: 400,
            reason: "BadDeviceToken"),
        Row(row: "R11 token too short", request: request(path: "/3/device/abcd"), status: 400, reason: "BadDeviceToken"),
        Row(row: "R12 background with priority 10",
            request: request(headers: [("apns-topic", "com.example.app"), ("apns-push-type", "background"), ("apns-priority", "10")]),
            status: 400, reason: "BadPriority"),
        Row(row: "R12 topic suffix of another type",
            request: request(headers: [("apns-topic", "com.example.app.voip"), ("apns-push-type", "alert")]),
            status: 400, reason: "DeviceTokenNotForTopic"),
        Row(row: "P1 empty body", request: request(body: []), status: 400, reason: "PayloadEmpty"),
        Row(row: "P2 body over 4096", request: request(body: Array(repeating: 0x20, count: 4097)), status: 413, reason: "PayloadTooLarge"),
    ]

    @Test("One fault per request gets Apple's status and reason", arguments: rows)
    func row(_ row: Row) {
        let verdict = self.judged(row.request)
        #expect(verdict.status == row.status)
        #expect(verdict.reason?.rawValue == row.reason)
        #expect(!verdict.apnsID.isEmpty)
    }

    @Test("P2 is per push type: VoIP may carry 5120 bytes, not 5121")
    func voipLimit() {
        let headers = [("apns-topic", "com.example.app.voip"), ("apns-push-type", "voip")]
        #expect(self.judged(request(headers: headers, body: Array(repeating: 0x20, count: 5120))).isAccepted)
        #expect(self.judged(request(headers: headers, body: Array(repeating: 0x20, count: 5121))).status == 413)
    }

    @Test("OK: 200 with the echoed apns-id, and apns-unique-id in sandbox only")
    func accepted() {
        let id = "123e4567-e89b-12d3-a456-426614174000"
        let verdict = self.judged(request(headers: replacing("apns-id", with: id)))
        #expect(verdict.isAccepted && verdict.apnsID == id && verdict.apnsUniqueID != nil)
        var production = self.judge
        production.configuration.environment = .production
        let generated = production.judge(request())
        #expect(generated.isAccepted && generated.apnsUniqueID == nil)
        #expect(generated.apnsID == generated.apnsID.uppercased() && (try? APNSID(generated.apnsID)) != nil)
    }

    @Test("R12 rules are configurable")
    func configurable() {
        var lenient = self.judge
        lenient.configuration.backgroundPriorityTenReason = nil
        lenient.configuration.topicSuffixMismatchReason = nil
        #expect(lenient.judge(request(headers: [("apns-topic", "com.example.app"), ("apns-push-type", "background"), ("apns-priority", "10")])).isAccepted)
        #expect(lenient.judge(request(headers: [("apns-topic", "com.example.app.voip"), ("apns-push-type", "alert")])).isAccepted)
    }

    @Test("D1-D4: registered topic and environment, unregistered and expired at a time")
    func tokenState() {
        let when = Date(timeIntervalSince1970: 1_760_000_000.123)
        let other = String(repeating: "cd", count: 32)
        let sandbox = String(repeating: "ef", count: 32)
        let gone = String(repeating: "01", count: 32)
        let expired = String(repeating: "02", count: 32)
        var judge = APNSJudge(configuration: LocalAPNSConfiguration(environment: .production), tokens: [
            other: LocalAPNSTokenRecord(bundleID: "com.other.app", environment: .production),
            sandbox: LocalAPNSTokenRecord(bundleID: "com.example.app", environment: .sandbox),
            gone: LocalAPNSTokenRecord(bundleID: "com.example.app", environment: .production, state: .unregistered(when)),
            expired: LocalAPNSTokenRecord(bundleID: "com.example.app", environment: .production, state: .expired(when)),
            token: LocalAPNSTokenRecord(bundleID: "com.example.app", environment: .production),
        ])
        #expect(judge.judge(request(path: "/3/device/" + other)).reason == .deviceTokenNotForTopic)
        #expect(judge.judge(request(path: "/3/device/" + sandbox)).reason == .badDeviceToken)
        let unregistered = judge.judge(request(path: "/3/device/" + gone))
        #expect(unregistered.status == 410 && unregistered.reason == .unregistered && unregistered.timestamp == when)
        let expiredVerdict = judge.judge(request(path: "/3/device/" + expired))
        #expect(expiredVerdict.status == 410 && expiredVerdict.reason == .expiredToken)
        #expect(judge.judge(request()).isAccepted)
        // A Live Activity topic carries its suffix; the registry holds the bundle id.
        #expect(judge.judge(request(headers: [("apns-topic", "com.example.app.push-type.liveactivity"), ("apns-push-type", "liveactivity")])).isAccepted)
        judge.configuration.acceptsUnknownTokens = false
        #expect(judge.judge(request(path: "/3/device/" + String(repeating: "99", count: 32))).reason == .badDeviceToken)
    }

    @Test("P3: malformed JSON or no aps is accepted, with a lint note only")
    func lint() {
        let noAPS = self.judged(request(body: Array(#"{"custom":1}"#.utf8)))
        #expect(noAPS.isAccepted && noAPS.lint == "no \"aps\" key" && noAPS.warning == nil)
        let accepted = self.judged(request())
        #expect(accepted.lint == nil && accepted.warning == nil)
    }

    @Test("P3 in a row on one judge: each body gets its own findings (the last body's are reused only for the same bytes)")
    func findingsInARow() {
        var judge = self.judge
        let bodies: [(body: [UInt8], lint: String?, warning: String?)] = [
            (Array(#"{"aps":{"alert":"Hi"}}"#.utf8), nil, nil),
            (Array(#"{"aps":{"alert":"Hi"}}"#.utf8), nil, nil),
            (Array(#"{"custom":1}"#.utf8), "no \"aps\" key", nil),
            (Array(#"{"custom":1}"#.utf8), "no \"aps\" key", nil),
            (Array(#"{"aps":{"alert":"Hi"}}"#.utf8), nil, nil),
            (Array("{not json".utf8), nil, "body is not valid JSON: unexpected 'n' at column 2 (expected a key)"),
            (Array(#"{"custom":"aps"}"#.utf8), "no \"aps\" key", nil),
            (Array(#"{"custom":{"aps" : 1}}"#.utf8), nil, nil),
        ]
        for (index, expected) in bodies.enumerated() {
            let verdict = judge.judge(request(body: expected.body))
            #expect(verdict.isAccepted && verdict.lint == expected.lint && verdict.warning == expected.warning, "body \(index)")
        }
    }

    @Test("Topic suffixes compare byte for byte: empty, equal, longer than the topic, after non-ASCII text, substrings")
    func endsWith() {
        #expect(APNSJudge.endsWith("com.example.app.voip", ".voip"))
        #expect(APNSJudge.endsWith("com.example.app", ""))
        #expect(APNSJudge.endsWith(".voip", ".voip"))
        #expect(!APNSJudge.endsWith("voip", ".voip"))
        #expect(!APNSJudge.endsWith("com.example.app.voipx", ".voip"))
        #expect(APNSJudge.endsWith("com.exämple.日本.complication", ".complication"))
        #expect(!APNSJudge.endsWith("com.example.app.complicatio", ".complication"))
        let built = String(repeating: "x", count: 40) + ".push-type.liveactivity"
        #expect(APNSJudge.endsWith(built, ".push-type.liveactivity"))
        #expect(APNSJudge.endsWith(Substring(built).description, "liveactivity"))
    }

    struct UnreadableBody: Sendable, CustomTestStringConvertible {
        var bytes: [UInt8]
        var warning: String
        var testDescription: String { String(decoding: self.bytes, as: UTF8.self) }
        init(_ bytes: [UInt8], _ warning: String) {
            self.bytes = bytes
            self.warning = warning
        }
    }

    @Test(
        "P3: a body a device cannot read is accepted with a warning that says why",
        arguments: [
            UnreadableBody(Array("{not json".utf8), "body is not valid JSON: unexpected 'n' at column 2 (expected a key)"),
            UnreadableBody(Array(#"{"aps":{"alert":{"title":"Hi"}}{"#.utf8), "body is not valid JSON: unexpected '{' at column 32 (expected ',' or '}')"),
            UnreadableBody(Array(#"{"aps":{"badge":1e999}}"#.utf8), "body is not valid JSON: the number 1e999 at column 17 is too large for a 64-bit double"),
            UnreadableBody(Array(#"{"aps":{"alert":""#.utf8) + [0xC3, 0x28] + Array(#""}}"#.utf8), "body is not UTF-8: bytes 0xc3 0x28 at column 18 are not UTF-8"),
            UnreadableBody(Array(#"[{"aps":{}}]"#.utf8), "body is not a JSON object: the top level is an array, not an object"),
        ]
    )
    func warning(_ body: UnreadableBody) {
        let verdict = self.judged(request(body: body.bytes))
        #expect(verdict.isAccepted)
        #expect(verdict.warning == body.warning)
        #expect(verdict.lint == nil)
    }
}
