import ForgeAPNs
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
import Testing

private let shop = "com.example.shop"
private let phoneToken = String(repeating: "ab", count: 32)
private let phonePushToStart = String(repeating: "5a", count: 32)

/// The app's side: an app with a push-to-start token for `OrderAttributes`, decoding every content
/// state into `OrderState` as ActivityKit would.
private func shopApp() -> SimulatedApp {
    SimulatedApp(
        bundleID: shop, deviceTokens: [.sandbox: phoneToken], pushToStartToken: phonePushToStart,
        activityTypes: [LiveActivityType(attributesType: "OrderAttributes", attributes: OrderAttributes.self, contentState: OrderState.self)]
    )
}

private func status(_ activity: LiveActivity?) -> String? {
    guard case .object(let fields)? = activity?.current?.contentState, case .string(let status)? = fields["status"] else { return nil }
    return status
}

@Suite("Managed Live Activities end to end: the real client, the local server over TLS, and a phone that applies iOS's rules",
       .timeLimit(.minutes(1)))
struct LoopbackLiveActivityTests {
    @Test("Reported tokens in, one activity on the phone: start (twice), updates held until the token, the latest shown, then ended")
    func lifecycle() async throws {
        let device = SimulatedDevice(backgroundBudget: nil)
        device.install(shopApp())
        let installation = try InstallationID("phone-1")
        let bundleID = try APNSBundleID(shop)
        let id = try LiveActivityID("order-17")
        try await withLoopbackMode(devices: [device]) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                let manager = LiveActivityManager(client: client, store: InMemoryLiveActivityStore())
                // What the app posts at install: its push-to-start token, as JSON.
                let posted = await manager.handleReport(body: Array(
                    #"{"kind":"push_to_start_token","installation":"phone-1","bundle_id":"\#(shop)","attributes_type":"OrderAttributes","token":"\#(phonePushToStart)","sequence":1,"environment":"sandbox"}"#.utf8
                ))
                #expect(posted.status == 200)
                for _ in 1...2 {
                    try await manager.start(
                        activity: id, installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
                        attributes: OrderAttributes(order: "17"), contentState: OrderState(status: "packing", eta: 30),
                        alert: APNSLiveActivityAlert(title: "Order 17", body: "Packing")
                    )
                }
                let started = try await device.awaitEvent { if case .liveActivityStarted = $0 { true } else { false } }
                guard case .liveActivityStarted(_, _, _, let updateToken) = started.event else { return }
                // Before the app reports the update token, updates are held: the latest one wins.
                #expect(try await manager.update(activity: id, contentState: OrderState(status: "packed", eta: 20)) == .held)
                #expect(try await manager.update(activity: id, contentState: OrderState(status: "shipped", eta: 10)) == .held)
                // The app reports the activity's update token (activity.pushTokenUpdates).
                let reported = try await manager.report(.updateToken(id, token: try DeviceToken(updateToken), sequence: 2, registration: nil))
                #expect(reported.sentHeld != nil)
                _ = try await device.awaitEvent { if case .liveActivityUpdated = $0 { true } else { false } }
                #expect(status(device.liveActivities.first) == "shipped")
                _ = try await manager.update(activity: id, contentState: OrderState(status: "arriving", eta: 2))
                _ = try await manager.end(activity: id, contentState: OrderState(status: "delivered", eta: 0), dismissalDate: nil)
                _ = try await device.awaitEvent { if case .liveActivityEnded = $0 { true } else { false } }
                await #expect { try await manager.update(activity: id, contentState: OrderState(status: "late", eta: 0)) } throws: { error in
                    (error as? LiveActivityError)?.code == .notLive
                }
            }
            let activities = device.liveActivities
            #expect(activities.count == 1, "one activity for two starts of the same id: \(activities.map(\.id))")
            #expect(activities.first?.phase == .ended && status(activities.first) == "delivered")
            #expect(activities.first?.history.map(\.event) == ["start", "update", "update", "end"])
            #expect(!device.timeline.contains { if case .liveActivityPushIgnored = $0.event { true } else { false } }, "no push iOS would ignore")
            #expect(loopback.server.acceptedCount == 4, "a start, the held update, one update and the end: nothing else left")
        }
    }
}

