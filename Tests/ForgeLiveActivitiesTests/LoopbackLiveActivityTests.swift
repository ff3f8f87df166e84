import ForgeAPNs
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLoopback
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
