import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
@testable import ForgeLoopback
import ForgeLoopbackUI
import ForgeSimulatedDevice
import MetricsTestKit
import Foundation
import Testing

let tokenA = String(repeating: "ab", count: 32)
let tokenB = String(repeating: "cd", count: 32)

/// A judged request as the server records it, judged by a real ``APNSJudge``.
func judged(
    _ judge: inout APNSJudge, token: String = tokenA, topic: String = "com.example.shop", pushType: String = "alert",
    headers extra: [(String, String)] = [], body: String = #"{"aps":{"alert":{"title":"Hi"}}}"#, date: Date = Date()
) -> LocalAPNSInboxEntry {
    let headers = [("apns-topic", topic), ("apns-push-type", pushType)] + extra
    let request = APNSJudge.Request(
        method: "POST", path: "/3/device/\(token)", headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(body.utf8)
    )
    let verdict = judge.judge(request, now: date)
    return LocalAPNSInboxEntry(
        sequence: 0, date: date, method: "POST", path: request.path, headers: headers.map { HTTP2HeaderField($0.0, $0.1) },
        body: request.body, decision: verdict, why: judge.explain(verdict, for: request, now: date), fault: nil, connectionID: 1,
        lints: []
    )
}

private func object(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

@Suite("Inbox: LA007, priority-10 Live Activity updates in quick succession")
struct FrequentUpdateLintTests {
    static func update(_ judge: inout APNSJudge, token: String = tokenA, priority: String, at date: Date) -> LocalAPNSInboxEntry {
        let body = #"{"aps":{"event":"update","timestamp":\#(Int(date.timeIntervalSince1970)),"content-state":{"step":1}}}"#
        return judged(&judge, token: token, topic: "com.example.shop.push-type.liveactivity", pushType: "liveactivity",
                      headers: [("apns-priority", priority)], body: body, date: date)
    }

    @Test("The second priority-10 update within a minute to one token gets LA007; priority 5, another token or a minute later do not")
    func frequentUpdates() throws {
        var judge = APNSJudge()
        let inbox = LocalAPNSInbox(capacity: 100)
        let t0 = Date()
        let first = inbox.record(Self.update(&judge, priority: "10", at: t0))
        let soon = inbox.record(Self.update(&judge, priority: "10", at: t0 + 20))
        let other = inbox.record(Self.update(&judge, token: tokenB, priority: "10", at: t0 + 21))
        let quiet = inbox.record(Self.update(&judge, priority: "5", at: t0 + 22))
        let later = inbox.record(Self.update(&judge, priority: "10", at: t0 + 90))
        for entry in [first, soon, other, quiet, later] { #expect(entry.isAccepted, "\(entry.decision)") }
        func la007(_ entry: LocalAPNSInboxEntry) -> [String] { entry.allLints.filter { $0.hasPrefix("LA007") } }
        #expect(la007(first).isEmpty && la007(other).isEmpty && la007(quiet).isEmpty && la007(later).isEmpty)
        #expect(la007(soon) == ["LA007: a priority-10 update 20.0 s after the previous one to this activity: priority-10 updates spend a "
                                + "budget iOS then throttles; send frequent updates at priority 5"])
        inbox.close()
    }
}

