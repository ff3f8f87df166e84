import ForgeNotificationTypes
import ForgeSilentPush
import ForgeSimulatedDevice
import ForgeSupport
import ForgeVisiblePush
import Foundation
import Testing

/// The steps an app saw, in order, each with the application state it saw then.
final class StepLog: Sendable {
    private let steps = LockedBox<[String]>([])
    func append(_ step: String) { self.steps.withLock { $0.append(step) } }
    var all: [String] { self.steps.withLock { $0 } }
}

/// Seed 004's scene delegate and notification-centre delegate, recording each call.
struct RecordingDelegate: SimulatedAppDelegate {
    let log: StepLog
    let options: PresentationOptions
    /// The app's state when a hook runs (the app holds the delegate, so the delegate reads it weakly).
    let state: @Sendable () -> ApplicationState?

    func sceneWillConnect(_ options: SceneConnectionOptions) async {
        let identifier = options.notificationResponse?.notification.request.identifier ?? "-"
        self.log.append("scene \(identifier) \(self.state().map { "\($0)" } ?? "?")")
    }

    func willPresent(_ notification: DeliveredNotification) async -> PresentationOptions {
        self.log.append("willPresent \(notification.request.identifier) \(self.state().map { "\($0)" } ?? "?")")
        return self.options
    }
}

/// The `didReceive` side: a visible handler that logs the response and the state in its context.
struct DidReceiveLogger: VisiblePushHandler {
    let id = "did-receive"
    let log: StepLog
    func matches(_ response: NotificationResponse) -> Bool { true }
    func handle(_ response: NotificationResponse, context: VisiblePushContext) async {
        self.log.append("didReceive \(response.notification.request.identifier) \(response.actionIdentifier) \(context.applicationState)")
    }
}

/// An app whose delegate and visible handler log to `log`.
func loggingApp(state: AppState, log: StepLog, options: PresentationOptions = [.banner, .list], categories: [NotificationCategory] = []) -> SimulatedApp {
    let app = Fixture.app(state: state, categories: categories)
    app.delegate = RecordingDelegate(log: log, options: options) { [weak app] in app?.applicationState }
    app.visibleRouter.addHandler(DidReceiveLogger(log: log))
    return app
}

@Suite("Seed 004: the routes for each app state, in order")
struct AppStateRoutesTests {
    let alert = #"{"aps":{"alert":{"title":"Task due","body":"Review the draft"},"category":"task"},"type":"task_reminder"}"#
    let tap = NotificationAction.default.identifier

    @Test("foreground: willPresent (active) decides the presentation, then a tap reaches didReceive (active)")
    func foregroundRoute() async throws {
        let log = StepLog()
        let device = Fixture.device()
        let app = loggingApp(state: .foreground, log: log, options: [.banner, .sound])
        device.install(app)

        await device.deliver(Fixture.push(self.alert, apnsID: "FG-1"))
        #expect(log.all == ["willPresent FG-1 active"])
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty, "a banner without .list stays out of the list")
        try await device.tap("FG-1", in: Fixture.bundleID)

