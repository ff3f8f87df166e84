import ForgeAPNs
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
import Testing

private let shop = "com.example.shop"
private let phoneToken = String(repeating: "cd", count: 32)
private let phonePushToStart = String(repeating: "6b", count: 32)

private struct Order: Codable, Sendable {
    var activity_id: String
}

private struct Progress: Codable, Sendable, Equatable {
    var status: String
}

/// One clock for the manager and the phone.
private final class AskingClock: APNSWallClock, DeviceClock {
    private let date = LockedBox(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { self.date.withLock { $0 } }
    func advance(by seconds: TimeInterval) { self.date.withLock { $0 += seconds } }
}

/// A phone that asks before Live Activities, with the shop app installed and its reports collected.
private func askingPhone(clock: AskingClock) -> (SimulatedDevice, LockedBox<[ActivityTokenReport]>) {
    let device = SimulatedDevice(clock: clock, backgroundBudget: nil, activityTokenSeed: 11)
    device.asksBeforeActivities = true
    let app = SimulatedApp(
        bundleID: shop, deviceTokens: [.sandbox: phoneToken], pushToStartToken: phonePushToStart,
        activityTypes: [LiveActivityType(attributesType: "OrderAttributes", attributes: Order.self, contentState: Progress.self)]
    )
    let posted = LockedBox<[ActivityTokenReport]>([])
    app.activityReporting = ActivityReporting(installation: "phone-1", post: { report in posted.withLock { $0.append(report) } })
    device.install(app)
    return (device, posted)
}

private func start(_ order: String, clock: AskingClock) throws -> APNSLiveActivityStartNotification<Order, Progress> {
    APNSLiveActivityStartNotification(
        attributesType: "OrderAttributes", attributes: Order(activity_id: order), contentState: Progress(status: "packing"),
        alert: APNSLiveActivityAlert(title: .plain("Order \(order)"), body: "Packing"), timestamp: clock.now, topic: try APNSBundleID(shop)
    )
}

private func isAwaiting(_ event: DeviceEvent) -> Bool {
    if case .liveActivityAwaitingPermission = event { true } else { false }
}

@Suite("A phone that asks before Live Activities (iOS 17.2+): no update token until the person taps Allow", .timeLimit(.minutes(1)))
struct AskingPhoneTests {
    @Test("A push-to-start start awaits permission with no token and no report; Allow issues and reports it; later starts get theirs at once")
    func allow() async throws {
        let clock = AskingClock()
        let (device, posted) = askingPhone(clock: clock)
        try await withLoopbackMode(devices: [device]) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(try start("o-1", clock: clock), to: try DeviceToken(phonePushToStart))
                let awaiting = try await device.awaitEvent(where: isAwaiting)
                guard case .liveActivityAwaitingPermission(let activityID, let bundleID, _) = awaiting.event else { return }
                #expect(bundleID == shop)
                let pending = try #require(device.liveActivity(activityID))
                #expect(pending.isAwaitingPermission && pending.updateToken.isEmpty && pending.phase == .active)
                #expect(device.view(token: phoneToken).liveActivities.first?.state == "awaiting_permission")
                #expect(posted.withLock { $0.map(\.kind) } == ["push_to_start_token"], "no update-token report before Allow")

                let issued = try device.allowActivities(of: shop)
                #expect(issued.map(\.id) == [activityID])
                let token = try #require(issued.first?.updateToken)
                #expect(!token.isEmpty && device.liveActivity(activityID)?.isAwaitingPermission == false)
                let reports = posted.withLock { $0 }
                #expect(reports.map(\.kind) == ["push_to_start_token", "update_token"])
                #expect(reports.last?.token == token && reports.last?.activity == "o-1")
                #expect(device.timeline.contains { $0.event == .liveActivitiesAllowed(bundleID: shop) })
                #expect(device.timeline.contains { $0.event == .liveActivityTokenIssued(activityID: activityID, updateToken: token) })

                // The issued token now reaches the activity.
                clock.advance(by: 1)
                let update = APNSLiveActivityNotification(
                    event: .update, contentState: Progress(status: "shipped"), timestamp: clock.now, topic: try APNSBundleID(shop)
                )
                _ = try await client.send(update, to: try DeviceToken(token))
                _ = try await device.awaitEvent { if case .liveActivityUpdated(activityID, _) = $0 { true } else { false } }

                // The person allowed the app: a later start gets its token at once.
                let position = device.timeline.count
                _ = try await client.send(try start("o-2", clock: clock), to: try DeviceToken(phonePushToStart))
                _ = try await device.awaitEvent(from: position) { if case .liveActivityStarted = $0 { true } else { false } }
                #expect(!device.timeline.dropFirst(position).contains { isAwaiting($0.event) })
                #expect(posted.withLock { $0.map(\.kind) } == ["push_to_start_token", "update_token", "update_token"])
            }
        }
    }

    @Test("Don't Allow ends the waiting activity (reported ended) and discards later starts with a reason that says so")
    func deny() async throws {
        let clock = AskingClock()
        let (device, posted) = askingPhone(clock: clock)
        try await withLoopbackMode(devices: [device]) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(try start("o-1", clock: clock), to: try DeviceToken(phonePushToStart))
                let awaiting = try await device.awaitEvent(where: isAwaiting)
                guard case .liveActivityAwaitingPermission(let activityID, _, _) = awaiting.event else { return }

                let ended = try device.denyActivities(of: shop)
                #expect(ended.map(\.id) == [activityID])
                #expect(device.liveActivity(activityID)?.phase == .dismissed)
                let reports = posted.withLock { $0 }
                #expect(reports.map(\.kind) == ["push_to_start_token", "ended"])
                #expect(reports.last?.activity == "o-1" && reports.last?.token == nil, "it never had an update token")
                #expect(device.timeline.contains { $0.event == .liveActivitiesDenied(bundleID: shop) })

                let position = device.timeline.count
                let sent = try await client.send(try start("o-2", clock: clock), to: try DeviceToken(phonePushToStart))
                let discarded = try await device.awaitEvent(from: position) {
                    if case .delivery(_, .discarded(.disabled), _) = $0 { true } else { false }
                }
                guard case .delivery(let apnsID, _, let reason) = discarded.event else { return }
                #expect(apnsID == sent.apnsID)
                #expect(reason?.contains("Don't Allow") == true, "\(reason ?? "no reason")")
                #expect(device.delivery(apnsID: sent.apnsID)?.state == .discarded(.disabled))
                #expect(device.liveActivities.count == 1, "the discarded start made no activity")
                #expect(posted.withLock { $0.count } == 2)
            }
        }
    }

    @Test("The manager's updates before Allow are held; after Allow only the latest is sent, and the phone never sees the first")
    func managerHoldsUntilAllow() async throws {
        let clock = AskingClock()
        let device = SimulatedDevice(clock: clock, backgroundBudget: nil, activityTokenSeed: 12)
        device.asksBeforeActivities = true
        let app = SimulatedApp(
            bundleID: shop, deviceTokens: [.sandbox: phoneToken], pushToStartToken: phonePushToStart,
            activityTypes: [LiveActivityType(attributesType: "OrderAttributes", attributes: Order.self, contentState: Progress.self)]
        )
        let (reporting, reports) = ActivityReporting.make(installation: "phone-1")
        app.activityReporting = reporting
        device.install(app)
        let id = try LiveActivityID("order-17")
        try await withLoopbackMode(devices: [device]) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                let manager = LiveActivityManager(client: client, store: InMemoryLiveActivityStore(), clock: clock)
                // Each applied report rings; a wait reads the count after each ring.
                let applied = LockedBox<[Int]>([])
                let rings = Fanout<Void>()
                let bell = rings.subscribeNewest()
                try await withThrowingDiscardingTaskGroup { group in
                    // The reports end on every path, so the reading task below ends too.
                    defer { reporting.finish() }
                    group.addTask {
                        for await report in reports {
                            let answer = await manager.handleReport(body: report.json)
                            applied.withLock { $0.append(answer.status) }
                            rings.yield(())
                        }
                    }
                    var ringing = bell.makeAsyncIterator()
                    func settle(_ count: Int) async {
                        while applied.withLock({ $0.count }) < count { _ = await ringing.next() }
                    }
                    await settle(1)  // the push-to-start token
                    try await manager.start(
                        activity: id, installation: try InstallationID("phone-1"), bundleID: try APNSBundleID(shop),
                        attributesType: "OrderAttributes", attributes: Order(activity_id: id.rawValue), contentState: Progress(status: "packing"),
                        alert: APNSLiveActivityAlert(title: "Order 17", body: "Packing")
                    )
                    let awaiting = try await device.awaitEvent(where: isAwaiting)
                    guard case .liveActivityAwaitingPermission(let activityID, _, _) = awaiting.event else { return }
                    clock.advance(by: 1)
                    #expect(try await manager.update(activity: id, contentState: Progress(status: "packed")) == .held)
                    clock.advance(by: 1)
                    #expect(try await manager.update(activity: id, contentState: Progress(status: "shipped")) == .held)

                    // The person taps Allow: the app reports the token, the manager sends the held update.
                    let position = device.timeline.count
                    try device.allowActivities(of: shop)
                    await settle(2)
                    _ = try await device.awaitEvent(from: position) { if case .liveActivityUpdated(activityID, _) = $0 { true } else { false } }
                    let shown = try #require(device.liveActivity(activityID))
                    #expect(shown.current?.contentState == .object(["status": .string("shipped")]))
                    #expect(shown.history.map(\.event) == ["start", "update"])
                    #expect(!shown.history.contains { $0.contentState == .object(["status": .string("packed")]) }, "the first held update never reached the phone")
                    #expect(applied.withLock { $0 } == [200, 200])
                    #expect(loopback.server.acceptedCount == 2, "the start and the latest held update only")
                    #expect(try await manager.activity(id)?.state == .active)
                }
            }
        }
    }
}