@Suite("Inbox: every judged request kept, queried, awaited, cleared and streamed")
struct InboxTests {
    @Test("Newest first, up to the capacity; the oldest dropped and counted; a clear forgets everything")
    func capacity() {
        var judge = APNSJudge()
        let inbox = LocalAPNSInbox(capacity: 3)
        for index in 1...5 { inbox.record(judged(&judge, body: #"{"aps":{"alert":"n\#(index)"}}"#)) }
        let page = inbox.pushes()
        #expect(page.total == 3 && page.dropped == 2)
        #expect(page.entries.map(\.sequence) == [5, 4, 3])
        inbox.clear()
        #expect(inbox.pushes().total == 0 && inbox.dropped == 0)
        // Sequence numbers go on after a clear: an id seen before is never reused.
        #expect(inbox.record(judged(&judge)).sequence == 6)
    }

    @Test("Filters: token, topic, push type, status (code, accepted, rejected), text, since; the limit counts after the filter")
    func filters() throws {
        var judge = APNSJudge(configuration: LocalAPNSConfiguration(servedBundleIDs: ["com.example.shop"]))
        let inbox = LocalAPNSInbox()
        let start = Date()
        inbox.record(judged(&judge, token: tokenA, body: #"{"aps":{"alert":"Parcel shipped"}}"#, date: start))
        inbox.record(judged(&judge, token: tokenB, topic: "com.other.app", date: start.addingTimeInterval(1)))
        inbox.record(judged(&judge, token: tokenB, pushType: "background", body: #"{"aps":{"content-available":1}}"#,
                            date: start.addingTimeInterval(2)))
        #expect(inbox.pushes(matching: .init(token: tokenB.uppercased())).total == 2)
        #expect(inbox.pushes(matching: .init(topic: "com.other.app")).entries.map(\.status) == [400])
        #expect(inbox.pushes(matching: .init(pushType: "background")).total == 1)
        #expect(inbox.pushes(matching: .init(status: .rejected)).total == 1)
        #expect(inbox.pushes(matching: .init(status: .accepted)).total == 2)
        #expect(inbox.pushes(matching: .init(status: .code(400))).total == 1)
        #expect(inbox.pushes(matching: .init(text: "PARCEL")).entries.map(\.token) == [tokenA])
        #expect(inbox.pushes(matching: .init(since: start.addingTimeInterval(1))).total == 2)
        let limited = inbox.pushes(matching: .init(limit: 1))
        #expect(limited.total == 3 && limited.entries.count == 1 && limited.entries[0].sequence == 3)
        let apnsID = try #require(limited.entries.first?.apnsID)
        #expect(inbox.entry(apnsID: apnsID.lowercased())?.sequence == 3)
    }

    @Test("A wait returns a matching entry already kept (the oldest) at once, else the next one, else nil at its timeout")
    func waits() async throws {
        var judge = APNSJudge()
        let inbox = LocalAPNSInbox()
        inbox.record(judged(&judge, token: tokenA))
        inbox.record(judged(&judge, token: tokenA))
        #expect(await inbox.waitForPush(matching: .init(token: tokenA), timeout: .seconds(5))?.sequence == 1)
        #expect(await inbox.waitForPush(matching: .init(token: tokenB), timeout: .milliseconds(50)) == nil)
        let entry = judged(&judge, token: tokenB)
        async let waited = inbox.waitForPush(matching: .init(token: tokenB), timeout: .seconds(30))
        // The waiter subscribes before it scans; a record after the subscription reaches it. Repeat the
        // record until the waiter has it, rather than sleeping for the subscription.
        var recorded = 0
        while inbox.pushes(matching: .init(token: tokenB)).total == 0 || recorded == 0 {
            inbox.record(entry)
            recorded += 1
        }
        #expect(await waited?.token == tokenB)
        inbox.clear()
        #expect(await inbox.waitForPush(matching: .init(token: tokenA), timeout: .milliseconds(20)) == nil)
    }

    @Test("Batches after a sequence: oldest first, the newest when more wait, what was skipped or dropped counted")
    func batches() {
        var judge = APNSJudge()
        let inbox = LocalAPNSInbox(capacity: 5)
        for _ in 1...3 { inbox.record(judged(&judge)) }
        let first = inbox.entries(after: 0, limit: 2)
        #expect(first.entries.map(\.sequence) == [2, 3] && first.skipped == 1 && first.clears == 0)
        for _ in 4...12 { inbox.record(judged(&judge)) }
        // 4...7 were dropped for room before they were read.
        let second = inbox.entries(after: 3, limit: 100)
        #expect(second.entries.map(\.sequence) == [8, 9, 10, 11, 12] && second.skipped == 4)
        #expect(inbox.entries(after: 12, limit: 100).entries.isEmpty && inbox.lastSequence == 12)
        inbox.clear()
        #expect(inbox.entries(after: 12, limit: 100).clears == 1)
    }

    @Test("A subscriber that stops reading is dropped after its buffer; a close ends every stream")
    func slowSubscriber() async {
        var judge = APNSJudge()
        let inbox = LocalAPNSInbox()
        let stalled = inbox.events(buffer: 4)
        let reader = inbox.events(buffer: 100)
        for _ in 0..<10 { inbox.record(judged(&judge)) }
        inbox.clear()
        inbox.close()
        var stalledCount = 0
        for await _ in stalled { stalledCount += 1 }
        #expect(stalledCount == 4)
        var events: [String] = []
        for await event in reader {
            switch event {
            case .push(let entry): events.append("push \(entry.sequence)")
            case .cleared: events.append("clear")
            }
        }
        #expect(events == (1...10).map { "push \($0)" } + ["clear"])
        #expect(inbox.isClosed)
    }

    @Test("Broadcasts and channel requests are kept too: kind, channel, bundle as topic")
    func broadcasts() throws {
        let channel = "dHN0LWNoYW5uZWwtMDAwMQ=="
        var judge = APNSJudge(channels: [LocalAPNSChannel(id: channel, bundleID: "com.example.shop", messageStoragePolicy: 1)])
        let inbox = LocalAPNSInbox()
        for (path, headers) in [
            ("/4/broadcasts/apps/com.example.shop", [("apns-channel-id", channel), ("apns-push-type", "LiveActivity")]),
            ("/1/apps/com.example.shop/all-channels", [(String, String)]()),
        ] {
            let method = path.hasPrefix("/1/") ? "GET" : "POST"
            let body = method == "GET" ? "" : #"{"aps":{"timestamp":1,"event":"update","content-state":{}}}"#
            let request = APNSJudge.Request(
                method: method, path: path, headers: headers.map { (name: $0.0, value: $0.1) }, body: Array(body.utf8)
            )
            let verdict = judge.judge(request)
            inbox.record(LocalAPNSInboxEntry(
                date: Date(), method: method, path: path, headers: headers.map { HTTP2HeaderField($0.0, $0.1) }, body: request.body,
                decision: verdict, why: nil, fault: nil, connectionID: 1, lints: []
            ))
        }
        let entries = inbox.pushes().entries
        let channels = try object(entries[0].json), broadcast = try object(entries[1].json)
        #expect(broadcast["kind"] as? String == "broadcast" && broadcast["channel_id"] as? String == channel)
        #expect(broadcast["topic"] as? String == "com.example.shop" && broadcast["status"] as? Int == 200 && broadcast["token"] is NSNull)
        #expect(channels["kind"] as? String == "channels" && channels["status"] as? Int == 200 && channels["payload"] is NSNull)
    }

    @Test("An entry's JSON: the API's fields, the payload as sent, authorization redacted; a body that is not JSON as text with a warning")
    func entryJSON() throws {
        var judge = APNSJudge()
        var entry = judged(&judge, headers: [("authorization", "bearer eyJhbGciOiJFUzI1NiJ9.secret.signature"), ("apns-priority", "5"),
                                             ("apns-collapse-id", "order-17"), ("apns-expiration", "0")])
        let json = try object(entry.json)
        #expect(json["token"] as? String == tokenA && json["topic"] as? String == "com.example.shop")
        #expect(json["push_type"] as? String == "alert" && json["priority"] as? Int == 5 && json["expiration"] as? Int == 0)
        #expect(json["collapse_id"] as? String == "order-17" && json["status"] as? Int == 200)
        #expect((json["payload"] as? [String: Any])?["aps"] != nil)
        #expect((json["headers"] as? [String: String])?["authorization"] == "bearer <redacted>")
        #expect(!String(decoding: entry.json, as: UTF8.self).contains("secret"))
        #expect(ISO8601DateFormatter.withMilliseconds.date(from: json["received_at"] as? String ?? "") != nil)
        entry.body = Array("not json".utf8)
        let text = try object(entry.json)
        #expect(text["payload"] as? String == "not json")
        #expect((text["warning"] as? String)?.hasPrefix("body is not valid JSON") == true)
    }
}

@Suite("The judge says why: one sentence per rejection, naming what it saw and what it expected")
struct JudgeWhyTests {
    @Test("Payload size, topic not served, token shape and registration, priority, collapse id")
    func sentences() {
        var judge = APNSJudge(configuration: LocalAPNSConfiguration(acceptsUnknownTokens: false, servedBundleIDs: ["com.example.shop"]))
        let big = #"{"aps":{"alert":""# + String(repeating: "x", count: 4_107) + #""}}"#
        #expect(judged(&judge, body: big).why == "payload is 4,127 bytes; the limit for alert is 4,096")
        #expect(judged(&judge, topic: "com.other.app").why == "topic com.other.app is not served: --topic serves com.example.shop")
        #expect(judged(&judge, token: "XYZ").why?.contains("is not 64…200 hex digits") == true)
        #expect(judged(&judge).why == "token abababab…abab is not registered, and this server rejects unknown tokens")
        judge.configuration.acceptsUnknownTokens = true
        #expect(judged(&judge, headers: [("apns-priority", "7")]).why == "apns-priority '7' is not 10, 5 or 1")
        #expect(judged(&judge, headers: [("apns-collapse-id", String(repeating: "c", count: 70))]).why
            == "apns-collapse-id is 70 bytes; the limit is 64")
        #expect(judged(&judge).why == nil)
    }

    @Test("Provider tokens: an unknown kid names the registered keys; a wrong team names the key's team")
    func providerTokens() throws {
        let key = try APNSSigningKey.generate()
        let other = try APNSSigningKey.generate()
        let authenticator = TokenAuthenticator(
            keys: [LocalAPNSKey(keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1"), verificationKey: key.publicKey)],
            environment: .sandbox
        )
        var judge = APNSJudge(authenticator: authenticator)
        func header(_ kid: String, _ team: String, _ signer: APNSSigningKey) throws -> String {
            try APNSProviderToken.sign(keyID: try APNSKeyID(kid), teamID: try APNSTeamID(team), issuedAt: Date(), key: signer)
                .authorizationHeaderValue
        }
        let unknown = judged(&judge, headers: [("authorization", try header("WRONGKEY99", "FORGETEAM1", other))])
        #expect(unknown.reason == .invalidProviderToken)
        #expect(unknown.why == "kid WRONGKEY99 is not registered; registered: FORGEKEY01 (team FORGETEAM1)")
        let team = judged(&judge, headers: [("authorization", try header("FORGEKEY01", "OTHERTEAM9", key))])
        #expect(team.why == "iss 'OTHERTEAM9' is not the team of kid FORGEKEY01 (FORGETEAM1)")
        let missing = judged(&judge)
        #expect(missing.why?.hasPrefix("no authorization header") == true)
        // The sentence never quotes the token.
        #expect(!(unknown.why ?? "").contains("eyJ"))
    }
}

@Suite("The inbox API, without a socket: routes, filters and every refusal named")
struct InboxAPITests {
    let inbox = LocalAPNSInbox()
    let phones = LocalAPNSPhones()
    var api: LocalAPNSInboxAPI { LocalAPNSInboxAPI(inbox: self.inbox, phones: self.phones) }

    @Test("Bad input is a 400 whose error names the parameter and the rule", arguments: [
        ("/api/v1/pushes", "limit=0", "limit: must be 1…10000 (got 0)"),
        ("/api/v1/pushes", "limit=10001", "limit: must be 1…10000 (got 10001)"),
        ("/api/v1/pushes", "colour=red", "colour: unknown parameter for GET /api/v1/pushes"),
        ("/api/v1/pushes", "since=yesterday", "since: must be an ISO 8601 time"),
        ("/api/v1/pushes", "status=99", "status: must be a status 100…599, accepted or rejected (got 99)"),
        ("/api/v1/pushes", "token=xyz", "token: must be hex digits"),
        ("/api/v1/pushes", "push_type=fax", "push_type: must be one of alert"),
        ("/api/v1/pushes/not-an-id", nil, "apns_id: must be a UUID"),
        ("/api/v1/wait", "timeout=1s", "wait: give at least one of token, topic, push_type, status"),
        ("/api/v1/wait", "token=ab&timeout=61s", "timeout: must be a duration above 0 and at most 60s"),
        ("/api/v1/devices/zz", nil, "token: must be hex digits"),
    ] as [(String, String?, String)])
    func refusals(path: String, query: String?, message: String) async throws {
        let response = await self.api.respond(method: "GET", path: path, query: query)
        #expect(response.status == 400)
        let error = try #require(try object(response.body)["error"] as? String)
        #expect(error.hasPrefix(message), "\(error)")
    }

    @Test("List, get, wait (found and 408), delete, devices; unknown paths and methods answered in JSON")
    func routes() async throws {
        var judge = APNSJudge()
        let entry = self.inbox.record(judged(&judge))
        await self.phones.deliver(entry)
        let list = try object(await self.api.respond(method: "GET", path: "/api/v1/pushes", query: "token=\(tokenA)").body)
        #expect(list["total"] as? Int == 1 && list["dropped"] as? Int == 0 && (list["pushes"] as? [Any])?.count == 1)
        let one = await self.api.respond(method: "GET", path: "/api/v1/pushes/\(entry.apnsID)", query: nil)
        let oneJSON = try object(one.body)
        #expect(one.status == 200 && oneJSON["apns_id"] as? String == entry.apnsID)
        let absent = await self.api.respond(method: "GET", path: "/api/v1/pushes/\(UUID().uuidString)", query: nil)
        #expect(absent.status == 404)
        let waited = await self.api.respond(method: "GET", path: "/api/v1/wait", query: "token=\(tokenA)&timeout=5s")
        #expect(waited.status == 200)
        let timedOut = await self.api.respond(method: "GET", path: "/api/v1/wait", query: "token=\(tokenB)&timeout=30ms")
        #expect(timedOut.status == 408)
        let phone = try object(await self.api.respond(method: "GET", path: "/api/v1/devices/\(tokenA)", query: nil).body)
        #expect((phone["notifications"] as? [[String: Any]])?.first?["title"] as? String == "Hi")
        let devices = try object(await self.api.respond(method: "GET", path: "/api/v1/devices", query: nil).body)
        #expect((devices["devices"] as? [[String: Any]])?.first?["token"] as? String == tokenA)
        #expect(await self.api.respond(method: "DELETE", path: "/api/v1/pushes", query: nil).status == 204)
        #expect(self.inbox.count == 0 && self.phones.view(token: tokenA) == nil)
        #expect(await self.api.respond(method: "GET", path: "/api/v1/devices/\(tokenA)", query: nil).status == 404)
        #expect(await self.api.respond(method: "PUT", path: "/api/v1/pushes", query: nil).status == 405)
        #expect(await self.api.respond(method: "GET", path: "/api/v2/pushes", query: nil).status == 404)
    }
}

@Suite("A phone per token: what each accepted push would show on an iPhone")
struct PhonesTests {
    @Test("Alerts in the list with collapse-id replacement and the badge; background pushes counted; rejected pushes never reach a phone")
    func alerts() async throws {
        var judge = APNSJudge(configuration: LocalAPNSConfiguration(servedBundleIDs: ["com.example.shop"]))
        let phones = LocalAPNSPhones()
        for entry in [
            judged(&judge, headers: [("apns-collapse-id", "score")], body: #"{"aps":{"alert":{"title":"1-0"},"badge":1,"thread-id":"match"}}"#),
            judged(&judge, headers: [("apns-collapse-id", "score")], body: #"{"aps":{"alert":{"title":"2-0"},"badge":2,"thread-id":"match"}}"#),
            judged(&judge, pushType: "background", headers: [("apns-priority", "5")], body: #"{"aps":{"content-available":1}}"#),
            judged(&judge, topic: "com.other.app", body: #"{"aps":{"alert":"never"}}"#),
        ] {
            await phones.deliver(entry)
        }
        let view = try #require(phones.view(token: tokenA))
        #expect(view.notifications.map(\.title) == ["2-0"])
        #expect(view.notifications.first?.threadID == "match" && view.notifications.first?.collapseID == "score")
        #expect(view.badges == ["com.example.shop": 2])
        #expect(view.backgroundPushes == 1 && view.silentPushes.count == 1)
        #expect(view.apps == ["com.example.shop"])
    }

    @Test("run(_:) follows the inbox: accepted pushes reach their phones in order, a clear of the inbox clears them")
    func followsTheInbox() async throws {
        var judge = APNSJudge()
        let inbox = LocalAPNSInbox()
        let phones = LocalAPNSPhones()
        let updates = phones.updates()
        await withDiscardingTaskGroup { group in
            group.addTask { await phones.run(inbox) }
            // Kept before or after the phones start: they deliver what the inbox holds, then what comes.
            var iterator = updates.makeAsyncIterator()
            inbox.record(judged(&judge, token: tokenA, body: #"{"aps":{"alert":{"title":"first"}}}"#))
            let delivered = await iterator.next()
            #expect(delivered == tokenA && phones.view(token: tokenA)?.notifications.first?.title == "first")
            inbox.clear()
            inbox.record(judged(&judge, token: tokenB))
            while let token = await iterator.next(), token != tokenB {}
            #expect(phones.view(token: tokenA) == nil && phones.view(token: tokenB) != nil)
            inbox.close()
            phones.finish()
        }
    }

    @Test("Live Activity: a start to a push-to-start token, two updates and an end to the activity's own token leave one ended card")
    func liveActivity() async throws {
        var judge = APNSJudge()
        let phones = LocalAPNSPhones()
        let topic = "com.example.shop.push-type.liveactivity"
        let now = Int(Date().timeIntervalSince1970)
        func push(_ token: String, _ event: String, _ status: String, at offset: Int) -> LocalAPNSInboxEntry {
            let body = #"{"aps":{"timestamp":\#(now + offset),"event":"\#(event)","content-state":{"status":"\#(status)"},"#
                + #""attributes-type":"DeliveryAttributes","attributes":{"orderID":"A-17"}}}"#
            return judged(&judge, token: token, topic: topic, pushType: "liveactivity", body: body)
        }
        await phones.deliver(push(tokenA, "start", "packing", at: 0))
        let started = try #require(phones.view(token: tokenA)?.liveActivities.first)
        #expect(started.state == "active" && started.attributesType == "DeliveryAttributes")
        // An update to the push-to-start token is what iOS ignores; the activity's own token is the way.
        await phones.deliver(push(tokenA, "update", "lost", at: 1))
        await phones.deliver(push(started.pushToken, "update", "shipped", at: 2))
        await phones.deliver(push(started.pushToken, "update", "stale", at: 1))
        await phones.deliver(push(started.pushToken, "update", "arriving", at: 3))
        await phones.deliver(push(started.pushToken, "end", "arriving", at: 4))
        let view = try #require(phones.view(token: started.pushToken))
        #expect(view.token == tokenA && view.liveActivities.count == 1)
        #expect(view.liveActivities[0].contentState == .object(["status": .string("arriving")]))
        #expect(view.liveActivities[0].state == "ended" && view.liveActivities[0].updates == 4)
        #expect(view.events.contains { $0.text.contains("push-to-start token") })
        // An update to a token no start issued: an activity the app started itself.
        await phones.deliver(push(tokenB, "update", "on its way", at: 5))
        #expect(phones.view(token: tokenB)?.liveActivities.first?.contentState == .object(["status": .string("on its way")]))
    }
}

extension ISO8601DateFormatter {
    fileprivate static var withMilliseconds: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}

@Suite("Delivery states: what became of each accepted push on serve's phones")
struct DeliveryStateInboxTests {
    @Test("An entry's delivery, the device API's delivery log, and counters by state and reason")
    func deliveryStates() async throws {
        var judge = APNSJudge()
        let metrics = TestMetrics()
        let inbox = LocalAPNSInbox()
        let phones = LocalAPNSPhones(metrics: metrics)
        let api = LocalAPNSInboxAPI(inbox: inbox, phones: phones)
        let alert = inbox.record(judged(&judge))
        let sync = #"{"aps":{"content-available":1}}"#
        var background: [LocalAPNSInboxEntry] = []
        for _ in 1...4 {
            background.append(inbox.record(judged(&judge, pushType: "background", headers: [("apns-priority", "5")], body: sync)))
        }
        let rejected = inbox.record(judged(&judge, topic: ""))
        for entry in [alert] + background + [rejected] { await phones.deliver(entry) }

        let delivered = try object(await api.respond(method: "GET", path: "/api/v1/pushes/\(alert.apnsID)", query: nil).body)
        let state = try #require(delivered["delivery"] as? [String: Any])
        #expect(state["state"] as? String == "delivered" && state["apns_id"] as? String == alert.apnsID)
        #expect(state["reason"] is NSNull && state["why"] is NSNull && state["at"] is String)

        let list = try object(await api.respond(method: "GET", path: "/api/v1/pushes", query: nil).body)
        let pushes = try #require(list["pushes"] as? [[String: Any]])
        let throttled = try #require(pushes.first { $0["apns_id"] as? String == background[3].apnsID }?["delivery"] as? [String: Any])
        #expect(throttled["state"] as? String == "throttled" && throttled["reason"] as? String == "background_budget")
        #expect((throttled["why"] as? String)?.hasPrefix("background push not delivered: com.example.shop's background allowance is spent (3 in the last hour)") == true)
        #expect(pushes.first { $0["apns_id"] as? String == rejected.apnsID }?["delivery"] is NSNull, "a rejected request reaches no phone")

        let device = try object(await api.respond(method: "GET", path: "/api/v1/devices/\(tokenA)", query: nil).body)
        let log = try #require(device["deliveries"] as? [[String: Any]])
        #expect(log.map { $0["state"] as? String } == ["throttled", "delivered", "delivered", "delivered", "delivered"], "newest first")
        #expect(device["online"] as? Bool == true)

        #expect(try metrics.expectCounter("apns_local_deliveries_total", [("state", "delivered"), ("reason", "")]).totalValue == 4)
        #expect(try metrics.expectCounter("apns_local_deliveries_total", [("state", "throttled"), ("reason", "background_budget")]).totalValue == 1)
    }
}

@Suite("POST /api/v1/devices: a phone with apps installed, for tests in other languages")
struct CreateDeviceTests {
    @Test("A phone with an app and two attributes types: its push-to-start token starts an activity that shows with its own push token")
    func create() async throws {
        let inbox = LocalAPNSInbox()
        let phones = LocalAPNSPhones()
        let api = LocalAPNSInboxAPI(inbox: inbox, phones: phones)
        let body = #"{"apps":[{"bundle_id":"com.example.shop","attributes_types":["OrderAttributes","ScoreAttributes"]},{"bundle_id":"com.example.plain"}],"ask_before_activities":false}"#
        let created = await api.respond(method: "POST", path: "/api/v1/devices", query: nil, body: Array(body.utf8))
        #expect(created.status == 201)
        let answer = try object(created.body)
        let token = try #require(answer["token"] as? String)
        let apps = try #require(answer["apps"] as? [[String: Any]])
        #expect(apps.map { $0["bundle_id"] as? String } == ["com.example.shop", "com.example.plain"])
        let startTokens = try #require(apps[0]["push_to_start_tokens"] as? [String: String])
        #expect(Set(startTokens.keys) == ["OrderAttributes", "ScoreAttributes"] && Set(startTokens.values).count == 1)
        #expect((apps[1]["push_to_start_tokens"] as? [String: String])?.isEmpty == true)
        let startToken = try #require(startTokens["OrderAttributes"])
        #expect((try? DeviceToken(token)) != nil && startToken != token)

        // The phone is listed before any push, with its apps.
        let device = try object(await api.respond(method: "GET", path: "/api/v1/devices/\(token)", query: nil).body)
        #expect(device["apps"] as? [String] == ["com.example.shop", "com.example.plain"])

        // A start to its push-to-start token starts an activity on this phone, not on a new one.
        var judge = APNSJudge()
        let now = Int(Date().timeIntervalSince1970)
        let start = #"{"aps":{"timestamp":\#(now),"event":"start","content-state":{"status":"packing"},"attributes-type":"OrderAttributes","#
            + #""attributes":{"order":"17"},"alert":{"title":"Order 17","body":"Packing"}}}"#
        await phones.deliver(judged(&judge, token: startToken, topic: "com.example.shop.push-type.liveactivity", pushType: "liveactivity", body: start))
        let view = try object(await api.respond(method: "GET", path: "/api/v1/devices/\(token)", query: nil).body)
        let activities = try #require(view["live_activities"] as? [[String: Any]])
        #expect(activities.count == 1 && activities.first?["attributes_type"] as? String == "OrderAttributes")
        let pushToken = try #require(activities.first?["push_token"] as? String)
        #expect(pushToken != startToken && pushToken != token)
        #expect(phones.phones.count == 1, "the start reached the created phone")
    }

    @Test("A phone that asks: the start awaits permission with no push token; the actions endpoint taps Allow, then Don't Allow")
    func askingPhone() async throws {
        let phones = LocalAPNSPhones()
        let api = LocalAPNSInboxAPI(inbox: LocalAPNSInbox(), phones: phones)
        let body = #"{"apps":[{"bundle_id":"com.example.shop","attributes_types":["OrderAttributes"]}],"ask_before_activities":true}"#
        let answer = try object(await api.respond(method: "POST", path: "/api/v1/devices", query: nil, body: Array(body.utf8)).body)
        let token = try #require(answer["token"] as? String)
        #expect(answer["installation"] as? String == token && answer["ask_before_activities"] as? Bool == true)
        let apps = try #require(answer["apps"] as? [[String: Any]])
        let startToken = try #require((apps.first?["push_to_start_tokens"] as? [String: String])?["OrderAttributes"])
        var judge = APNSJudge()
        let now = Int(Date().timeIntervalSince1970)
        let start = #"{"aps":{"timestamp":\#(now),"event":"start","content-state":{"status":"packing"},"attributes-type":"OrderAttributes","#
            + #""attributes":{"order":"17"},"alert":{"title":"Order 17","body":"Packing"}}}"#
        await phones.deliver(judged(&judge, token: startToken, topic: "com.example.shop.push-type.liveactivity", pushType: "liveactivity", body: start))
        let waiting = try #require(try object(await api.respond(method: "GET", path: "/api/v1/devices/\(token)", query: nil).body)["live_activities"] as? [[String: Any]])
        #expect(waiting.count == 1 && waiting.first?["state"] as? String == "awaiting_permission" && waiting.first?["push_token"] is NSNull)

        let path = "/api/v1/devices/\(token)/actions"
        let allowed = await api.respond(method: "POST", path: path, query: nil, body: Array(#"{"action":"allow_activity","bundle_id":"com.example.shop"}"#.utf8))
        #expect(allowed.status == 200)
        let active = try #require(try object(allowed.body)["live_activities"] as? [[String: Any]])
        #expect(active.first?["state"] as? String == "active" && (active.first?["push_token"] as? String)?.count == 64)
        let denied = await api.respond(method: "POST", path: path, query: nil, body: Array(#"{"action":"deny_activity","bundle_id":"com.example.shop"}"#.utf8))
        #expect(try #require(try object(denied.body)["live_activities"] as? [[String: Any]]).first?["state"] as? String == "dismissed")

        let refusals: [(String, String, Int, String)] = [
            (path, #"{"action":"shake","bundle_id":"com.example.shop"}"#, 400, "action: unknown action 'shake'"),
            (path, #"{"bundle_id":"com.example.shop"}"#, 400, "action:"),
            (path, #"{"action":"allow_activity","bundle_id":"com.example.other"}"#, 404, "bundle_id: no app com.example.other"),
            (path, #"{"action":"allow_activity"}"#, 400, "bundle_id:"),
            (path, #"{"action":"allow_activity","bundle_id":"com.example.shop","why":1}"#, 400, "why:"),
            ("/api/v1/devices/\(String(repeating: "de", count: 32))/actions", #"{"action":"allow_activity","bundle_id":"com.example.shop"}"#, 404, "token:"),
        ]
        for (target, text, status, prefix) in refusals {
            let refused = await api.respond(method: "POST", path: target, query: nil, body: Array(text.utf8))
            let message = try object(refused.body)["error"] as? String
            #expect(refused.status == status && message?.hasPrefix(prefix) == true, "\(text): \(refused.status) \(message ?? "")")
        }
        #expect(await api.respond(method: "GET", path: path, query: nil).status == 405)
    }

    @Test("A malformed new device is 400 naming the field; nothing is made")
    func refused() async throws {
        let phones = LocalAPNSPhones()
        let api = LocalAPNSInboxAPI(inbox: LocalAPNSInbox(), phones: phones)
        let cases: [(String, String)] = [
            ("not json", "body"),
            (#"{"apps":[]}"#, "apps"),
            (#"{"apps":[{"bundle_id":"not a bundle"}]}"#, "apps[0].bundle_id"),
            (#"{"apps":[{"bundle_id":"com.example.a","attributes_types":[""]}]}"#, "apps[0].attributes_types"),
            (#"{"apps":[{"bundle_id":"com.example.a"},{"bundle_id":"com.example.a"}]}"#, "apps[1].bundle_id"),
            (#"{"apps":[{"bundle_id":"com.example.a"}],"ask_before_activities":1}"#, "ask_before_activities"),
            (#"{"apps":[{"bundle_id":"com.example.a"}],"color":"red"}"#, "color"),
        ]
        for (body, field) in cases {
            let answer = await api.respond(method: "POST", path: "/api/v1/devices", query: nil, body: Array(body.utf8))
            let message = try object(answer.body)["error"] as? String
            #expect(answer.status == 400 && message?.hasPrefix(field + ":") == true, "\(body): \(answer.status) \(message ?? "")")
        }
        #expect(phones.phones.isEmpty)
    }
}
