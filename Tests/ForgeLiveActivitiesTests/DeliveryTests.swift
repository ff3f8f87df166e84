import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeLiveActivities
import ForgeSupport
import ForgeTestSupport
import Foundation
import MetricsTestKit
import Testing

private let bundleID = try! APNSBundleID("com.example.shop")
private let installation = try! InstallationID("install-1")

private struct Score: Codable, Sendable, Equatable {
    var home: Int
    var away: Int
}

/// An activity the app started itself, registered by its update token report.
private func register(_ manager: LiveActivityManager, _ id: String, token index: Int = 1) async throws -> LiveActivityID {
    let activity = try LiveActivityID(id)
    try await manager.report(.updateToken(
        activity, token: try DeviceToken(String(format: "%064x", index)), sequence: nil,
        registration: try ActivityReport.Registration(bundleID: bundleID, attributesType: "ScoreAttributes", installation: installation)
    ))
    return activity
}

private func header(_ request: APNSHTTPRequest, _ name: String) -> String? {
    request.headers.first { $0.name == name }?.value
}

private func aps(_ request: APNSHTTPRequest) throws -> [String: Any] {
    let object = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
    return try #require(object["aps"] as? [String: Any])
}

private func score(_ request: APNSHTTPRequest) throws -> Score {
    let state = try #require(try aps(request)["content-state"])
    return try JSONDecoder().decode(Score.self, from: JSONSerialization.data(withJSONObject: state))
}

private func manager(_ fixture: InProcess, store: (any LiveActivityStore)? = nil, _ change: (inout LiveActivityManager.Configuration) -> Void = { _ in })
    -> LiveActivityManager
{
    var configuration = LiveActivityManager.Configuration()
    change(&configuration)
    return LiveActivityManager(client: fixture.client, store: store ?? fixture.store, clock: fixture.clock, configuration: configuration)
}

@Suite("Requested pushes: coalesced per activity, paced, budgeted, shared by managers", .timeLimit(.minutes(2)))
struct DeliveryTests {
    @Test("A burst of 50 updates within a second sends at most 2, the first and the last; the counts say so")
    func burst() async throws {
        let fixture = try InProcess()
        let manager = manager(fixture)
        let id = try await register(manager, "match-42")
        for goal in 0..<50 {
            let outcome = try await manager.request(update: id, contentState: Score(home: goal, away: 0))
            #expect(outcome.state == .active && outcome.superseded == (goal >= 2))
            try await manager.deliverDue()
            fixture.clock.advance(by: 0.019)
        }
        #expect(fixture.sent.count == 1)
        fixture.clock.advance(by: 1)
        let summary = try await manager.deliverDue()
        #expect(summary.sent == 1 && summary.failed == 0)
        #expect(try fixture.sent.map(score) == [Score(home: 0, away: 0), Score(home: 49, away: 0)])
        #expect(fixture.sent.allSatisfy { header($0, "apns-priority") == "5" && header($0, "apns-push-type") == "liveactivity" })
        // No relevance score unless one was given.
        #expect(try fixture.sent.allSatisfy { try aps($0)["relevance-score"] == nil })
        let delivery = try #require(try await manager.activity(id)).delivery
        #expect((delivery.requested, delivery.sent, delivery.superseded) == (50, 2, 48))
        #expect(delivery.waiting == nil && delivery.inFlight == nil && delivery.dueAt == nil)
        // Nothing more to send.
        fixture.clock.advance(by: 5)
        let idle = try await manager.deliverDue()
        #expect(idle.due == 0 && idle.sent == 0)
        #expect(fixture.sent.count == 2)
    }

