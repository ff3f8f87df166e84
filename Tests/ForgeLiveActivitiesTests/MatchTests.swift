import ForgeAPNs
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
import Testing

/// One clock for the manager and every phone: the match's three hours pass without a sleep.
private final class MatchClock: APNSWallClock, DeviceClock {
    private let date = LockedBox(Date())
    var now: Date { self.date.withLock { $0 } }
    func advance(by seconds: TimeInterval) { self.date.withLock { $0 += seconds } }
}

private struct MatchAttributes: Codable, Sendable {
    var activity_id: String
}

private struct Score: Codable, Sendable {
    var home: Int
    var away: Int
    var minute: Int
}

/// Counts the reports the backend applied, so a test can wait for the app's reports to land.
private final class ReportLog: Sendable {
    private let answers = LockedBox<[(status: Int, body: String)]>([])
    private let changes = Fanout<Void>()

    func append(_ status: Int, _ body: [UInt8]) {
        self.answers.withLock { $0.append((status, String(decoding: body, as: UTF8.self))) }
        self.changes.yield(())
    }

    var all: [(status: Int, body: String)] { self.answers.withLock { $0 } }

    /// Waits until `condition` holds, checked now and after every report; `false` after 30 s.
    func until(_ condition: @escaping @Sendable () async throws -> Bool) async throws -> Bool {
        let changes = self.changes.subscribe(buffer: 1_000_000)
        if try await condition() { return true }
        return await withTimeout(.seconds(30)) { () async -> Bool? in
            for await _ in changes where (try? await condition()) == true { return true }
            return nil
        } ?? false
    }
}

@Suite("A match on 1,000 phones that play the app: reports, starts, updates, rotations, uninstalls, dismissals, ends", .timeLimit(.minutes(5)))
struct MatchTests {
    static let phones = 1_000
    static let bundle = "com.example.match"

