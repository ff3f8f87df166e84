import ForgeNotificationTypes
import ForgeSilentPush
import ForgeSimulatedDevice
import Foundation
import Testing

@Suite("Background pushes")
struct BackgroundDeliveryTests {
    let sync = #"{"aps":{"content-available":1},"type":"task_sync","list":"inbox"}"#

    @Test("a background push runs every matching silent handler and records the aggregated result")
    func silentHandlersAggregate() async throws {
        let device = Fixture.device()
        let app = Fixture.app(state: .notRunning)
        let fetcher = SilentRecorder(id: "fetcher", result: .newData)
        let idle = SilentRecorder(id: "idle", result: .noData)
        app.silentRouter.addHandler(fetcher)
        app.silentRouter.addHandler(idle)
        device.install(app)

        await device.deliver(Fixture.push(self.sync, pushType: "background", apnsID: "B-1"))

        let payload = try JSONValue(parsing: Array(self.sync.utf8))
        #expect(fetcher.payloads.current == [payload])
        #expect(idle.payloads.current == [payload])
        #expect(app.state == .background)
        #expect(device.events.suffix(3) == [
            .appLaunched(bundleID: Fixture.bundleID, reason: .backgroundPush),
            .backgroundDeliveryStarted(bundleID: Fixture.bundleID, apnsID: "B-1", payload: payload),
            .backgroundCompleted(bundleID: Fixture.bundleID, apnsID: "B-1", result: .newData),
        ])
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
    }

    @Test("a failing handler with no new data anywhere aggregates to failed")
    func failedAggregate() async {
        let device = Fixture.device()
        let app = Fixture.app()
        app.silentRouter.addHandler(SilentRecorder(id: "broken", result: .failed))
        app.silentRouter.addHandler(SilentRecorder(id: "idle", result: .noData))
        device.install(app)

        await device.deliver(Fixture.push(self.sync, apnsID: "B-2"))

        #expect(device.events.last == .backgroundCompleted(bundleID: Fixture.bundleID, apnsID: "B-2", result: .failed))
    }

    @Test("a force-quit app gets no background push")
    func forceQuitNotDelivered() async {
        let device = Fixture.device()
        let app = Fixture.app(state: .foreground)
        let handler = SilentRecorder(id: "fetcher", result: .newData)
        app.silentRouter.addHandler(handler)
        device.install(app)
        app.forceQuit()

        await device.deliver(Fixture.push(self.sync, apnsID: "B-3"))

        #expect(handler.payloads.current.isEmpty)
        #expect(device.events.last == .backgroundNotDelivered(bundleID: Fixture.bundleID, apnsID: "B-3", reason: "the user force-quit the app"))

        app.launch()
        await device.deliver(Fixture.push(self.sync, apnsID: "B-4"))
        #expect(handler.payloads.current.count == 1, "after the user opens the app again, pushes arrive")
    }

    @Test("a real-time budget also ends a handler that never completes")
    func timedBudget() async {
        let device = SimulatedDevice(clock: ManualDeviceClock(now: Fixture.start), backgroundBudget: .milliseconds(20))
        let app = Fixture.app()
        let gate = Gate()
        app.silentRouter.addHandler(HangingSilentHandler(gate: gate))
        device.install(app)

        // The handler waits at the gate until after delivery returned, so only the timer can end it.
        await device.deliver(Fixture.push(self.sync, apnsID: "B-5"))
        gate.open()

        #expect(device.events.last == .backgroundBudgetExceeded(bundleID: Fixture.bundleID, apnsID: "B-5"))
        #expect(device.pendingBackgroundPushes == 0)
    }
}
