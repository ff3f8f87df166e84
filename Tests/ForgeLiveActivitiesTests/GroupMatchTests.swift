import ForgeAPNs
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
import Testing

@Suite("A match for a whole group on phones that apply iOS's rules: channel and token members alike", .timeLimit(.minutes(6)))
struct GroupMatchTests {
    static let phones = 2000
    static let onChannel = 400
    static let bundle = "com.example.match"
    static let rounds = 40
    static let statesPerRound = 5

    @Test("3 hours, 2,000 phones (400 on the group's channel, 1,600 by token), 200 states of which 20 alerting: nothing throttled, every phone ends on the last state, one request per round")
    func groupMatch() async throws {
        let clock = SharedMatchClock()
        let (devices, streams) = reportingPhones(
            Self.phones, clock: clock, bundle: Self.bundle, pushToStartPrefix: "6c",
            type: LiveActivityType(attributesType: "MatchAttributes", attributes: ActivityIDAttributes.self, contentState: Goals.self)
        )
        let bundleID = try APNSBundleID(Self.bundle)
        let group = try LiveActivityGroupID("match-42")
        let ids = try (0..<Self.phones).map { try LiveActivityID("fan-\($0)") }
        let applied = LockedBox(0)
        let changes = Fanout<Void>()

        try await withLoopbackMode(devices: devices) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                var configuration = LiveActivityManager.Configuration()
                configuration.startBudget = UpdateBudget(count: 10, window: .seconds(3600))
                let manager = LiveActivityManager(client: client, store: InMemoryLiveActivityStore(), clock: clock, configuration: configuration)
                /// Waits until `condition` holds, checked after every report the backend applies.
                @Sendable func until(_ condition: @escaping @Sendable () async throws -> Bool) async throws -> Bool {
                    let subscription = changes.subscribe(buffer: 100_000)
                    if try await condition() { return true }
                    return await withTimeout(.seconds(60)) { () async -> Bool? in
                        for await _ in subscription where (try? await condition()) == true { return true }
                        return nil
                    } ?? false
                }
                try await withThrowingDiscardingTaskGroup { tasks in
                    for (index, reports) in streams.enumerated() {
                        tasks.addTask {
                            for await report in reports {
                                // The first 400 installs run a build on iOS 18 that can listen to channels.
                                var body = report.json
                                if index < Self.onChannel, report.kind == "push_to_start_token" {
                                    var object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
                                    object["channels"] = true
                                    body = Array(try JSONSerialization.data(withJSONObject: object))
                                }
                                let answer = await manager.handleReport(body: body)
                                #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
                                applied.withLock { $0 += 1 }
                                changes.yield(())
                            }
                        }
                    }
                    #expect(try await until { applied.withLock { $0 } >= Self.phones }, "every install reported its push-to-start token")
                    for (index, id) in ids.enumerated() {
                        try await manager.start(
                            activity: id, installation: try InstallationID("phone-\(index)"), bundleID: bundleID, attributesType: "MatchAttributes",
                            attributes: ActivityIDAttributes(activity_id: id.rawValue), contentState: Goals(home: 0, away: 0),
                            alert: APNSLiveActivityAlert(title: "Kick-off", body: "0-0"), group: group
                        )
                    }
                    #expect(try await until { try await manager.activities(inGroup: group).allSatisfy { $0.state == .active } }, "every member running")
                    let channels = try await manager.channels(of: group)
                    let channel = try #require(channels.first?.channelID)
                    #expect(channels.count == 1)
                    let members = try await manager.activities(inGroup: group)
                    #expect(members.count { $0.channelID == channel } == Self.onChannel && members.count { $0.channelID == nil } == Self.phones - Self.onChannel)

                    // 40 rounds 4.5 minutes apart, five states each as fast as the backend makes them (the
                    // manager keeps the last); the last state of every other round is alerting: 20 in all.
                    for round in 1...Self.rounds {
                        clock.advance(by: 270)
                        let sentAt = clock.now
                        for step in 1...Self.statesPerRound {
                            let alerting = round % 2 == 0 && step == Self.statesPerRound
                            let outcome = try await manager.request(
                                groupUpdate: group, contentState: Goals(home: round, away: step),
                                alert: alerting ? APNSLiveActivityAlert(title: "Goal", body: .plain("\(round)-\(step)")) : nil,
                                importance: alerting ? .alerting : .routine
                            )
                            #expect(outcome.channels == 1 && outcome.onChannels == Self.onChannel && outcome.members == Self.phones - Self.onChannel)
                        }
                        let summary = try await manager.deliverDue(limit: Self.phones)
                        #expect(summary.sent == Self.phones - Self.onChannel && summary.broadcasts == 1 && summary.failed == 0 && summary.downgraded == 0,
                                "round \(round): \(summary)")
                        // Each phone applies the round before the clock moves on: its budget is counted at arrival.
                        for device in devices {
                            try await device.awaitEvent(timeout: .seconds(30)) { event in
                                guard case .liveActivityUpdated(_, let timestamp) = event else { return false }
                                return timestamp >= sentAt
                            }
                        }
                    }
                    clock.advance(by: 60)
                    let end = try await manager.request(groupEnd: group, contentState: Goals(home: 41, away: 0))
                    #expect(end.channels == 1 && end.members == Self.phones - Self.onChannel)
                    let ended = try await manager.deliverDue(limit: Self.phones)
                    #expect(ended.sent == Self.phones - Self.onChannel && ended.broadcasts == 1)
                    try await manager.deliverDue(limit: Self.phones)
                    #expect(try await manager.channels(of: group).first?.phase == .deleted(channel), "the channel is deleted after the end")
                    for activity in try await manager.activities(inGroup: group) {
                        #expect(activity.state == .ended, "\(activity.id): \(activity.state)")
                        if activity.channelID == nil {
                            #expect(activity.delivery.sent == Self.rounds + 1 && activity.delivery.downgraded == 0, "\(activity.id): \(activity.delivery)")
                            #expect(activity.delivery.superseded == Self.rounds * (Self.statesPerRound - 1))
                        }
                    }
                    let counted = try #require(try await manager.channels(of: group).first)
                    #expect(counted.delivery.sent == Self.rounds + 1 && counted.delivery.superseded == Self.rounds * (Self.statesPerRound - 1))
                    tasks.cancelAll()
                }
            }
            // What the phones did: nothing throttled, and the final score shown as the activity ended;
            // the first 400 on the group's channel.
            try await expectEndedUnthrottled(devices, final: Goals(home: 41, away: 0))
            for (index, device) in devices.enumerated() {
                let channel = device.liveActivities.first?.channelID
                #expect((channel != nil) == (index < Self.onChannel), "phone \(index) on the channel: \(String(describing: channel))")
            }
            // Per member, one request per round (never more than its distinct states): starts, one
            // update per round and the end for the token members; one broadcast per round and the end
            // for the channel.
            let tokenMembers = Self.phones - Self.onChannel
            #expect(loopback.server.acceptedCount == Self.phones + tokenMembers * (Self.rounds + 1) + (Self.rounds + 1))
        }
    }
}
