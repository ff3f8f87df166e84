import ForgeAPNs
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
import Testing

@Suite("Requested updates on phones that apply iOS's budgets: nothing throttled, the last state shown", .timeLimit(.minutes(3)))
struct PacedMatchTests {
    static let phones = 20
    static let bundle = "com.example.game"

    @Test("An hour of alerting updates, bursts among them: 10 at priority 10 and the rest downgraded, none throttled; every phone ends on the final score")
    func pacedMatch() async throws {
        let clock = SharedMatchClock()
        let (devices, streams) = reportingPhones(
            Self.phones, clock: clock, bundle: Self.bundle, pushToStartPrefix: "5b",
            type: LiveActivityType(attributesType: "GameAttributes", attributes: ActivityIDAttributes.self, contentState: Goals.self)
        )
        let bundleID = try APNSBundleID(Self.bundle)
        let ids = try (0..<Self.phones).map { try LiveActivityID("game-\($0)") }
        let applied = LockedBox(0)
        let changes = Fanout<Void>()

        try await withLoopbackMode(devices: devices) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                let manager = LiveActivityManager(client: client, store: InMemoryLiveActivityStore(), clock: clock)
                /// Waits until `condition` holds, checked after every report the backend applies.
                @Sendable func until(_ condition: @escaping @Sendable () async throws -> Bool) async throws -> Bool {
                    let subscription = changes.subscribe(buffer: 100_000)
                    if try await condition() { return true }
                    return await withTimeout(.seconds(30)) { () async -> Bool? in
                        for await _ in subscription where (try? await condition()) == true { return true }
                        return nil
                    } ?? false
                }
                try await withThrowingDiscardingTaskGroup { group in
                    for reports in streams {
                        group.addTask {
                            for await report in reports {
                                let answer = await manager.handleReport(body: report.json)
                                #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
                                applied.withLock { $0 += 1 }
                                changes.yield(())
                            }
                        }
                    }
                    #expect(try await until { applied.withLock { $0 } >= Self.phones }, "every install reported its push-to-start token")
                    for (index, id) in ids.enumerated() {
                        try await manager.start(
                            activity: id, installation: try InstallationID("phone-\(index)"), bundleID: bundleID, attributesType: "GameAttributes",
                            attributes: ActivityIDAttributes(activity_id: id.rawValue), contentState: Goals(home: 0, away: 0),
                            alert: APNSLiveActivityAlert(title: "Kick-off", body: "0-0")
                        )
                    }
                    #expect(try await until { try await manager.activities().allSatisfy { $0.state == .active } }, "every update token reported")

                    // An hour, a goal every 3 minutes, each an alerting update; every 5th round the
                    // backend sends three states at once (a correction), which the manager merges.
                    var expectedSent = 0, expectedSuperseded = 0
                    for round in 1...20 {
                        clock.advance(by: 180)
                        let sentAt = clock.now
                        let states = round % 5 == 0 ? [Goals(home: round, away: 1), Goals(home: round, away: 2), Goals(home: round, away: 0)] : [Goals(home: round, away: 0)]
                        for id in ids {
                            for state in states {
                                try await manager.request(
                                    update: id, contentState: state, alert: APNSLiveActivityAlert(title: "Goal", body: .plain("\(state.home)-\(state.away)")),
                                    importance: .alerting
                                )
                            }
                        }
                        expectedSent += 1
                        expectedSuperseded += states.count - 1
                        let summary = try await manager.deliverDue()
                        #expect(summary.sent == Self.phones && summary.failed == 0, "round \(round): \(summary)")
                        #expect(summary.downgraded == (round > 10 ? Self.phones : 0), "round \(round): \(summary.downgraded) downgraded")
                        // Each phone applies the round before the clock moves on: its budget is counted at arrival.
                        for device in devices {
                            try await device.awaitEvent(timeout: .seconds(30)) { event in
                                guard case .liveActivityUpdated(_, let timestamp) = event else { return false }
                                return timestamp >= sentAt
                            }
                        }
                    }
                    clock.advance(by: 60)
                    for id in ids { try await manager.request(end: id, contentState: Goals(home: 21, away: 0)) }
                    #expect(try await manager.deliverDue().sent == Self.phones)
                    for activity in try await manager.activities() {
                        #expect(activity.state == .ended, "\(activity.id): \(activity.state)")
                        let delivery = activity.delivery
                        #expect(delivery.sent == expectedSent + 1 && delivery.superseded == expectedSuperseded && delivery.downgraded == 10,
                                "\(activity.id): \(delivery)")
                        #expect(delivery.requested == expectedSent + expectedSuperseded + 1)
                    }
                    group.cancelAll()
                }
            }
            // What the phones did: nothing throttled, and the final score shown as the activity ended.
            try await expectEndedUnthrottled(devices, final: Goals(home: 21, away: 0))
            // The starts, one update per round and the ends: the merged states never reached APNs.
            #expect(loopback.server.acceptedCount == Self.phones * (1 + 20 + 1))
        }
    }
}