    /// In memory with one manager; on PostgreSQL with two managers (two backend instances, each
    /// with its own client of the database) that both send every start, and take the reports and
    /// the updates of alternate phones.
    @Test(
        "Every phone shows one activity with the final score, except those uninstalled or dismissed, which nothing reaches after",
        arguments: [StoreKind.memory, .postgres]
    )
    func match(_ kind: StoreKind) async throws {
        let clock = MatchClock()
        let (devices, streams) = reportingPhones(
            Self.phones, clock: clock, bundle: Self.bundle, pushToStartPrefix: "5a",
            type: LiveActivityType(attributesType: "MatchAttributes", attributes: MatchAttributes.self, contentState: Score.self)
        )
        let log = ReportLog()
        let bundleID = try APNSBundleID(Self.bundle)
        let ids = try (0..<Self.phones).map { try LiveActivityID("match-\($0)") }
        let rotated = Set(0..<100), uninstalled = Set(100..<150), dismissed = Set(150..<170)

        try await kind.withStores(count: 2) { stores in
        try await withLoopbackMode(devices: devices) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                let managers = stores.map { LiveActivityManager(client: client, store: $0, clock: clock) }
                // The manager that serves phone `index`: one in memory, alternate ones on PostgreSQL.
                @Sendable func managerOf(_ index: Int) -> LiveActivityManager { kind == .memory ? managers[0] : managers[index % 2] }
                let manager = managers[0]
                try await withThrowingDiscardingTaskGroup { group in
                    // The apps' posts to the backend, as JSON, each applied by a manager's handler.
                    for (index, reports) in streams.enumerated() {
                        let manager = managerOf(index)
                        group.addTask {
                            for await report in reports {
                                let answer = await manager.handleReport(body: report.json)
                                log.append(answer.status, answer.body)
                            }
                        }
                    }
                    #expect(try await log.until { log.all.count >= Self.phones }, "every install reported its push-to-start token")

                    // Kick-off: every start sent twice (a retrying backend; on PostgreSQL, by both
                    // instances at once) makes one activity per phone.
                    try await withThrowingDiscardingTaskGroup { starts in
                        for (index, id) in ids.enumerated() {
                            for attempt in 1...2 {
                                let manager = kind == .memory ? managers[0] : managers[attempt - 1]
                                starts.addTask {
                                    try await manager.start(
                                        activity: id, installation: try InstallationID("phone-\(index)"), bundleID: bundleID,
                                        attributesType: "MatchAttributes", attributes: MatchAttributes(activity_id: id.rawValue),
                                        contentState: Score(home: 0, away: 0, minute: 0),
                                        alert: APNSLiveActivityAlert(title: "Kick-off", body: "0-0")
                                    )
                                }
                            }
                        }
                    }
                    #expect(try await log.until {
                        try await manager.activities().allSatisfy { $0.state == .active }
                    }, "every phone reported its activity's update token")

                    // 180 minutes, an update every 9: rotations at minute 45, uninstalls and dismissals at 90.
                    for minute in stride(from: 9, through: 180, by: 9) {
                        let lastRound = clock.now
                        clock.advance(by: 9 * 60)
                        // The server accepted the last round's updates; each phone applies its own
                        // soon after. A token rotated, an app uninstalled or an activity dismissed
                        // before that would meet the update late.
                        let disturbed = minute == 45 ? rotated : minute == 90 ? uninstalled.union(dismissed) : []
                        for index in disturbed {
                            try await devices[index].awaitEvent(timeout: .seconds(30)) { event in
                                guard case .liveActivityUpdated(_, let timestamp) = event else { return false }
                                return timestamp >= lastRound.addingTimeInterval(-1)
                            }
                        }
                        if minute == 45 {
                            for index in rotated { try devices[index].rotateUpdateToken(of: try #require(devices[index].liveActivities.first?.id)) }
                            #expect(try await log.until {
                                try await rotated.asyncAllSatisfy { index in
                                    try await manager.activity(ids[index])?.updateToken?.hexString == devices[index].liveActivities.first?.updateToken
                                }
                            }, "the rotated update tokens were reported")
                        }
                        if minute == 90 {
                            for index in uninstalled {
                                let token = try #require(devices[index].liveActivities.first?.updateToken)
                                devices[index].uninstall(Self.bundle)
                                // APNs learns of the uninstall: its tokens are unregistered from now on.
                                loopback.server.register(token: token, LocalAPNSTokenRecord(bundleID: Self.bundle, environment: .sandbox, state: .unregistered(clock.now)))
                            }
                            for index in dismissed { try devices[index].dismissActivity(try #require(devices[index].liveActivities.first?.id)) }
                            #expect(try await log.until {
                                try await dismissed.asyncAllSatisfy { try await manager.activity(ids[$0])?.state == .ended }
                            }, "the dismissals were reported")
                        }
                        try await withThrowingDiscardingTaskGroup { updates in
                            for (index, id) in ids.enumerated() {
                                let manager = managerOf(index + minute / 9)
                                updates.addTask {
                                    do {
                                        try await manager.update(
                                            activity: id, contentState: Score(home: minute / 30, away: minute / 60, minute: minute),
                                            priority: .consideringDevicePower
                                        )
                                    } catch let error as LiveActivityError {
                                        let expected = (uninstalled.contains(index) && (error.code == .sendFailed || error.code == .notLive))
                                            || (dismissed.contains(index) && error.code == .notLive)
                                        #expect(expected, "phone \(index) at minute \(minute): \(error)")
                                    }
                                }
                            }
                        }
                    }
                    // The final whistle.
                    for id in ids {
                        _ = try? await manager.end(activity: id, contentState: Score(home: 6, away: 3, minute: 180))
                    }
                    let states = try await manager.activities()
                    for (index, activity) in zip(0..., states.sorted { Int($0.id.rawValue.dropFirst(6))! < Int($1.id.rawValue.dropFirst(6))! }) {
                        if uninstalled.contains(index) {
                            #expect(activity.state == .dead(reason: "Unregistered"), "phone \(index): \(activity.state)")
                        } else {
                            #expect(activity.state == .ended, "phone \(index): \(activity.state)")
                        }
                    }
                    for reports in streams { _ = reports }
                    group.cancelAll()
                }
            }
            // What the phones show.
            for (index, device) in devices.enumerated() where !uninstalled.contains(index) {
                let activities = device.liveActivities
                #expect(activities.count == 1, "phone \(index) has \(activities.count) activities")
                guard let activity = activities.first else { continue }
                if dismissed.contains(index) {
                    #expect(activity.phase == .dismissed && activity.history.last?.event != "end", "phone \(index): nothing after the dismissal")
                } else {
                    _ = try await device.awaitEvent { if case .liveActivityEnded = $0 { true } else { false } }
                    let final = device.liveActivities.first
                    #expect(final?.phase == .ended && final?.current?.contentState == .object(["home": .number(6), "away": .number(3), "minute": .number(180)]),
                            "phone \(index): \(String(describing: final?.current))")
                    #expect(final?.history.count == 22, "phone \(index): start, 20 updates, end: \(final?.history.map(\.event) ?? [])")
                }
            }
            // A start per phone (the second of each sent nothing), 20 updates to every live activity (none
            // to the 20 dismissed from minute 90 on, none to the 50 uninstalled after their 410), the ends.
            let live = Self.phones - uninstalled.count - dismissed.count
            #expect(loopback.server.acceptedCount == Self.phones + 9 * Self.phones + 11 * live + live)
            let rejected = log.all.filter { $0.status != 200 }
            #expect(rejected.isEmpty, "reports refused: \(rejected.prefix(3))")
        }
        }
    }
}

extension Set where Element == Int {
    fileprivate func asyncAllSatisfy(_ predicate: (Int) async throws -> Bool) async rethrows -> Bool {
        for element in self where !(try await predicate(element)) { return false }
        return true
    }
}
