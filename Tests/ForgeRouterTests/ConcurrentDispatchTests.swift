import ForgeNotificationTypes
import ForgeSilentPush
import ForgeSupport
import ForgeVisiblePush
import Foundation
import Testing

/// A one-time signal a task can wait for, with a bound on the wait.
final class Signal: Sendable {
    private struct State {
        var fired = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
    }

    private let state = LockedBox(State())

    func fire() {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.fired = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        waiters.forEach { $0.resume(returning: true) }
    }

    /// Whether the signal fired within `limit` (a safety net: with concurrent dispatch it fires at once).
    func wait(within limit: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.wait() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Waits until fired; `false` when the task is cancelled first.
    private func wait() async -> Bool {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resume = self.state.withLock { state -> Bool? in
                    if state.fired { return true }
                    if Task.isCancelled { return false }
                    state.waiters[id] = continuation
                    return nil
                }
                if let resume { continuation.resume(returning: resume) }
            }
        } onCancel: {
            let waiter = self.state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: false)
        }
    }
}

/// Two handlers that each announce they started, then wait for the other: with serial dispatch the
/// first would wait in vain (until the bound), with concurrent dispatch both see the other.
struct Rendezvous: Sendable {
    let first = Signal()
    let second = Signal()
    /// Whether each handler saw the other start, by handler id.
    let sawOther = LockedBox<[String: Bool]>([:])

    /// Runs the handler with `id`: fires its own signal, waits (bounded) for the other's.
    func meet(as id: String) async {
        let (own, other) = id == "first" ? (self.first, self.second) : (self.second, self.first)
        own.fire()
        let saw = await other.wait(within: .seconds(10))
        self.sawOther.withLock { $0[id] = saw }
    }

    var results: [String: Bool] { self.sawOther.withLock { $0 } }
}

private struct MeetingSilentHandler: SilentPushHandler {
    let id: String
    let rendezvous: Rendezvous
    func matchesPayload(_ payload: JSONValue) -> Bool { true }
    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        await self.rendezvous.meet(as: self.id)
        return .noData
    }
}

private struct MeetingVisibleHandler: VisiblePushHandler {
    let id: String
    let rendezvous: Rendezvous
    func matches(_ response: NotificationResponse) -> Bool { true }
    func handle(_ response: NotificationResponse, context: VisiblePushContext) async {
        await self.rendezvous.meet(as: self.id)
    }
}

/// Records the application state each response was handled in.
private final class StateRecorder: VisiblePushHandler, SilentPushHandler, Sendable {
    let id = "state-recorder"
    private let states = LockedBox<[ApplicationState]>([])
    func matches(_ response: NotificationResponse) -> Bool { true }
    func matchesPayload(_ payload: JSONValue) -> Bool { true }
    func handle(_ response: NotificationResponse, context: VisiblePushContext) async {
        self.states.withLock { $0.append(context.applicationState) }
    }
    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        self.states.withLock { $0.append(context.applicationState) }
        return .noData
    }
    var seen: [ApplicationState] { self.states.withLock { $0 } }
}

private func tapped() -> NotificationResponse {
    let request = NotificationRequest(identifier: "n-1", content: NotificationContent(body: "hi"))
    return NotificationResponse(notification: DeliveredNotification(request: request, date: Date(timeIntervalSince1970: 1_700_000_000)))
}

@Suite("Concurrent dispatch and the application state, in both routers", .timeLimit(.minutes(1)))
struct ConcurrentDispatchTests {
    @Test("SilentPushRouter: two matching handlers that each wait for the other to start both finish")
    func silentHandlersRunTogether() async {
        let rendezvous = Rendezvous()
        let router = SilentPushRouter(connectivity: ManualConnectivityObserver(), protectedData: ManualProtectedDataObserver())
        router.addHandler(MeetingSilentHandler(id: "first", rendezvous: rendezvous))
        router.addHandler(MeetingSilentHandler(id: "second", rendezvous: rendezvous))

        let result = await router.handlePush(payload: .object([:]))

        #expect(result == .noData)
        #expect(rendezvous.results == ["first": true, "second": true])
    }

    @Test("VisiblePushRouter: two matching handlers that each wait for the other to start both finish")
    func visibleHandlersRunTogether() async {
        let rendezvous = Rendezvous()
        let router = VisiblePushRouter(connectivity: ManualConnectivityObserver(), protectedData: ManualProtectedDataObserver())
        router.addHandler(MeetingVisibleHandler(id: "first", rendezvous: rendezvous))
        router.addHandler(MeetingVisibleHandler(id: "second", rendezvous: rendezvous))

        let ran = await router.handleResponse(tapped())

        #expect(Set(ran) == ["first", "second"])
        #expect(rendezvous.results == ["first": true, "second": true])
    }

    @Test("Handlers see the application state the observer reports at dispatch; active without an observer")
    func applicationStateInContext() async {
        let state = ManualApplicationStateObserver(.inactive)
        let recorder = StateRecorder()
        let visible = VisiblePushRouter(
            connectivity: ManualConnectivityObserver(), protectedData: ManualProtectedDataObserver(), applicationState: state
        )
        let silent = SilentPushRouter(
            connectivity: ManualConnectivityObserver(), protectedData: ManualProtectedDataObserver(), applicationState: state
        )
        visible.addHandler(recorder)
        silent.addHandler(recorder)

        await visible.handleResponse(tapped())
        state.applicationState = .background
        _ = await silent.handlePush(payload: .object([:]))
        let plain = VisiblePushRouter(connectivity: ManualConnectivityObserver(), protectedData: ManualProtectedDataObserver())
        plain.addHandler(recorder)
        await plain.handleResponse(tapped())

        #expect(recorder.seen == [.inactive, .background, .active])
    }
}
