import ForgeNotificationTypes
import ForgeSimulatedDevice
import Foundation
import Testing

@Suite("The app reports its Live Activity tokens and ends, as an ActivityKit app posts them to its backend")
struct ActivityReportingTests {
    private struct Attributes: Codable, Sendable { var activity_id: String }
    private struct State: Codable, Sendable { var step: Int }

    @Test("Install, rotation, start, a new update token, the person's dismissal and iOS's 8-hour end each post one report, in order")
    func reports() async throws {
        let clock = ManualDeviceClock(now: Date(timeIntervalSince1970: 1_800_000_000))
        let device = SimulatedDevice(clock: clock, backgroundBudget: nil, activityTokenSeed: 7)
        let app = SimulatedApp(
            bundleID: "com.example.match", deviceTokens: [.sandbox: String(repeating: "ab", count: 32)],
            pushToStartToken: String(repeating: "5a", count: 32),
            activityTypes: [LiveActivityType(attributesType: "MatchAttributes", attributes: Attributes.self, contentState: State.self)]
        )
        let (reporting, reports) = ActivityReporting.make(installation: "phone-1")
        app.activityReporting = reporting
        device.install(app)
        let rotated = try device.rotatePushToStartToken(of: "com.example.match")
        let first = try device.requestActivity(
            bundleID: "com.example.match", attributesType: "MatchAttributes", attributes: .object(["activity_id": .string("match-9")]),
            contentState: .object(["step": .number(1)])
        )
        let newToken = try device.rotateUpdateToken(of: first.id)
        try device.dismissActivity(first.id)
        let second = try device.requestActivity(
            bundleID: "com.example.match", attributesType: "MatchAttributes", attributes: .object([:]), contentState: .object(["step": .number(1)])
        )
        clock.advance(by: SimulatedDevice.maximumActivityDuration - 1)
        #expect(device.liveActivity(second.id)?.phase == .active)
        clock.advance(by: 1)
        #expect(device.liveActivity(second.id)?.phase == .ended, "iOS ends an activity after eight hours")
        reporting.finish()

        var posted: [[String: Any]] = []
        for await report in reports {
            posted.append(try #require(try JSONSerialization.jsonObject(with: Data(report.json)) as? [String: Any]))
        }
        #expect(posted.map { $0["kind"] as? String } == [
            "push_to_start_token", "push_to_start_token", "update_token", "update_token", "ended", "update_token", "ended",
        ])
        #expect(posted.map { $0["sequence"] as? Int } == Array(1...7), "a sequence that grows with each report")
        #expect(posted[0]["token"] as? String == String(repeating: "5a", count: 32) && posted[1]["token"] as? String == rotated)
        #expect(posted[2]["activity"] as? String == "match-9" && posted[2]["token"] as? String == first.updateToken)
        #expect(posted[3]["token"] as? String == newToken && newToken != first.updateToken)
        #expect(posted[5]["activity"] as? String == second.id, "without an id in the attributes, the device's")
        #expect(posted.allSatisfy {
            $0["installation"] as? String == "phone-1" && $0["bundle_id"] as? String == "com.example.match"
                && $0["attributes_type"] as? String == "MatchAttributes" && $0["environment"] as? String == "sandbox"
        })
    }
}