        #expect(log.all == ["willPresent FG-1 active", "didReceive FG-1 \(self.tap) active"])
        #expect(app.applicationState == .active)
        #expect(device.events.filter(Self.isRouteStep) == [
            .willPresent(bundleID: Fixture.bundleID, identifier: "FG-1", options: [.banner, .sound]),
            .responseRouted(bundleID: Fixture.bundleID, identifier: "FG-1", action: self.tap, userText: nil),
            .responseHandled(bundleID: Fixture.bundleID, identifier: "FG-1", handlerIDs: ["did-receive"]),
        ])
    }

    @Test("foreground: the options decide; none shows nothing, list only is listed but has no banner to tap")
    func foregroundOptionsDecide() async throws {
        let log = StepLog()
        let device = Fixture.device()
        let app = loggingApp(state: .foreground, log: log, options: [])
        device.install(app)
        await device.deliver(Fixture.push(self.alert, apnsID: "FG-2"))
        #expect(device.events.last == .notShown(bundleID: Fixture.bundleID, identifier: "FG-2", reason: .suppressedInForeground))
        await #expect(throws: SimulatedDeviceError.notificationNotFound) { try await device.tap("FG-2", in: Fixture.bundleID) }

        app.delegate = RecordingDelegate(log: log, options: [.list, .badge]) { [weak app] in app?.applicationState }
        await device.deliver(Fixture.push(self.alert, apnsID: "FG-3"))
        #expect(device.notificationList(for: Fixture.bundleID).map(\.request.identifier) == ["FG-3"])
        #expect(log.all == ["willPresent FG-2 active", "willPresent FG-3 active"])
    }

    @Test("background: no willPresent; a tap brings the app up (inactive) into didReceive, then it is active")
    func backgroundRoute() async throws {
        let log = StepLog()
        let device = Fixture.device()
        let app = loggingApp(state: .background, log: log)
        device.install(app)

        await device.deliver(Fixture.push(self.alert, apnsID: "BG-1"))
        #expect(log.all.isEmpty, "willPresent is for the foreground only")
        #expect(device.notificationList(for: Fixture.bundleID).map(\.request.identifier) == ["BG-1"])
        try await device.tap("BG-1", in: Fixture.bundleID)

        #expect(log.all == ["didReceive BG-1 \(self.tap) inactive"])
        #expect(app.state == .foreground && app.applicationState == .active)
        #expect(device.events.filter(Self.isRouteStep) == [
            .addedToNotificationList(bundleID: Fixture.bundleID, identifier: "BG-1", content: try #require(self.content(device, "BG-1"))),
            .appForegrounded(bundleID: Fixture.bundleID),
            .responseRouted(bundleID: Fixture.bundleID, identifier: "BG-1", action: self.tap, userText: nil),
            .responseHandled(bundleID: Fixture.bundleID, identifier: "BG-1", handlerIDs: ["did-receive"]),
        ])
    }

    @Test("background: an action that does not open the app runs didReceive in the background")
    func backgroundAction() async throws {
        let log = StepLog()
        let device = Fixture.device()
        let category = NotificationCategory(identifier: "task", actions: [NotificationCategoryAction(identifier: "done", title: "Done")])
        let app = loggingApp(state: .background, log: log, categories: [category])
        device.install(app)
        await device.deliver(Fixture.push(self.alert, apnsID: "BG-2"))

        try await device.perform(action: "done", on: "BG-2", in: Fixture.bundleID)

        #expect(log.all == ["didReceive BG-2 done background"])
        #expect(app.state == .background && app.applicationState == .background)
    }

    @Test("terminated: a tap launches the app (inactive); the scene connects with the response first, then didReceive")
    func terminatedRoute() async throws {
        let log = StepLog()
        let device = Fixture.device()
        let app = loggingApp(state: .notRunning, log: log)
        device.install(app)

        await device.deliver(Fixture.push(self.alert, apnsID: "T-1"))
        #expect(log.all.isEmpty)
        try await device.tap("T-1", in: Fixture.bundleID)

        #expect(log.all == ["scene T-1 inactive", "didReceive T-1 \(self.tap) inactive"])
        #expect(app.state == .foreground && app.applicationState == .active)
        #expect(device.events.filter(Self.isRouteStep).dropFirst() == [
            .appLaunched(bundleID: Fixture.bundleID, reason: .notificationResponse(identifier: "T-1")),
            .sceneConnected(bundleID: Fixture.bundleID, identifier: "T-1"),
            .responseRouted(bundleID: Fixture.bundleID, identifier: "T-1", action: self.tap, userText: nil),
            .responseHandled(bundleID: Fixture.bundleID, identifier: "T-1", handlerIDs: ["did-receive"]),
        ])
    }

    @Test("terminated, delegate set too late: the scene still connects, the response is lost, the app is active")
    func terminatedDelegateLate() async throws {
        let log = StepLog()
        let device = Fixture.device()
        let app = loggingApp(state: .notRunning, log: log)
        app.isDelegateSetBeforeLaunch = false
        device.install(app)
        await device.deliver(Fixture.push(self.alert, apnsID: "T-2"))

        #expect(try await device.tap("T-2", in: Fixture.bundleID).isEmpty)

        #expect(log.all == ["scene T-2 inactive"])
        #expect(app.applicationState == .active)
    }

    @Test("background pushes: the silent handlers see background, or active when the app is on screen")
    func backgroundPushState() async throws {
        let device = Fixture.device()
        let app = Fixture.app(state: .notRunning)
        let recorder = SilentStateRecorder()
        app.silentRouter.addHandler(recorder)
        device.install(app)
        let sync = #"{"aps":{"content-available":1},"type":"task_sync"}"#

        await device.deliver(Fixture.push(sync, apnsID: "S-1"))
        app.launch()
        await device.deliver(Fixture.push(sync, apnsID: "S-2"))

        #expect(recorder.states.current == [.background, .active])
    }

    /// The events of seed 004's routes (what the device shows and routes).
    static func isRouteStep(_ event: DeviceEvent) -> Bool {
        switch event {
        case .appLaunched, .appForegrounded, .sceneConnected, .willPresent, .addedToNotificationList, .responseRouted,
            .responseHandled, .responseLost:
            return true
        default:
            return false
        }
    }

    func content(_ device: SimulatedDevice, _ identifier: String) -> NotificationContent? {
        device.timeline.lazy.compactMap { entry -> NotificationContent? in
            if case .addedToNotificationList(_, identifier, let content) = entry.event { return content }
            return nil
        }.first
    }
}

/// Records the application state each background push was handled in.
struct SilentStateRecorder: SilentPushHandler {
    let id = "state"
    let states = LockedBox<[ApplicationState]>([])
    func matchesPayload(_ payload: JSONValue) -> Bool { true }
    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        self.states.withLock { $0.append(context.applicationState) }
        return .noData
    }
}
