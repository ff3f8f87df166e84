import ForgeNotificationService
import ForgeNotificationTypes
import ForgeSilentPush
import ForgeSimulatedDevice
import ForgeSupport
import Foundation
import Testing

/// A stream of pushes for `SimulatedDevice.deliver(_:)`, fed by the test.
private func pushStream() -> (AsyncStream<DevicePush>, AsyncStream<DevicePush>.Continuation) {
    AsyncStream.makeStream(of: DevicePush.self)
}

private let chatBundle = "com.example.chat"
private let chatToken = String(repeating: "ef", count: 32)

@Suite("Concurrent delivery: no head-of-line blocking, iOS's order where iOS has one", .timeLimit(.minutes(1)))
struct ConcurrentDeliveryTests {
    let sync = #"{"aps":{"content-available":1},"type":"task_sync"}"#
    let stuck = #"{"aps":{"content-available":1},"type":"stuck"}"#

    @Test("a background handler that never completes holds only its own push; the budget ends it and cancels it")
    func stuckBackgroundHandler() async throws {
        let device = Fixture.device()
        let app = Fixture.app()
        let hanging = HangingSilentHandler(gate: Gate(), type: "stuck")  // the gate never opens
        let quick = SilentRecorder(id: "quick", result: .newData)
        app.silentRouter.addHandler(hanging)
        app.silentRouter.addHandler(quick)
        device.install(app)
        let other = SimulatedApp(bundleID: chatBundle, deviceTokens: [.sandbox: chatToken], state: .background)
        device.install(other)
        let (pushes, feed) = pushStream()
        async let delivered: Void = device.deliver(pushes)

        feed.yield(Fixture.push(self.stuck, apnsID: "S-1"))
        feed.yield(Fixture.push(#"{"aps":{"alert":"after the stuck one"}}"#, apnsID: "A-1"))
        feed.yield(Fixture.push(self.sync, apnsID: "S-2"))
        feed.yield(Fixture.push(#"{"aps":{"alert":"other app"}}"#, token: chatToken, apnsID: "C-1"))
        feed.finish()

        try await device.awaitEvent { $0 == .backgroundCompleted(bundleID: Fixture.bundleID, apnsID: "S-2", result: .newData) }
        try await device.awaitEvent { if case .addedToNotificationList(_, "A-1", _) = $0 { true } else { false } }
        try await device.awaitEvent { if case .addedToNotificationList(chatBundle, "C-1", _) = $0 { true } else { false } }
        #expect(hanging.started.current)
        #expect(device.pendingBackgroundPushes == 1, "S-1 still waits for its completion handler")
        #expect(!device.events.contains { event in
            switch event {
            case .backgroundCompleted(_, "S-1", _), .backgroundBudgetExceeded(_, "S-1"): return true
            default: return false
            }
        })

        #expect(device.expireBackgroundBudgets() == 1)
        await delivered

        #expect(device.events.last == .backgroundBudgetExceeded(bundleID: Fixture.bundleID, apnsID: "S-1"))
        #expect(hanging.cancelled.current, "when the budget runs out the handler's task is cancelled")
        let started = device.events.compactMap { event -> String? in
            if case .backgroundDeliveryStarted(_, let apnsID, _) = event { return apnsID }
            return nil
        }
        #expect(started == ["S-1", "S-2"], "the delegate sees background pushes in arrival order")
    }

    @Test("an app's alerts are shown in arrival order behind a slow service extension; another app's are not held")
    func alertsInArrivalOrder() async throws {
        let device = Fixture.device()
        // Completes at once, except for the first alert: that one waits for the time-will-expire path.
        let slowFirst = ServiceExtension(timeLimit: nil) { request, manager in
            manager.mutableContent.update { $0.title = "[extension] " + $0.title }
            if request.identifier != "A-1" { manager.complete(forces: false) }
        }
        device.install(Fixture.app(serviceExtension: slowFirst))
        device.install(SimulatedApp(bundleID: chatBundle, deviceTokens: [.sandbox: chatToken], state: .background))
        let (pushes, feed) = pushStream()
        async let delivered: Void = device.deliver(pushes)

        feed.yield(Fixture.push(#"{"aps":{"alert":{"title":"first"},"mutable-content":1}}"#, apnsID: "A-1"))
        feed.yield(Fixture.push(#"{"aps":{"alert":{"title":"second"},"mutable-content":1}}"#, apnsID: "A-2"))
        feed.yield(Fixture.push(#"{"aps":{"alert":{"title":"third"}}}"#, apnsID: "A-3"))
        feed.yield(Fixture.push(#"{"aps":{"alert":"other app"}}"#, token: chatToken, apnsID: "C-1"))
        feed.finish()

        try await device.awaitEvent { $0 == .serviceExtensionStarted(bundleID: Fixture.bundleID, identifier: "A-1") }
        try await device.awaitEvent { if case .addedToNotificationList(chatBundle, "C-1", _) = $0 { true } else { false } }
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty, "A-2 and A-3 wait behind A-1")
        #expect(!device.events.contains(.serviceExtensionStarted(bundleID: Fixture.bundleID, identifier: "A-2")))

        #expect(device.expireServiceExtensions() == 1)
        await delivered

        let list = device.notificationList(for: Fixture.bundleID)
        #expect(list.map(\.request.identifier) == ["A-1", "A-2", "A-3"])
        #expect(list.map(\.request.content.title) == ["[extension] first", "[extension] second", "third"])
    }

    @Test("Live Activity updates delivered together apply in arrival order, and an older timestamp is ignored")
    func liveActivityOrder() async throws {
        let device = Fixture.device()
        device.install(Fixture.app())
        let now = Int(Fixture.start.timeIntervalSince1970)
        let start = #"{"aps":{"event":"start","timestamp":\#(now),"attributes-type":"PizzaDeliveryAttributes","attributes":{"pizzaName":"M"},"content-state":{"status":"baking","eta":20}}}"#
        await device.deliver(Fixture.push(start, token: Fixture.pushToStartToken, pushType: "liveactivity", apnsID: "L-0"))
        let activity = try #require(device.liveActivities.first)
        let (pushes, feed) = pushStream()
        async let delivered: Void = device.deliver(pushes)

        for (index, (offset, status)) in [(10, "on the way"), (5, "late news"), (20, "at the door"), (20, "delivered")].enumerated() {
            let json = #"{"aps":{"event":"update","timestamp":\#(now + offset),"content-state":{"status":"\#(status)","eta":1}}}"#
            feed.yield(Fixture.push(json, token: activity.updateToken, pushType: "liveactivity", apnsID: "L-\(index + 1)"))
        }
        feed.finish()
        await delivered

        let history = try #require(device.liveActivity(activity.id)).history
        #expect(history.map { $0.contentState["status"]?.stringValue } == ["baking", "on the way", "at the door", "delivered"])
        #expect(device.events.filter { if case .liveActivityPushIgnored = $0 { true } else { false } }.count == 1)
    }

    @Test("cancelling a delivery ends its pending service extension and background budget at once")
    func cancellationExpires() async throws {
        let device = Fixture.device()
        let never = ServiceExtension(timeLimit: nil) { _, manager in manager.mutableContent.update { $0.title = "best attempt" } }
        let app = Fixture.app(serviceExtension: never)
        app.silentRouter.addHandler(HangingSilentHandler(gate: Gate(), type: "stuck"))
        device.install(app)

        let delivery = Task {
            await device.deliver(Fixture.push(#"{"aps":{"alert":{"title":"x"},"mutable-content":1}}"#, apnsID: "X-1"))
            await device.deliver(Fixture.push(self.stuck, apnsID: "X-2"))
        }
        try await device.awaitEvent { $0 == .serviceExtensionStarted(bundleID: Fixture.bundleID, identifier: "X-1") }
        delivery.cancel()
        await delivery.value

        #expect(device.events.contains(.backgroundBudgetExceeded(bundleID: Fixture.bundleID, apnsID: "X-2")))
        #expect(device.notificationList(for: Fixture.bundleID).first?.request.content.title == "best attempt")
        #expect(device.runningServiceExtensions == 0 && device.pendingBackgroundPushes == 0)
    }
}
