import ForgeNotificationTypes
import ForgeSimulatedDevice
import Foundation
import Testing

@Suite("Broadcasts to Live Activities subscribed to a channel")
struct BroadcastTests {
    let now = Int(Fixture.start.timeIntervalSince1970)
    let channel = "dHJhY2tpbmctY2hhbm5lbA=="

    /// Starts an activity, subscribed to `channel` through `input-push-channel` when given.
    func start(on device: SimulatedDevice, pizza: String, channel: String? = nil, apnsID: String) async throws -> LiveActivity {
        let input = channel.map { #","input-push-channel":"\#($0)""# } ?? ""
        let json = #"{"aps":{"event":"start","timestamp":\#(self.now),"attributes-type":"PizzaDeliveryAttributes","attributes":{"pizzaName":"\#(pizza)"},"content-state":{"status":"baking","eta":20}\#(input)}}"#
        await device.deliver(Fixture.push(json, token: Fixture.pushToStartToken, pushType: "liveactivity", apnsID: apnsID))
        return try #require(device.liveActivities.first { $0.attributes["pizzaName"]?.stringValue == pizza })
    }

    func broadcast(_ event: String, at offset: Int, status: String, channel: String? = nil, apnsID: String) -> DevicePush {
        let json = #"{"aps":{"event":"\#(event)","timestamp":\#(self.now + offset),"content-state":{"status":"\#(status)","eta":1}}}"#
        return DevicePush.broadcast(channelID: channel ?? self.channel, payload: Array(json.utf8), apnsID: apnsID, date: Fixture.start)
    }

    @Test("input-push-channel subscribes the started activity; broadcasts update it by timestamp, end it, then are ignored")
    func subscribedAtStart() async throws {
        let device = Fixture.device()
        device.install(Fixture.app())
        let activity = try await self.start(on: device, pizza: "Margherita", channel: self.channel, apnsID: "S-1")
        #expect(activity.channelID == self.channel)
        #expect(device.events.contains(.liveActivitySubscribed(activityID: activity.id, channelID: self.channel)))

        await device.deliver(self.broadcast("update", at: 10, status: "on the way", apnsID: "B-1"))
        await device.deliver(self.broadcast("update", at: 5, status: "late news", apnsID: "B-2"))
        await device.deliver(self.broadcast("end", at: 20, status: "delivered", apnsID: "B-3"))
        await device.deliver(self.broadcast("update", at: 30, status: "after the end", apnsID: "B-4"))

        let after = try #require(device.liveActivity(activity.id))
        #expect(after.history.map { $0.contentState["status"]?.stringValue } == ["baking", "on the way", "delivered"])
        #expect(after.phase == .ended)
        #expect(device.events.contains(.broadcastReceived(apnsID: "B-1", channelID: self.channel)))
        #expect(device.events.contains(.liveActivityPushIgnored(activityID: activity.id, reason: "timestamp 2023-11-14T22:13:25.000Z is older than the last applied 2023-11-14T22:13:30.000Z")))
        #expect(device.events.last == .liveActivityPushIgnored(activityID: activity.id, reason: "the activity has ended"))
    }

    @Test("a broadcast reaches every subscribed activity (at start or by subscription) and no other")
    func everySubscriber() async throws {
        let device = Fixture.device()
        device.install(Fixture.app())
        let first = try await self.start(on: device, pizza: "Margherita", channel: self.channel, apnsID: "S-1")
        let second = try await self.start(on: device, pizza: "Funghi", apnsID: "S-2")
        let other = try await self.start(on: device, pizza: "Diavola", apnsID: "S-3")
        try device.subscribe(second.id, toChannel: self.channel)

        await device.deliver(self.broadcast("update", at: 10, status: "on the way", apnsID: "B-1"))

        for activity in [first, second] {
            #expect(device.liveActivity(activity.id)?.current?.contentState["status"]?.stringValue == "on the way")
        }
        #expect(device.liveActivity(other.id)?.history.count == 1)
    }

    @Test("a broadcast no activity is subscribed to is dropped; a start on a channel is rejected; unknown activities cannot subscribe")
    func notSubscribed() async throws {
        let device = Fixture.device()
        device.install(Fixture.app())
        await device.deliver(self.broadcast("update", at: 1, status: "x", apnsID: "B-1"))
        #expect(device.events.last == .broadcastNotSubscribed(apnsID: "B-1", channelID: self.channel))

        _ = try await self.start(on: device, pizza: "Margherita", channel: self.channel, apnsID: "S-1")
        await device.deliver(self.broadcast("start", at: 2, status: "x", apnsID: "B-2"))
        #expect(device.events.last == .liveActivityPushRejected(apnsID: "B-2", reason: "start sent to a broadcast channel"))

        #expect(throws: SimulatedDeviceError.activityNotFound) { try device.subscribe("activity-99", toChannel: self.channel) }
    }
}
