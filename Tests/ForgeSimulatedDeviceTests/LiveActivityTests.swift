import ForgeNotificationTypes
import ForgeSimulatedDevice
import Foundation
import Testing

@Suite("Live Activities")
struct LiveActivityTests {
    let clock = ManualDeviceClock(now: Fixture.start)
    let now = Int(Fixture.start.timeIntervalSince1970)

    /// A device with the app and one started activity; returns the activity.
    func started(on device: SimulatedDevice, staleIn: Int = 3600) async throws -> LiveActivity {
        device.install(Fixture.app())
        let start = #"""
        {"aps":{"event":"start","timestamp":\#(self.now),"attributes-type":"PizzaDeliveryAttributes",
        "attributes":{"pizzaName":"Margherita"},"content-state":{"status":"baking","eta":20},
        "stale-date":\#(self.now + staleIn),"alert":{"title":"Order started"}}}
        """#
        await device.deliver(Fixture.push(start, token: Fixture.pushToStartToken, pushType: "liveactivity", apnsID: "L-start"))
        return try #require(device.liveActivities.first)
    }

    func push(_ event: String, at timestamp: Int, state: String? = #"{"status":"on the way","eta":10}"#, extra: String = "", to activity: LiveActivity, apnsID: String) -> DevicePush {
        let contentState = state.map { #","content-state":\#($0)"# } ?? ""
        let json = #"{"aps":{"event":"\#(event)","timestamp":\#(timestamp)\#(contentState)\#(extra)}}"#
        return Fixture.push(json, token: activity.updateToken, pushType: "liveactivity", apnsID: apnsID)
    }

    @Test("push-to-start creates an activity with an update token")
    func start() async throws {
        let device = Fixture.device(clock: self.clock)
        let activity = try await self.started(on: device)

        #expect(activity.bundleID == Fixture.bundleID)
        #expect(activity.attributes["pizzaName"]?.stringValue == "Margherita")
        #expect(activity.phase == .active)
        #expect(activity.updateToken.count == 64 && activity.updateToken.allSatisfy(\.isHexDigit))
        #expect(activity.current?.contentState["status"]?.stringValue == "baking")
        #expect(activity.current?.alert?["title"]?.stringValue == "Order started")
        #expect(device.events.contains(.liveActivityStarted(activityID: activity.id, bundleID: Fixture.bundleID, attributesType: "PizzaDeliveryAttributes", updateToken: activity.updateToken)))
    }

    @Test("updates apply in timestamp order; an older one is ignored, an equal one applied")
    func updates() async throws {
        let device = Fixture.device(clock: self.clock)
        let activity = try await self.started(on: device)

        await device.deliver(self.push("update", at: self.now + 10, to: activity, apnsID: "L-1"))
        await device.deliver(self.push("update", at: self.now + 5, state: #"{"status":"stale news","eta":99}"#, to: activity, apnsID: "L-2"))
        await device.deliver(self.push("update", at: self.now + 10, state: #"{"status":"at the door","eta":0}"#, extra: #","relevance-score":75"#, to: activity, apnsID: "L-3"))

        let history = try #require(device.liveActivity(activity.id)).history
        #expect(history.map { $0.contentState["status"]?.stringValue } == ["baking", "on the way", "at the door"])
        #expect(history.last?.relevanceScore == 75)
        #expect(device.events.contains(.liveActivityPushIgnored(activityID: activity.id, reason: "timestamp 2023-11-14T22:13:25.000Z is older than the last applied 2023-11-14T22:13:30.000Z")))
    }

    @Test("the activity goes stale when the device clock passes its stale date; an update revives it")
    func staleDate() async throws {
        let device = Fixture.device(clock: self.clock)
        let activity = try await self.started(on: device, staleIn: 60)

        self.clock.advance(by: 59)
        #expect(device.liveActivity(activity.id)?.phase == .active)
        self.clock.advance(by: 1)
        #expect(device.liveActivity(activity.id)?.phase == .stale)
        #expect(device.events.last == .liveActivityBecameStale(activityID: activity.id))

        await device.deliver(self.push("update", at: self.now + 70, to: activity, apnsID: "L-4"))
        #expect(device.liveActivity(activity.id)?.phase == .active)
    }

    @Test("a content state that does not decode as the registered ContentState is rejected")
    func badContentState() async throws {
        let device = Fixture.device(clock: self.clock)
        let activity = try await self.started(on: device)

        await device.deliver(self.push("update", at: self.now + 1, state: #"{"status":5}"#, to: activity, apnsID: "L-5"))

        #expect(device.liveActivity(activity.id)?.history.count == 1)
        guard case .liveActivityPushRejected(let apnsID, let reason) = device.events.last else {
            Issue.record("expected a rejection, got \(String(describing: device.events.last))")
            return
        }
        #expect(apnsID == "L-5")
        #expect(reason.hasPrefix("content-state does not decode as PizzaDeliveryAttributes.ContentState"))
    }

    @Test("a start whose content state does not decode creates no activity")
    func badStart() async {
        let device = Fixture.device(clock: self.clock)
        device.install(Fixture.app())
        let start = #"{"aps":{"event":"start","timestamp":1,"attributes-type":"PizzaDeliveryAttributes","attributes":{"pizzaName":"M"},"content-state":{"eta":"soon"}}}"#
        await device.deliver(Fixture.push(start, token: Fixture.pushToStartToken, pushType: "liveactivity", apnsID: "L-6"))

        #expect(device.liveActivities.isEmpty)
        #expect(!device.events.contains { if case .liveActivityStarted = $0 { true } else { false } })
    }

    @Test("end keeps the activity until its dismissal date; later pushes are ignored")
    func end() async throws {
        let device = Fixture.device(clock: self.clock)
        let activity = try await self.started(on: device)
        let dismissal = self.now + 300

        await device.deliver(self.push("end", at: self.now + 20, state: #"{"status":"delivered","eta":0}"#, extra: #","dismissal-date":\#(dismissal)"#, to: activity, apnsID: "L-7"))
        await device.deliver(self.push("update", at: self.now + 30, to: activity, apnsID: "L-8"))

        let ended = try #require(device.liveActivity(activity.id))
        #expect(ended.phase == .ended)
        #expect(ended.history.map(\.event) == ["start", "end"])
        #expect(ended.current?.contentState["status"]?.stringValue == "delivered")
        #expect(device.events.contains(.liveActivityEnded(activityID: activity.id, dismissalDate: Date(timeIntervalSince1970: Double(dismissal)))))
        #expect(device.events.last == .liveActivityPushIgnored(activityID: activity.id, reason: "the activity has ended"))

        self.clock.advance(by: 300)
        #expect(device.liveActivity(activity.id)?.phase == .dismissed)
        #expect(device.events.last == .liveActivityDismissed(activityID: activity.id))
    }

    @Test("a Live Activity push to an unknown token is dropped")
    func unknownActivityToken() async {
        let device = Fixture.device(clock: self.clock)
        device.install(Fixture.app())
        let stray = String(repeating: "77", count: 32)
        await device.deliver(Fixture.push(#"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#, token: stray, pushType: "liveactivity", apnsID: "L-9"))
        #expect(device.events.last == .droppedUnknownToken(apnsID: "L-9", token: stray))
    }
}
