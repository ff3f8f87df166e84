import ForgeNotificationTypes
import ForgeSilentPush
import ForgeSimulatedDevice
import ForgeSupport
import ForgeVisiblePush
import Foundation

/// Shared values and builders for the device tests.
enum Fixture {
    static let start = Date(timeIntervalSince1970: 1_700_000_000)
    static let bundleID = "com.example.tasks"
    static let sandboxToken = String(repeating: "ab", count: 32)
    static let productionToken = String(repeating: "cd", count: 32)
    static let pushToStartToken = String(repeating: "5a", count: 32)

    /// A device on a manual clock, with no real-time limits (expiry is triggered by hand).
    static func device(clock: ManualDeviceClock = ManualDeviceClock(now: start)) -> SimulatedDevice {
        SimulatedDevice(clock: clock, backgroundBudget: nil)
    }

    /// An app with both tokens.
    static func app(
        state: AppState = .background,
        authorization: NotificationAuthorization = .granted,
        categories: [NotificationCategory] = [],
        serviceExtension: ServiceExtension? = nil,
        isDelegateSetBeforeLaunch: Bool = true,
        foregroundPresentation: PresentationOptions = [.banner, .sound, .list]
    ) -> SimulatedApp {
        SimulatedApp(
            bundleID: bundleID, deviceTokens: [.sandbox: sandboxToken, .production: productionToken], state: state,
            authorization: authorization, categories: categories, serviceExtension: serviceExtension,
            isDelegateSetBeforeLaunch: isDelegateSetBeforeLaunch, pushToStartToken: pushToStartToken,
            activityTypes: [
                LiveActivityType(
                    attributesType: "PizzaDeliveryAttributes", attributes: PizzaAttributes.self,
                    contentState: PizzaAttributes.ContentState.self
                )
            ],
            foregroundPresentation: foregroundPresentation
        )
    }

    /// A push of `json` to `token`.
    static func push(
        _ json: String, token: String = sandboxToken, pushType: String? = nil, apnsID: String, collapseID: String? = nil,
        environment: DeviceEnvironment? = nil
    ) -> DevicePush {
        DevicePush(
            token: token, pushType: pushType, payload: Array(json.utf8), apnsID: apnsID, collapseID: collapseID,
            environment: environment, date: start
        )
    }
}

/// The seed guide's Live Activity attributes.
struct PizzaAttributes: Decodable, Sendable {
    struct ContentState: Decodable, Sendable {
        var status: String
        var eta: Int
    }

    var pizzaName: String
}

extension SimulatedDevice {
    /// The events so far, without dates.
    var events: [DeviceEvent] { self.timeline.map(\.event) }
}

extension LockedBox {
    /// A copy of the value now, for the tests' checks.
    var current: Value { self.withLock { $0 } }
}

/// A visible handler that records every response it handles.
struct ResponseRecorder: VisiblePushHandler {
    let id: String
    let responses = LockedBox<[NotificationResponse]>([])

    func matches(_ response: NotificationResponse) -> Bool { true }

    func handle(_ response: NotificationResponse, context: VisiblePushContext) async {
        self.responses.withLock { $0.append(response) }
    }
}

/// A silent handler that records payloads and returns a fixed result.
struct SilentRecorder: SilentPushHandler {
    let id: String
    let result: SilentPushResult
    let payloads = LockedBox<[JSONValue]>([])

    func matchesPayload(_ payload: JSONValue) -> Bool { payload["type"]?.stringValue == "task_sync" }

    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        self.payloads.withLock { $0.append(payload) }
        return self.result
    }
}

/// Blocks its waiters until opened: a handler that "never completes" until the test releases it, or
/// until its task is cancelled (as the device does when the budget runs out).
final class Gate: Sendable {
    private struct State {
        var open = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = LockedBox(State())

    /// Returns once the gate is open or the task is cancelled.
    func wait() async {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let goes = self.state.withLock { state -> Bool in
                    if state.open || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if goes { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }

    func open() {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        waiters.forEach { $0.resume() }
    }
}

/// A silent handler that waits at a gate (it never calls back while the gate is shut).
struct HangingSilentHandler: SilentPushHandler {
    let id = "hanging"
    let gate: Gate
    /// The type of payload it takes; every payload when `nil`.
    var type: String? = nil
    let started = LockedBox(false)
    /// Whether its task was cancelled while it waited.
    let cancelled = LockedBox(false)

    func matchesPayload(_ payload: JSONValue) -> Bool { self.type.map { payload["type"]?.stringValue == $0 } ?? true }

    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        self.started.withLock { $0 = true }
        await self.gate.wait()
        if Task.isCancelled { self.cancelled.withLock { $0 = true } }
        return .newData
    }
}
