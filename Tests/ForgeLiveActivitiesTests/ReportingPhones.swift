import ForgeAPNsCore
import ForgeLoopback
import ForgeNotificationTypes
import ForgeSupport
import Foundation
import Testing

/// One clock for the manager and every phone of a match.
final class SharedMatchClock: APNSWallClock, DeviceClock {
    private let date = LockedBox(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { self.date.withLock { $0 } }
    func advance(by seconds: TimeInterval) { self.date.withLock { $0 += seconds } }
}

/// Attributes whose `activity_id` is the backend's id, which the app reports its tokens under.
struct ActivityIDAttributes: Codable, Sendable {
    var activity_id: String
}

/// A match's content state.
struct Goals: Codable, Sendable, Equatable {
    var home: Int
    var away: Int
}

/// Phones that play the app for the manager's tests: `count` phones on `clock`, each with one app
/// of `bundle` that starts Live Activities of `type` and reports its tokens as a real app posts them
/// (installation `phone-<index>`); the reports arrive on each phone's stream.
func reportingPhones(
    _ count: Int, clock: some DeviceClock, bundle: String, pushToStartPrefix: String, type: LiveActivityType
) -> (devices: [SimulatedDevice], reports: [AsyncStream<ActivityTokenReport>]) {
    var devices: [SimulatedDevice] = []
    var streams: [AsyncStream<ActivityTokenReport>] = []
    for index in 0..<count {
        let device = SimulatedDevice(clock: clock, backgroundBudget: nil, activityTokenSeed: UInt64(index + 1))
        let app = SimulatedApp(
            bundleID: bundle, deviceTokens: [.sandbox: String(format: "%064x", index + 1)],
            pushToStartToken: pushToStartPrefix + String(format: "%062x", index + 1), activityTypes: [type]
        )
        let (reporting, reports) = ActivityReporting.make(installation: "phone-\(index)")
        app.activityReporting = reporting
        device.install(app)
        devices.append(device)
        streams.append(reports)
    }
    return (devices, streams)
}

/// What each phone did in a match: nothing throttled, and its activity ended showing `final`.
func expectEndedUnthrottled(_ devices: [SimulatedDevice], final: Goals) async throws {
    let shown = JSONValue.object(["home": .number(Double(final.home)), "away": .number(Double(final.away))])
    for (index, device) in devices.enumerated() {
        _ = try await device.awaitEvent(timeout: .seconds(30)) { if case .liveActivityEnded = $0 { true } else { false } }
        let throttled = device.timeline.filter { entry in
            if case .delivery(_, .throttled, _) = entry.event { true } else { false }
        }
        #expect(throttled.isEmpty, "phone \(index): \(throttled.map(\.description))")
        let activity = device.liveActivities.first
        #expect(activity?.phase == .ended && activity?.current?.contentState == shown, "phone \(index): \(String(describing: activity?.current))")
    }
}