    @Test("Timestamps never go backwards, and the minimum interval holds between sends")
    func interval() async throws {
        let fixture = try InProcess()
        let manager = manager(fixture) { $0.minimumInterval = .seconds(3) }
        let id = try await register(manager, "order-17")
        try await manager.request(update: id, contentState: Score(home: 1, away: 0))
        try await manager.deliverDue()
        try await manager.request(update: id, contentState: Score(home: 2, away: 0))
        fixture.clock.advance(by: 2.9)
        #expect(try await manager.deliverDue().sent == 0)
        #expect(try await manager.activity(id)?.delivery.dueAt == fixture.clock.now.addingTimeInterval(0.1))
        fixture.clock.advance(by: 0.1)
        #expect(try await manager.deliverDue().sent == 1)
        let timestamps = try fixture.sent.map { try #require(try aps($0)["timestamp"] as? Int) }
        #expect(timestamps.count == 2 && timestamps[1] - timestamps[0] == 3)
    }

    @Test("An end replaces a waiting update, refuses later updates, and is never dropped: tried until APNs takes it")
    func endNeverDropped() async throws {
        let failures = LockedBox(4)
        let fixture = try InProcess { request in
            let body = String(decoding: request.body, as: UTF8.self)
            let fail = body.contains(#""event":"end""#) && failures.withLock { count in
                defer { count -= 1 }
                return count > 0
            }
            return fail
                ? APNSTransportResponse(status: 500, body: Array(#"{"reason":"InternalServerError"}"#.utf8))
                : APNSTransportResponse(status: 200)
        }
        let manager = manager(fixture)
        let id = try await register(manager, "order-17")
        try await manager.request(update: id, contentState: Score(home: 1, away: 0))
        try await manager.deliverDue()
        try await manager.request(update: id, contentState: Score(home: 2, away: 0))
        let ending = try await manager.request(end: id, contentState: Score?.none, dismissalDate: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(ending.state == .ending && ending.superseded)
        await #expect {
            try await manager.request(update: id, contentState: Score(home: 3, away: 0))
        } throws: { error in
            (error as? LiveActivityError)?.code == .notLive && (error as? LiveActivityError)?.rule.contains("ending") == true
        }
        var rounds = 0
        while try await manager.activity(id)?.state != .ended {
            fixture.clock.advance(by: 1)
            try await manager.deliverDue()
            rounds += 1
            try #require(rounds < 20)
        }
        let ends = fixture.sent.filter { String(decoding: $0.body, as: UTF8.self).contains(#""event":"end""#) }
        #expect(ends.count == 5)
        // The end carries the latest state asked for (the waiting update's), and its dismissal date.
        #expect(try ends.allSatisfy { try score($0) == Score(home: 2, away: 0) && aps($0)["dismissal-date"] as? Int == 1_800_000_000 })
        let delivery = try #require(try await manager.activity(id)).delivery
        #expect(delivery.sent == 2 && delivery.failed == 1 && delivery.waiting == nil && delivery.dueAt == nil)
    }

    @Test("Alerting updates go at priority 10 while the budget allows, then at 5, counted; the window frees them again")
    func alertingBudget() async throws {
        let fixture = try InProcess()
        let manager = manager(fixture) { $0.alertingBudget = UpdateBudget(count: 2, window: .seconds(600)) }
        let id = try await register(manager, "match-42")
        var downgraded = 0
        for goal in 1...4 {
            try await manager.request(
                update: id, contentState: Score(home: goal, away: 0), alert: APNSLiveActivityAlert(title: "Goal", body: .localized(key: "GOAL", arguments: ["\(goal)"])),
                relevanceScore: 0.5, importance: .alerting
            )
            downgraded += try await manager.deliverDue().downgraded
            fixture.clock.advance(by: 60)
        }
        #expect(fixture.sent.map { header($0, "apns-priority") } == ["10", "10", "5", "5"])
        let counted = try await manager.activity(id)?.delivery.downgraded
        #expect(downgraded == 2 && counted == 2)
        // The alert and the relevance score as given.
        let alert = try #require(try aps(fixture.sent[0])["alert"] as? [String: Any])
        #expect(alert["title"] as? String == "Goal" && (alert["body"] as? [String: Any])?["loc-key"] as? String == "GOAL")
        #expect(try aps(fixture.sent[0])["relevance-score"] as? Double == 0.5)
        fixture.clock.advance(by: 600)
        try await manager.request(update: id, contentState: Score(home: 5, away: 0), importance: .alerting)
        try await manager.deliverDue()
        #expect(fixture.sent.last.map { header($0, "apns-priority") } == "10")
        // An app with frequent updates has the larger budget.
        let frequent = LiveActivityManager(client: fixture.client, store: InMemoryLiveActivityStore(), clock: fixture.clock, configuration: {
            var configuration = LiveActivityManager.Configuration()
            configuration.alertingBudget = UpdateBudget(count: 1, window: .seconds(600))
            configuration.frequentAlertingBudget = UpdateBudget(count: 3, window: .seconds(600))
            configuration.frequentUpdatesBundleIDs = [bundleID]
            return configuration
        }())
        let other = try await register(frequent, "match-43", token: 2)
        let before = fixture.sent.count
        for goal in 1...4 {
            try await frequent.request(update: other, contentState: Score(home: goal, away: 1), importance: .alerting)
            try await frequent.deliverDue()
            fixture.clock.advance(by: 2)
        }
        #expect(fixture.sent.dropFirst(before).map { header($0, "apns-priority") } == ["10", "10", "10", "5"])
    }

    @Test("A dead token's verdict kills the activity and drops what waits; an unknown or ended activity is refused, nothing sent")
    func refusals() async throws {
        let fixture = try InProcess { _ in APNSTransportResponse(status: 410, body: Array(#"{"reason":"Unregistered"}"#.utf8)) }
        let manager = manager(fixture)
        let id = try await register(manager, "order-17")
        try await manager.request(update: id, contentState: Score(home: 1, away: 0))
        #expect(try await manager.deliverDue().failed == 1)
        let dead = try #require(try await manager.activity(id))
        #expect(dead.state == .dead(reason: "Unregistered") && dead.delivery.dueAt == nil && dead.delivery.failed == 1)
        for request in [
            { () async throws -> Void in _ = try await manager.request(update: id, contentState: Score(home: 2, away: 0)) },
            { () async throws -> Void in _ = try await manager.request(update: try LiveActivityID("nobody"), contentState: Score(home: 2, away: 0)) },
            { () async throws -> Void in _ = try await manager.request(update: id, contentState: Score(home: 2, away: 0), relevanceScore: .nan) },
        ] {
            await #expect(throws: LiveActivityError.self) { try await request() }
        }
        #expect(fixture.sent.count == 1)
    }

    @Test("An update requested before the update token arrives waits, and goes (the latest state) once it does")
    func beforeToken() async throws {
        let fixture = try InProcess()
        let manager = manager(fixture)
        let id = try await register(manager, "order-17")
        // An activity started by the backend has no update token until the app reports it.
        let waitingID = try LiveActivityID("order-18")
        var starting = ManagedActivity(id: waitingID, bundleID: bundleID, attributesType: "ScoreAttributes", installation: installation, state: .starting, startedAt: fixture.clock.now)
        starting.lastContentState = Array(#"{"home":0,"away":0}"#.utf8)
        #expect(try await fixture.store.save(starting, replacing: nil))
        try await manager.request(update: waitingID, contentState: Score(home: 1, away: 0))
        try await manager.request(update: waitingID, contentState: Score(home: 2, away: 0))
        fixture.clock.advance(by: 5)
        #expect(try await manager.deliverDue().sent == 0 && fixture.sent.isEmpty)
        try await manager.report(.updateToken(waitingID, token: try DeviceToken(String(repeating: "cd", count: 32)), sequence: 1, registration: nil))
        #expect(try await manager.deliverDue().sent == 1)
        #expect(try fixture.sent.map(score) == [Score(home: 2, away: 0)] && fixture.sent.first?.path.hasSuffix(String(repeating: "cd", count: 32)) == true)
        _ = id
    }

    @Test("Two managers on one store deliver each requested push once, whichever gets to it", arguments: StoreKind.allCases)
    func twoManagers(kind: StoreKind) async throws {
        let fixture = try InProcess()
        try await kind.withStores(count: 2) { stores in
            let managers = [
                manager(fixture, store: stores[0]) { $0.instanceName = "a" },
                manager(fixture, store: stores[1]) { $0.instanceName = "b" },
            ]
            var ids: [LiveActivityID] = []
            for index in 0..<40 { ids.append(try await register(managers[index % 2], "match-\(index)", token: index + 1)) }
            for (index, id) in ids.enumerated() {
                try await managers[(index + 1) % 2].request(update: id, contentState: Score(home: index, away: 0))
            }
            async let first = managers[0].deliverDue()
            async let second = managers[1].deliverDue()
            let (a, b) = try await (first, second)
            #expect(a.sent + b.sent == 40 && a.mayHaveBeenDeliveredTwice.isEmpty && b.mayHaveBeenDeliveredTwice.isEmpty)
            let tokens = fixture.sent.map(\.path)
            #expect(tokens.count == 40 && Set(tokens).count == 40)
            // An update requested on one while the other's lease holds the activity waits for it, then goes once.
            try await managers[0].request(update: ids[0], contentState: Score(home: 100, away: 0))
            fixture.clock.advance(by: 1)
            async let again = managers[0].deliverDue()
            async let racing = managers[1].deliverDue()
            let (c, d) = try await (again, racing)
            #expect(c.sent + d.sent == 1 && fixture.sent.count == 41)
        }
    }

    @Test("A manager killed after taking a push: another takes it over once the lease ends, and says it may have been delivered twice", arguments: StoreKind.allCases)
    func takeover(kind: StoreKind) async throws {
        let fixture = try InProcess()
        try await kind.withStores { stores in
            let survivor = manager(fixture, store: stores[0]) { $0.instanceName = "survivor" }
            let id = try await register(survivor, "match-42")
            // What a killed manager leaves: the push taken, its lease running, no verdict.
            var record = try #require(try await stores[0].activity(id))
            let taken = PendingPush(kind: .update, contentState: Array(#"{"home":3,"away":1}"#.utf8), requestedAt: fixture.clock.now)
            record.delivery.requested = 1
            record.delivery.inFlight = InFlightPush(
                push: taken, owner: "killed", leaseUntil: fixture.clock.now.addingTimeInterval(30), priority: 5, timestamp: fixture.clock.now
            )
            record.delivery.dueAt = record.delivery.inFlight?.leaseUntil
            #expect(try await stores[0].save(record, replacing: record.version))
            fixture.clock.advance(by: 29)
            #expect(try await survivor.deliverDue().sent == 0 && fixture.sent.isEmpty)
            fixture.clock.advance(by: 1)
            let summary = try await survivor.deliverDue()
            #expect(summary.sent == 1 && summary.mayHaveBeenDeliveredTwice == [id])
            #expect(try fixture.sent.map(score) == [Score(home: 3, away: 1)])
            let after = try #require(try await survivor.activity(id))
            #expect(after.delivery.mayHaveBeenDeliveredTwice == 1 && after.delivery.inFlight == nil)
            #expect(after.history.contains { $0.event == "taken_over" && $0.detail.contains("killed") })
        }
    }

    @Test("More due pushes than the window (deliveryConcurrency 3): every one is sent once, and each activity counts it")
    func window() async throws {
        let fixture = try InProcess()
        let manager = manager(fixture) { $0.deliveryConcurrency = 3 }
        var ids: [LiveActivityID] = []
        for index in 0..<10 { ids.append(try await register(manager, "match-\(index)", token: index + 1)) }
        for (index, id) in ids.enumerated() { try await manager.request(update: id, contentState: Score(home: index, away: 0)) }
        let summary = try await manager.deliverDue()
        #expect(summary.due == 10 && summary.sent == 10 && summary.skipped == 0 && summary.failed == 0)
        #expect(fixture.sent.count == 10 && Set(fixture.sent.map(\.path)).count == 10)
        for (index, id) in ids.enumerated() {
            let activity = try #require(try await manager.activity(id))
            #expect(activity.delivery.sent == 1 && activity.delivery.inFlight == nil && activity.delivery.dueAt == nil)
            #expect(try JSONDecoder().decode(Score.self, from: Data(activity.lastContentState ?? [])) == Score(home: index, away: 0))
        }
    }

    /// On the system clock, whose dates have more than the millisecond a durable store keeps.
    @Test("run() sends a request as it arrives, and a paced one when it comes due, until cancelled", arguments: [StoreKind.memory, .sqlite])
    func running(kind: StoreKind) async throws {
        try await kind.withStores { stores in try await self.running(store: stores[0]) }
    }

    private func running(store: any LiveActivityStore) async throws {
        let fixture = try InProcess()
        let clock = APNSSystemWallClock()
        let manager = LiveActivityManager(client: fixture.client, store: store, clock: clock, configuration: {
            var configuration = LiveActivityManager.Configuration()
            configuration.minimumInterval = .milliseconds(50)
            return configuration
        }())
        let id = try await register(manager, "match-42")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await manager.run(poll: .seconds(5)) }
            try await manager.request(update: id, contentState: Score(home: 1, away: 0))
            try await manager.request(update: id, contentState: Score(home: 2, away: 0))
            try await manager.request(update: id, contentState: Score(home: 3, away: 0))
            // Waits on the outcome, not on time: the last state arrives, and nothing after it.
            let settled = await withTimeout(.seconds(30)) { () async -> Bool? in
                while !Task.isCancelled {
                    if (try? await manager.activity(id))??.delivery.dueAt == nil, !fixture.sent.isEmpty { return true }
                    await Task.yield()
                }
                return nil
            }
            let delivery = try await manager.activity(id)?.delivery
            #expect(settled == true, "every request settled: \(String(describing: delivery))")
            group.cancelAll()
        }
        let sent = try fixture.sent.map(score)
        #expect(sent.last == Score(home: 3, away: 0) && sent.count <= 3)
        let counted = try await manager.activity(id)?.delivery.sent
        #expect(counted == sent.count)
    }
}

private struct MatchAttributes: Codable, Sendable { var match: String }

@Suite("The start budget: starts beyond it wait for the window, or fail, never sent to be dropped", .timeLimit(.minutes(1)))
struct StartBudgetTests {
    static let key = PushToStartKey(installation: installation, bundleID: bundleID, attributesType: "MatchAttributes")

    private func reportToken(_ manager: LiveActivityManager) async throws {
        try await manager.report(.pushToStartToken(Self.key, token: try DeviceToken(String(repeating: "5a", count: 32)), sequence: nil, environment: .sandbox))
    }

    @discardableResult
    private func start(_ manager: LiveActivityManager, _ id: String, home: Int = 0) async throws -> LiveActivityManager.StartOutcome {
        try await manager.start(
            activity: try LiveActivityID(id), installation: installation, bundleID: bundleID, attributesType: "MatchAttributes",
            attributes: MatchAttributes(match: id), contentState: Score(home: home, away: 0), alert: APNSLiveActivityAlert(title: "Kick-off", body: .plain(id))
        )
    }

    @Test("A start beyond the budget is deferred to when the window frees one, carries the latest state asked for, then goes once")
    func deferred() async throws {
        let fixture = try InProcess()
        let manager = manager(fixture) { $0.startBudget = UpdateBudget(count: 2, window: .seconds(600)) }
        try await reportToken(manager)
        let first = fixture.clock.now
        #expect(try await start(manager, "match-1").sent != nil)
        fixture.clock.advance(by: 100)
        #expect(try await start(manager, "match-2").sent != nil)
        fixture.clock.advance(by: 100)
        let third = try await start(manager, "match-3")
        #expect(third.sent == nil && third.deferredUntil == first.addingTimeInterval(600) && third.activity.state == .starting)
        #expect(fixture.sent.count == 2)
        // An update asked for meanwhile rides on the start.
        let merged = try await manager.request(update: try LiveActivityID("match-3"), contentState: Score(home: 4, away: 0))
        #expect(merged.superseded && merged.state == .starting)
        fixture.clock.advance(by: 399)
        #expect(try await manager.deliverDue().sent == 0 && fixture.sent.count == 2)
        fixture.clock.advance(by: 1)
        #expect(try await manager.deliverDue().sent == 1)
        let deferredStart = try #require(fixture.sent.last)
        #expect(header(deferredStart, "apns-collapse-id") == "match-3" && (header(deferredStart, "apns-priority") ?? "10") == "10")
        #expect(try aps(deferredStart)["event"] as? String == "start" && score(deferredStart) == Score(home: 4, away: 0))
        #expect(try (aps(deferredStart)["alert"] as? [String: Any])?["title"] as? String == "Kick-off")
        let activity = try #require(try await manager.activity(try LiveActivityID("match-3")))
        #expect(activity.state == .starting && activity.delivery.sent == 1 && activity.delivery.dueAt == nil)
        #expect(activity.history.map(\.event).suffix(2) == ["start_deferred", "start_sent"])
        // The ledger holds: another start now waits again.
        #expect(try await start(manager, "match-4").deferredUntil == first.addingTimeInterval(700))
        fixture.clock.advance(by: 3600)
        #expect(try await manager.deliverDue().sent == 1 && fixture.sent.count == 4)
    }

    @Test("With startsBeyondBudget .fail, the start fails naming the install and when the next is free; nothing is recorded or sent")
    func failing() async throws {
        let fixture = try InProcess()
        let manager = manager(fixture) {
            $0.startBudget = UpdateBudget(count: 1, window: .seconds(3600))
            $0.startsBeyondBudget = .fail
        }
        try await reportToken(manager)
        try await start(manager, "match-1")
        await #expect {
            try await start(manager, "match-2")
        } throws: { error in
            let error = error as? LiveActivityError
            return error?.code == .startBudgetSpent && error?.field == "installation" && error?.rule.contains("1 h") == true
        }
        #expect(try await manager.activity(try LiveActivityID("match-2")) == nil && fixture.sent.count == 1)
        // A renewal beyond the budget fails too, and the old activity goes on.
        let id = try LiveActivityID("match-1")
        try await manager.report(.updateToken(id, token: try DeviceToken(String(repeating: "ab", count: 32)), sequence: 1, registration: nil))
        await #expect(throws: LiveActivityError.self) { try await manager.renew(activity: id, alert: APNSLiveActivityAlert(title: "Renewed", body: "1")) }
        #expect(try await manager.activity(id)?.renewal == nil && fixture.sent.count == 1)
    }

    @Test("An end asked for before a deferred start went: the activity ends and nothing is sent")
    func endedBeforeStart() async throws {
        let fixture = try InProcess()
        let manager = manager(fixture) { $0.startBudget = UpdateBudget(count: 1, window: .seconds(600)) }
        try await reportToken(manager)
        try await start(manager, "match-1")
        #expect(try await start(manager, "match-2").deferredUntil != nil)
        let ended = try await manager.request(end: try LiveActivityID("match-2"), contentState: Score?.none)
        #expect(ended.state == .ended)
        fixture.clock.advance(by: 3600)
        #expect(try await manager.deliverDue().sent == 0 && fixture.sent.count == 1)
    }
}

@Suite("The manager's metrics: requests, sends, superseded, throttles avoided, the lag from request to verdict")
struct DeliveryMetricsTests {
    @Test("Counted as they happen, in the configured factory; the lag is the manager's clock from request to verdict")
    func counted() async throws {
        let fixture = try InProcess()
        let metrics = TestMetrics()
        let manager = manager(fixture) {
            $0.metrics = metrics
            $0.alertingBudget = UpdateBudget(count: 1, window: .seconds(3600))
        }
        let id = try await register(manager, "match-42")
        try await manager.request(update: id, contentState: Score(home: 1, away: 0), importance: .alerting)
        fixture.clock.advance(by: 0.25)
        try await manager.deliverDue()
        try await manager.request(update: id, contentState: Score(home: 2, away: 0), importance: .alerting)
        try await manager.request(update: id, contentState: Score(home: 3, away: 0), importance: .alerting)
        fixture.clock.advance(by: 2)
        try await manager.deliverDue()
        #expect(try metrics.expectCounter("forge_live_activity_requests_total", [("kind", "update")]).totalValue == 3)
        #expect(try metrics.expectCounter("forge_live_activity_superseded_total").totalValue == 1)
        #expect(try metrics.expectCounter("forge_live_activity_sent_total", [("kind", "update")]).totalValue == 2)
        #expect(try metrics.expectCounter("forge_live_activity_throttles_avoided_total", [("how", "downgraded")]).totalValue == 1)
        let lag = try metrics.expectTimer("forge_live_activity_update_lag_seconds", [("kind", "update")])
        // The first waited 0.25 s; the third was asked for 2 s before it went.
        #expect(lag.values == [250_000_000, 2_000_000_000], "\(lag.values)")
    }
}
