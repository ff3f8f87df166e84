import ForgeAPNsCore
import ForgeNotificationTypes
@testable import ForgeLoopback
import ForgeLoopbackUI
import ForgeSimulatedDevice
import Foundation
import Testing

private func object(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

/// A phone made through the API with com.example.shop (OrderAttributes) and com.example.news, and the API over it.
private struct Bench {
    let phones = LocalAPNSPhones()
    let api: LocalAPNSInboxAPI
    let token: String
    let pushToStart: String
    var judge = APNSJudge()

    init() async throws {
        self.api = LocalAPNSInboxAPI(inbox: LocalAPNSInbox(), phones: self.phones)
        let body = #"{"apps":[{"bundle_id":"com.example.shop","attributes_types":["OrderAttributes"]},{"bundle_id":"com.example.news"}]}"#
        let answer = try object(await self.api.respond(method: "POST", path: "/api/v1/devices", query: nil, body: Array(body.utf8)).body)
        self.token = try #require(answer["token"] as? String)
        let apps = try #require(answer["apps"] as? [[String: Any]])
        self.pushToStart = try #require((apps.first?["push_to_start_tokens"] as? [String: String])?["OrderAttributes"])
    }

    /// The action's answer: its status and its body as an object.
    func act(_ body: String, token: String? = nil) async throws -> (Int, [String: Any]) {
        let answer = await self.api.respond(
            method: "POST", path: "/api/v1/devices/\(token ?? self.token)/actions", query: nil, body: Array(body.utf8)
        )
        return (answer.status, try object(answer.body))
    }

    func view() async throws -> [String: Any] {
        try object(await self.api.respond(method: "GET", path: "/api/v1/devices/\(self.token)", query: nil).body)
    }

    /// Delivers an alert (or, with `body`, any push) to `token` (the phone's by default); its apns-id.
    @discardableResult
    mutating func send(
        token: String? = nil, topic: String = "com.example.shop", pushType: String = "alert", body: String = #"{"aps":{"alert":{"title":"Hi"}}}"#
    ) async -> String {
        let entry = judged(&self.judge, token: token ?? self.token, topic: topic, pushType: pushType, body: body)
        await self.phones.deliver(entry)
        return entry.apnsID
    }

    /// Starts an OrderAttributes activity through the push-to-start token (`token`: another one).
    @discardableResult
    mutating func start(token: String? = nil) async -> String {
        let now = Int(Date().timeIntervalSince1970)
        let start = #"{"aps":{"timestamp":\#(now),"event":"start","content-state":{"status":"packing"},"attributes-type":"OrderAttributes","#
            + #""attributes":{"order":"17"}}}"#
        return await self.send(token: token ?? self.pushToStart, topic: "com.example.shop.push-type.liveactivity", pushType: "liveactivity", body: start)
    }

    static func deliveries(_ view: [String: Any], of apnsID: String) -> [String] {
        (view["deliveries"] as? [[String: Any]] ?? []).filter { $0["apns_id"] as? String == apnsID }.map { record in
            [record["state"] as? String, record["reason"] as? String].compactMap { $0 }.joined(separator: "/")
        }
    }
}

@Suite("Inbox: a person's actions on a phone, POST /api/v1/devices/{token}/actions")
struct DeviceActionsTests {
    @Test("offline, two alerts, online: one delivered from storage, the other replaced; tap takes it out of the list")
    func offlineOnlineTap() async throws {
        var bench = try await Bench()
        let (status, offline) = try await bench.act(#"{"action":"offline"}"#)
        #expect(status == 200 && offline["online"] as? Bool == false && offline["token"] as? String == bench.token)
        let first = await bench.send()
        let second = await bench.send()
        let stored = try await bench.view()
        #expect(Bench.deliveries(stored, of: first) == ["discarded/replaced_in_storage", "stored"])
        #expect((stored["notifications"] as? [Any])?.isEmpty == true)

        let (_, online) = try await bench.act(#"{"action":"online"}"#)
        #expect(online["online"] as? Bool == true)
        #expect(Bench.deliveries(online, of: second) == ["delivered_from_storage", "stored"], "newest first")
        let listed = try #require(online["notifications"] as? [[String: Any]])
        #expect(listed.map { $0["apns_id"] as? String } == [second.lowercased()] || listed.map { $0["apns_id"] as? String } == [second])

        let (tapped, after) = try await bench.act(#"{"action":"tap","notification":"\#(second)"}"#)
        #expect(tapped == 200 && (after["notifications"] as? [Any])?.isEmpty == true)
        let events = (after["events"] as? [[String: Any]] ?? []).compactMap { $0["text"] as? String }
        #expect(events.contains { $0.contains("com.example.shop") && $0.contains("launched") }, "\(events.prefix(5))")
    }

    @Test("notifications_off: an alert is discarded (disabled) and not listed; notifications_on: the next one is")
    func notifications() async throws {
        var bench = try await Bench()
        #expect(try await bench.act(#"{"action":"notifications_off","bundle_id":"com.example.shop"}"#).0 == 200)
        let quiet = await bench.send()
        let view = try await bench.view()
        #expect((view["notifications"] as? [Any])?.isEmpty == true)
        #expect(Bench.deliveries(view, of: quiet).first?.hasPrefix("discarded") == true, "\(Bench.deliveries(view, of: quiet))")
        #expect(try await bench.act(#"{"action":"notifications_on","bundle_id":"com.example.shop"}"#).0 == 200)
        let shown = await bench.send()
        #expect(Bench.deliveries(try await bench.view(), of: shown) == ["delivered"])
        #expect((try await bench.view()["notifications"] as? [Any])?.count == 1)
    }

    @Test("force_quit: a background push is not delivered; uninstall: pushes are discarded; install: they are delivered again")
    func apps() async throws {
        var bench = try await Bench()
        #expect(try await bench.act(#"{"action":"force_quit","bundle_id":"com.example.shop"}"#).0 == 200)
        let background = await bench.send(pushType: "background", body: #"{"aps":{"content-available":1}}"#)
        let view = try await bench.view()
        #expect(Bench.deliveries(view, of: background) == ["discarded/force_quit"])

        let (_, removed) = try await bench.act(#"{"action":"uninstall","bundle_id":"com.example.news"}"#)
        #expect(removed["apps"] as? [String] == ["com.example.shop"])
        let lost = await bench.send(topic: "com.example.news")
        #expect(Bench.deliveries(try await bench.view(), of: lost) == ["discarded/app_uninstalled"])

        let (_, installed) = try await bench.act(#"{"action":"install","bundle_id":"com.example.news"}"#)
        #expect(installed["apps"] as? [String] == ["com.example.shop", "com.example.news"])
        let back = await bench.send(topic: "com.example.news")
        #expect(Bench.deliveries(try await bench.view(), of: back) == ["delivered"])
    }

    @Test("Live Activities: rotate the push-to-start token (a start to the old one starts nothing), rotate the update token, advance 8 h, dismiss")
    func liveActivities() async throws {
        var bench = try await Bench()
        let (status, rotated) = try await bench.act(#"{"action":"rotate_push_to_start_token","bundle_id":"com.example.shop","attributes_type":"OrderAttributes"}"#)
        let newStart = try #require((rotated["push_to_start_tokens"] as? [String: String])?["com.example.shop"])
        #expect(status == 200 && newStart != bench.pushToStart && newStart.count == 64)
        let old = await bench.start()
        let afterOld = try await bench.view()
        #expect((afterOld["live_activities"] as? [Any])?.isEmpty == true)
        #expect(Bench.deliveries(afterOld, of: old) == ["discarded/token_unregistered"])
        await bench.start(token: newStart)
        let started = try #require((try await bench.view()["live_activities"] as? [[String: Any]])?.first)
        let id = try #require(started["id"] as? String)
        let firstToken = try #require(started["push_token"] as? String)

        let (_, renewed) = try await bench.act(#"{"action":"rotate_update_token","activity":"\#(id)"}"#)
        let secondToken = (renewed["live_activities"] as? [[String: Any]])?.first?["push_token"] as? String
        #expect(secondToken != nil && secondToken != firstToken)

        let (_, later) = try await bench.act(#"{"action":"advance_clock","seconds":28800}"#)
        #expect((later["live_activities"] as? [[String: Any]])?.first?["state"] as? String == "ended")
        let (_, gone) = try await bench.act(#"{"action":"dismiss_activity","activity":"\#(id)"}"#)
        #expect((gone["live_activities"] as? [[String: Any]])?.first?["state"] as? String == "dismissed")
    }

    @Test("A refused action is 400 (bad input) or 404 (nothing of that name) naming the field, and changes nothing")
    func refusals() async throws {
        var bench = try await Bench()
        await bench.send()
        let before = try await bench.view()
        let cases: [(String, Int, String)] = [
            ("[]", 400, "body:"),
            (#"{"action":"shake"}"#, 400, "action: unknown action 'shake'"),
            (#"{"action":7}"#, 400, "action:"),
            (#"{"action":"offline","bundle_id":"com.example.shop"}"#, 400, "bundle_id: not a field of the action offline"),
            (#"{"action":"uninstall"}"#, 400, "bundle_id:"),
            (#"{"action":"force_quit","bundle_id":5}"#, 400, "bundle_id:"),
            (#"{"action":"rotate_push_to_start_token","bundle_id":"com.example.shop"}"#, 400, "attributes_type:"),
            (#"{"action":"rotate_update_token","activity":3}"#, 400, "activity:"),
            (#"{"action":"tap"}"#, 400, "notification:"),
            (#"{"action":"advance_clock","seconds":0}"#, 400, "seconds:"),
            (#"{"action":"advance_clock","seconds":-5}"#, 400, "seconds:"),
            (#"{"action":"advance_clock","seconds":"60"}"#, 400, "seconds:"),
            (#"{"action":"advance_clock","seconds":true}"#, 400, "seconds:"),
            (#"{"action":"uninstall","bundle_id":"com.example.other"}"#, 404, "bundle_id: no app com.example.other"),
            (#"{"action":"notifications_off","bundle_id":"com.example.other"}"#, 404, "bundle_id: no app com.example.other"),
            (#"{"action":"rotate_push_to_start_token","bundle_id":"com.example.shop","attributes_type":"ScoreAttributes"}"#, 404,
             "attributes_type: com.example.shop registers no attributes type ScoreAttributes"),
            (#"{"action":"rotate_push_to_start_token","bundle_id":"com.example.news","attributes_type":"OrderAttributes"}"#, 404, "attributes_type:"),
            (#"{"action":"rotate_update_token","activity":"activity-9"}"#, 404, "activity: no running Live Activity activity-9"),
            (#"{"action":"dismiss_activity","activity":"activity-9"}"#, 404, "activity: no Live Activity activity-9"),
            (#"{"action":"tap","notification":"00000000-0000-0000-0000-000000000000"}"#, 404, "notification: no notification"),
            (#"{"action":"install","bundle_id":"com.example.shop"}"#, 409, "bundle_id: com.example.shop is installed already"),
        ]
        for (body, status, prefix) in cases {
            let (answer, error) = try await bench.act(body)
            let message = error["error"] as? String
            #expect(answer == status && message?.hasPrefix(prefix) == true, "\(body): \(answer) \(message ?? "")")
        }
        let (unknown, error) = try await bench.act(#"{"action":"offline"}"#, token: String(repeating: "de", count: 32))
        #expect(unknown == 404 && (error["error"] as? String)?.hasPrefix("token:") == true)
        let after = try await bench.view()
        #expect(NSDictionary(dictionary: after) == NSDictionary(dictionary: before), "a refused action changed the phone")
    }
}

@Suite("SimulatedDevice: the person's actions by bundle id, and a clock moved forward")
struct SimulatedDevicePersonActionsTests {
    @Test("advanceClock moves an adjustable clock and ends an activity after 8 hours; a system clock cannot be moved")
    func advanceClock() throws {
        let clock = ManualDeviceClock(now: Date(timeIntervalSince1970: 1_800_000_000))
        let device = SimulatedDevice(clock: clock)
        let app = SimulatedApp(bundleID: "com.example.shop", deviceTokens: [.sandbox: tokenA])
        app.registerActivityType(LiveActivityType(attributesType: "OrderAttributes") { _ in })
        device.install(app)
        let activity = try device.requestActivity(
            bundleID: "com.example.shop", attributesType: "OrderAttributes", attributes: .object([:]), contentState: .object([:])
        )
        try device.advanceClock(by: 7 * 3600)
        #expect(device.liveActivity(activity.id)?.phase == .active)
        try device.advanceClock(by: 3600)
        #expect(clock.now == Date(timeIntervalSince1970: 1_800_000_000 + 8 * 3600))
        #expect(device.liveActivity(activity.id)?.phase == .ended)
        #expect(throws: SimulatedDeviceError.clockNotAdjustable) { try SimulatedDevice().advanceClock(by: 60) }

        let offset = OffsetSystemDeviceClock()
        offset.advance(by: 3600)
        #expect(offset.now.timeIntervalSinceNow > 3590)
    }

    @Test("forceQuit and setNotificationsAllowed act on the app by bundle id; an unknown app throws")
    func byBundleID() throws {
        let device = SimulatedDevice()
        let app = SimulatedApp(bundleID: "com.example.shop", deviceTokens: [.sandbox: tokenA])
        device.install(app)
        try device.forceQuit("com.example.shop")
        #expect(app.isForceQuit)
        try device.setNotificationsAllowed(false, for: "com.example.shop")
        #expect(app.authorization == .denied)
        try device.setNotificationsAllowed(true, for: "com.example.shop")
        #expect(app.authorization == .granted)
        #expect(throws: SimulatedDeviceError.unknownApp) { try device.forceQuit("com.example.other") }
        #expect(throws: SimulatedDeviceError.unknownApp) { try device.setNotificationsAllowed(false, for: "com.example.other") }
    }
}
