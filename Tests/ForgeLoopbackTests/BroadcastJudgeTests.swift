import ForgeAPNsCore
import ForgeLoopback
import Foundation
import Testing

private let bundle = "com.example.app"
private let channel = "dHN0LXNyY2gtY2hubA=="
private let body = Array(#"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#.utf8)

private func broadcast(
    method: String = "POST", bundle: String = bundle, headers: [(String, String)]? = nil, body: [UInt8] = body
) -> APNSJudge.Request {
    let defaults = [("apns-channel-id", channel), ("apns-push-type", "liveactivity"), ("apns-priority", "10"), ("apns-expiration", "0")]
    return APNSJudge.Request(method: method, path: "/4/broadcasts/apps/" + bundle,
                             headers: (headers ?? defaults).map { (name: $0.0, value: $0.1) }, body: body)
}

private func without(_ name: String, adding extra: [(String, String)] = []) -> [(String, String)] {
    [("apns-channel-id", channel), ("apns-push-type", "liveactivity"), ("apns-priority", "10"), ("apns-expiration", "0")]
        .filter { $0.0 != name } + extra
}

private func channels(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) -> APNSJudge.Request {
    APNSJudge.Request(method: method, path: path, headers: headers.map { (name: $0.0, value: $0.1) }, body: body)
}

@Suite("Local APNs judge: broadcasts B1-B7, channel management M1-M4, rate T1")
struct BroadcastJudgeTests {
    func judge(policy: Int = 0, broadcastEnabled: Bool = true) -> APNSJudge {
        APNSJudge(
            apps: [LocalAPNSApp(bundleID: bundle, broadcastEnabled: broadcastEnabled)],
            channels: [LocalAPNSChannel(id: channel, bundleID: bundle, messageStoragePolicy: policy)]
        )
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var row: String
        var request: APNSJudge.Request
        var status: Int
        var reason: String
        var testDescription: String { "\(self.row) -> \(self.status) \(self.reason)" }
    }

    static let rows: [Row] = [
        Row(row: "B2 channel id missing", request: broadcast(headers: without("apns-channel-id")), status: 400, reason: "MissingChannelId"),
        Row(row: "B2 channel id not base64", request: broadcast(headers: without("apns-channel-id", adding: [("apns-channel-id", "not base64!")])),
            status: 400, reason: "BadChannelId"),
        Row(row: "B2 channel unknown", request: broadcast(headers: without("apns-channel-id", adding: [("apns-channel-id", "AAAAAAAAAAAAAAAAAAAAAA==")])),
            status: 400, reason: "ChannelNotRegistered"),
        Row(row: "B3 push type missing", request: broadcast(headers: without("apns-push-type")), status: 400, reason: "MissingPushType"),
        Row(row: "B3 push type not liveactivity", request: broadcast(headers: without("apns-push-type", adding: [("apns-push-type", "alert")])),
            status: 400, reason: "InvalidPushType"),
        Row(row: "B4 expiration on a No-Message-Stored channel", request: broadcast(headers: without("apns-expiration", adding: [("apns-expiration", "1760000000")])),
            status: 400, reason: "BadExpirationDate"),
        Row(row: "B4 bad priority", request: broadcast(headers: without("apns-priority", adding: [("apns-priority", "7")])),
            status: 400, reason: "BadPriority"),
        Row(row: "B5 bundle with a push-type suffix", request: broadcast(bundle: bundle + ".push-type.liveactivity"), status: 400, reason: "TopicDisallowed"),
        Row(row: "B6 body empty", request: broadcast(body: []), status: 400, reason: "PayloadEmpty"),
        Row(row: "B6 body over 5120", request: broadcast(body: Array(repeating: 0x20, count: 5121)), status: 413, reason: "PayloadTooLarge"),
        Row(row: "broadcast request id not a UUID", request: broadcast(headers: without("", adding: [("apns-request-id", "x")])),
            status: 400, reason: "BadMessageId"),
        Row(row: "broadcast method not POST", request: broadcast(method: "GET"), status: 405, reason: "MethodNotAllowed"),
        Row(row: "M4 channel path unknown", request: channels("GET", "/1/apps/\(bundle)/channel"), status: 404, reason: "BadPath"),
        Row(row: "M4 list with POST", request: channels("POST", "/1/apps/\(bundle)/all-channels"), status: 405, reason: "MethodNotAllowed"),
        Row(row: "M4 channels with PUT", request: channels("PUT", "/1/apps/\(bundle)/channels"), status: 405, reason: "MethodNotAllowed"),
        Row(row: "M1 create, body not JSON", request: channels("POST", "/1/apps/\(bundle)/channels", body: Array("{".utf8)),
            status: 400, reason: "BadRequestPayload"),
        Row(row: "M1 create, unknown key", request: channels("POST", "/1/apps/\(bundle)/channels",
            body: Array(#"{"message-storage-policy":0,"push-type":"LiveActivity","colour":"red"}"#.utf8)), status: 400, reason: "BadRequestParams"),
        Row(row: "M1 create, policy 2", request: channels("POST", "/1/apps/\(bundle)/channels",
            body: Array(#"{"message-storage-policy":2,"push-type":"LiveActivity"}"#.utf8)), status: 400, reason: "BadRequestParams"),
        Row(row: "read without a channel id", request: channels("GET", "/1/apps/\(bundle)/channels"), status: 400, reason: "MissingChannelId"),
        Row(row: "delete of an unknown channel", request: channels("DELETE", "/1/apps/\(bundle)/channels",
            headers: [("apns-channel-id", "AAAAAAAAAAAAAAAAAAAAAA==")]), status: 400, reason: "ChannelNotRegistered"),
    ]

    @Test("One fault per request gets Apple's status and reason, with apns-request-id", arguments: rows)
    func row(_ row: Row) {
        var judge = self.judge()
        let verdict = judge.judge(row.request)
        #expect(verdict.status == row.status)
        #expect(verdict.reason?.rawValue == row.reason)
        #expect(verdict.idHeader == "apns-request-id" && !verdict.apnsID.isEmpty)
    }

    @Test("B1: the Broadcast capability off -> FeatureNotEnabled, for broadcasts and channels")
    func capabilityOff() {
        var judge = self.judge(broadcastEnabled: false)
        #expect(judge.judge(broadcast()).reason == .featureNotEnabled)
        #expect(judge.judge(channels("GET", "/1/apps/\(bundle)/all-channels")).reason == .featureNotEnabled)
    }

    @Test("B7: 200 with the echoed apns-request-id and an apns-unique-id; policy 1 takes an expiration")
    func success() {
        var judge = self.judge()
        let id = "123e4567-e89b-12d3-a456-426614174000"
        let verdict = judge.judge(broadcast(headers: without("", adding: [("apns-request-id", id)])))
        #expect(verdict.status == 200 && verdict.apnsID == id && verdict.apnsUniqueID != nil)
        #expect(verdict.target == .broadcast(bundleID: bundle, channelID: channel))
        var stored = self.judge(policy: 1)
        #expect(stored.judge(broadcast(headers: without("apns-expiration", adding: [("apns-expiration", "1760000000")]))).isAccepted)
    }

    @Test("M2, M3: create, read, list, delete; a deleted channel is gone")
    func channelLifecycle() throws {
        var judge = APNSJudge()
        let created = judge.judge(channels("POST", "/1/apps/\(bundle)/channels",
                                           body: Array(#"{"message-storage-policy":1,"push-type":"LiveActivity"}"#.utf8)))
        #expect(created.status == 201 && created.body.isEmpty && created.idHeader == "apns-request-id")
        let id = try #require(created.headers.first { $0.name == "apns-channel-id" }?.value)
        #expect((try? APNSChannelID(id)) != nil)
        let read = judge.judge(channels("GET", "/1/apps/\(bundle)/channels", headers: [("apns-channel-id", id)]))
        #expect(read.status == 200)
        #expect(String(decoding: read.body, as: UTF8.self) == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
        let list = judge.judge(channels("GET", "/1/apps/\(bundle)/all-channels"))
        #expect(list.status == 200 && String(decoding: list.body, as: UTF8.self) == #"{"channels":["\#(id)"]}"#)
        // A broadcast to it is accepted while it exists.
        #expect(judge.judge(broadcast(headers: [("apns-channel-id", id), ("apns-push-type", "liveactivity")])).isAccepted)
        #expect(judge.judge(channels("DELETE", "/1/apps/\(bundle)/channels", headers: [("apns-channel-id", id)])).status == 204)
        #expect(judge.judge(channels("GET", "/1/apps/\(bundle)/channels", headers: [("apns-channel-id", id)])).reason == .channelNotRegistered)
        #expect(String(decoding: judge.judge(channels("GET", "/1/apps/\(bundle)/all-channels")).body, as: UTF8.self) == #"{"channels":[]}"#)
    }

    @Test("M1: past the channel limit -> CannotCreateChannelConfig")
    func channelLimit() {
        var judge = APNSJudge(configuration: LocalAPNSConfiguration(channelLimit: 2))
        let create = channels("POST", "/1/apps/\(bundle)/channels", body: Array(#"{"message-storage-policy":0,"push-type":"LiveActivity"}"#.utf8))
        #expect(judge.judge(create).status == 201)
        #expect(judge.judge(create).status == 201)
        let third = judge.judge(create)
        #expect(third.status == 400 && third.reason == .cannotCreateChannelConfig)
    }

    @Test("T1: a burst over the per-token limit -> 429 TooManyRequests, until the window passes")
    func rateLimit() {
        var judge = APNSJudge(configuration: LocalAPNSConfiguration(perTokenRateLimit: .init(pushes: 2, seconds: 60)))
        let token = String(repeating: "ab", count: 32)
        let push = APNSJudge.Request(method: "POST", path: "/3/device/" + token,
                                     headers: [(name: "apns-topic", value: bundle)], body: Array(#"{"aps":{}}"#.utf8))
        let start = Date(timeIntervalSince1970: 1_760_000_000)
        #expect(judge.judge(push, now: start).isAccepted)
        #expect(judge.judge(push, now: start + 1).isAccepted)
        let third = judge.judge(push, now: start + 2)
        #expect(third.status == 429 && third.reason == .tooManyRequests)
        var other = push
        other.path = "/3/device/" + String(repeating: "cd", count: 32)
        #expect(judge.judge(other, now: start + 2).isAccepted)
        #expect(judge.judge(push, now: start + 61).isAccepted)
    }
}