/// One clock for the manager and the phone.
private final class SharedClock: APNSWallClock, DeviceClock {
    private let date = LockedBox(Date())
    var now: Date { self.date.withLock { $0 } }
    func advance(by seconds: TimeInterval) { self.date.withLock { $0 += seconds } }
}

private struct Trip: Codable, Sendable {
    var activity_id: String
}

private struct Leg: Codable, Sendable, Equatable {
    var stop: Int
}

@Suite("Renewal: a 10-hour activity outlives iOS's 8 hours with no gap on the phone", .timeLimit(.minutes(1)))
struct RenewalTests {
    @Test("Renewed automatically at 7 h 30 min: the successor shows the latest state before the old one ends; updates never stop")
    func tenHours() async throws {
        let clock = SharedClock()
        let device = SimulatedDevice(clock: clock, backgroundBudget: nil, activityTokenSeed: 42)
        let app = SimulatedApp(
            bundleID: shop, deviceTokens: [.sandbox: phoneToken], pushToStartToken: phonePushToStart,
            activityTypes: [LiveActivityType(attributesType: "Trip", attributes: Trip.self, contentState: Leg.self)]
        )
        let (reporting, reports) = ActivityReporting.make(installation: "phone-1")
        app.activityReporting = reporting
        device.install(app)
        let id = try LiveActivityID("trip-1")
        var configuration = LiveActivityManager.Configuration()
        configuration.automaticRenewal = .init { _ in APNSLiveActivityAlert(title: "Trip", body: "Still on the way") }
        try await withLoopbackMode(devices: [device]) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                let manager = LiveActivityManager(client: client, store: InMemoryLiveActivityStore(), clock: clock, configuration: configuration)
                // Each applied report rings; a wait reads the count after each ring.
                let applied = LockedBox(0)
                let rings = Fanout<Void>()
                let bell = rings.subscribeNewest()
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask {
                        for await report in reports {
                            _ = await manager.handleReport(body: report.json)
                            applied.withLock { $0 += 1 }
                            rings.yield(())
                        }
                    }
                    var ringing = bell.makeAsyncIterator()
                    /// Waits until `count` of the app's reports are applied.
                    func settle(_ count: Int) async throws {
                        while applied.withLock({ $0 }) < count { _ = await ringing.next() }
                    }
                    try await settle(1)  // the push-to-start token
                    try await manager.start(
                        activity: id, installation: try InstallationID("phone-1"), bundleID: try APNSBundleID(shop), attributesType: "Trip",
                        attributes: Trip(activity_id: id.rawValue), contentState: Leg(stop: 0), alert: APNSLiveActivityAlert(title: "Trip", body: "Leaving")
                    )
                    _ = try await device.awaitEvent { if case .liveActivityStarted = $0 { true } else { false } }
                    try await settle(2)  // its update token
                    var position = device.timeline.count
                    for step in 1...20 {
                        clock.advance(by: 30 * 60)
                        let summary = try await manager.sweep()
                        if step == 15 {
                            #expect(summary.renewed == 1, "renewed at 7 h 30 min")
                            _ = try await device.awaitEvent(from: position) { if case .liveActivityStarted = $0 { true } else { false } }
                            try await settle(3)  // the successor's update token, under the same id
                            _ = try await device.awaitEvent(from: position) { if case .liveActivityEnded = $0 { true } else { false } }
                        } else {
                            #expect(summary.renewed == 0 && summary.ended == 0, "step \(step): \(summary)")
                        }
                        position = device.timeline.count
                        _ = try await manager.update(activity: id, contentState: Leg(stop: step), priority: .consideringDevicePower)
                        _ = try await device.awaitEvent(from: position) { if case .liveActivityUpdated = $0 { true } else { false } }
                        let showing = device.liveActivities.filter { $0.phase == .active }
                        #expect(showing.count == 1 && showing.first?.current?.contentState == .object(["stop": .number(Double(step))]),
                                "step \(step) (\(step * 30) min): \(showing.map { "\($0.id) \(String(describing: $0.current?.contentState))" })")
                    }
                    let record = try #require(try await manager.activity(id))
                    #expect(record.renewals == 1 && record.state == .active && record.renewal == nil)
                    reporting.finish()
                }
            }
        }
        let activities = device.liveActivities
        #expect(activities.count == 2 && activities.first?.phase != .active && activities.last?.phase == .active)
    }
}
