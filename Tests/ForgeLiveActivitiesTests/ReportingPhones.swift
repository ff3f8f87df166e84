import ForgeAPNsCore
import ForgeLoopback
import ForgeSupport
import Foundation

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
