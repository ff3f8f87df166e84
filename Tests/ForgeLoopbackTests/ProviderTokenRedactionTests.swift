import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
@testable import ForgeLoopback
import ForgeLoopbackUI
import ForgeTestSupport
import Foundation
import Testing

private let device = String(repeating: "ab", count: 32)
private let bundle = "com.example.shop"

/// A provider token where other values belong (a client that swapped two values): what the judge
/// says, and what the inbox's JSON, API and phones show.
@Suite("A provider token in a topic, a collapse id, a device token or a payload is never shown")
struct ProviderTokenRedactionTests {
    let token = try! ExampleProviderToken()

    /// `request` judged by `judge` and kept as the server keeps it.
    func entry(
        _ judge: inout APNSJudge, path: String = "/3/device/\(device)", headers: [(String, String)],
        body: String = #"{"aps":{"alert":{"title":"Hi"}}}"#
    ) -> LocalAPNSInboxEntry {
        let request = APNSJudge.Request(method: "POST", path: path, headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(body.utf8))
        let decision = judge.judge(request)
        return LocalAPNSInboxEntry(
            date: Date(), method: "POST", path: path, headers: headers.map { HTTP2HeaderField($0.0, $0.1) }, body: request.body,
            decision: decision, why: judge.explain(decision, for: request), fault: nil, connectionID: 1, lints: []
        )
    }

    func shows(_ bytes: [UInt8]) -> Bool { self.token.isShown(in: String(decoding: bytes, as: UTF8.self)) }

    @Test("The why asks whether the topic, the collapse id or the device token was swapped with the authorization")
    func why() throws {
        var served = APNSJudge(configuration: LocalAPNSConfiguration(servedBundleIDs: [bundle]))
        let topic = self.entry(&served, headers: [("apns-topic", self.token.jwt)])
        #expect(topic.reason == .topicDisallowed)
        #expect(topic.why == "the apns-topic header holds a provider token: were the topic and the authorization swapped?")
        let collapse = self.entry(&served, headers: [("apns-topic", bundle), ("apns-collapse-id", self.token.jwt)])
        #expect(collapse.reason == .badCollapseID)
        #expect(collapse.why == "the apns-collapse-id header holds a provider token: were the collapse id and the authorization swapped?")
        let path = self.entry(&served, path: "/3/device/\(self.token.jwt)", headers: [("apns-topic", bundle)])
        #expect(path.reason == .badDeviceToken)
        #expect(path.why == "the device token in the path holds a provider token: were the device token and the authorization swapped?")

        // A token registered for another app: the topic that holds a provider token is named.
        var registered = APNSJudge(tokens: [device: LocalAPNSTokenRecord(bundleID: bundle, environment: .sandbox)])
        let other = self.entry(&registered, headers: [("apns-topic", self.token.jwt)])
        #expect(other.reason == .deviceTokenNotForTopic)
        #expect(other.why == topic.why)

        // Checked tokens, topic and authorization swapped: the authorization holds the bundle id.
        let key = try APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
        let authenticator = TokenAuthenticator(
            keys: [LocalAPNSKey(keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1"), verificationKey: key.publicKey)],
            environment: .sandbox
        )
        var checked = APNSJudge(authenticator: authenticator)
        let swapped = self.entry(&checked, headers: [("apns-topic", self.token.jwt), ("authorization", "bearer \(bundle)")])
        #expect(swapped.reason == .invalidProviderToken)
        #expect(swapped.why == topic.why)

        // Any other sentence that would quote one shows it redacted.
        let elsewhere = self.entry(&served, path: "/2/device/\(self.token.jwt)", headers: [("apns-topic", bundle)])
        #expect(elsewhere.reason == .badPath)
        #expect(elsewhere.why?.contains("eyJhbGci…(a provider token, redacted)") == true)
        for entry in [topic, collapse, path, other, swapped, elsewhere] {
            #expect(!self.token.isShown(in: entry.why ?? ""), "\(entry.why ?? "-")")
        }
    }

    @Test("An entry's JSON (the API, the event stream, --record) shows no provider token: topic, header, path, payload")
    func entryJSON() throws {
        var judge = APNSJudge()
        let accepted = self.entry(
            &judge, headers: [("apns-topic", bundle), ("x-note", "bearer \(self.token.jwt)")],
            body: #"{"aps":{"alert":{"title":"\#(self.token.jwt)"}},"session":"\#(self.token.jwt)"}"#
        )
        let topic = self.entry(&judge, headers: [("apns-topic", self.token.jwt)])
        let query = self.entry(&judge, path: "/3/device/\(device)?auth=\(self.token.jwt)", headers: [("apns-topic", bundle)])
        #expect(accepted.isAccepted && topic.isAccepted && !query.isAccepted)
        for entry in [accepted, topic, query] {
            #expect(!self.shows(entry.json), "\(String(decoding: entry.json, as: UTF8.self))")
            #expect(String(decoding: entry.json, as: UTF8.self).contains("eyJhbGci…(a provider token, redacted)"))
            // Still JSON: the payload object, the headers.
            #expect(try JSONSerialization.jsonObject(with: Data(entry.json)) is [String: Any])
        }
        let json = try #require(try JSONSerialization.jsonObject(with: Data(accepted.json)) as? [String: Any])
        #expect(((json["payload"] as? [String: Any])?["session"] as? String) == "eyJhbGci…(a provider token, redacted)")
        #expect((json["headers"] as? [String: String])?["x-note"] == "bearer eyJhbGci…(a provider token, redacted)")
    }

    @Test("The inbox API: list, get, wait, the phone and its list, errors quoting the path or a parameter")
    func api() async throws {
        var judge = APNSJudge()
        let inbox = LocalAPNSInbox()
        let phones = LocalAPNSPhones()
        let api = LocalAPNSInboxAPI(inbox: inbox, phones: phones)
        let accepted = inbox.record(self.entry(
            &judge, headers: [("apns-topic", self.token.jwt)], body: #"{"aps":{"alert":{"title":"\#(self.token.jwt)","body":"x"}}}"#
        ))
        await phones.deliver(accepted)
        let rejected = inbox.record(self.entry(&judge, path: "/3/device/\(self.token.jwt)", headers: [("apns-topic", bundle)]))
        #expect(accepted.isAccepted && !rejected.isAccepted)
        let answers = [
            await api.respond(method: "GET", path: "/api/v1/pushes", query: nil),
            await api.respond(method: "GET", path: "/api/v1/pushes/\(accepted.apnsID)", query: nil),
            await api.respond(method: "GET", path: "/api/v1/pushes/\(rejected.apnsID)", query: nil),
            await api.respond(method: "GET", path: "/api/v1/wait", query: "token=\(device)&timeout=5s"),
            await api.respond(method: "GET", path: "/api/v1/devices/\(device)", query: nil),
            await api.respond(method: "GET", path: "/api/v1/devices", query: nil),
            await api.respond(method: "GET", path: "/api/v1/\(self.token.jwt)", query: nil),
            await api.respond(method: "GET", path: "/api/v1/pushes", query: "token=\(self.token.jwt)"),
        ]
        #expect(answers.map(\.status) == [200, 200, 200, 200, 200, 200, 404, 400])
        for answer in answers {
            #expect(!self.shows(answer.body), "\(String(decoding: answer.body, as: UTF8.self))")
        }
        for index in [0, 4, 6, 7] {
            let text = String(decoding: answers[index].body, as: UTF8.self)
            #expect(text.contains("eyJhbGci…(a provider token, redacted)"), "\(text)")
        }
    }
}
