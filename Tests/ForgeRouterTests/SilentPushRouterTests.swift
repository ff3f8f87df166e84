import ForgeNotificationTypes
import ForgeSilentPush
import ForgeSupport
import Foundation
import Testing

/// The seed's example, ported: syncs tasks when protected data is readable.
struct TaskSyncHandler: SilentPushHandler {
    let id = "task-sync"
    let repository: TaskRepository

    func matchesPayload(_ payload: JSONValue) -> Bool {
        payload["type"]?.stringValue == "task_sync"
    }

    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        guard context.protectedDataAvailable else { return .failed }
        do {
            try await self.repository.syncFromRemote()
            return .newData
        } catch {
            return .failed
        }
    }
}

/// A stand-in for the app's repository: counts syncs, can be told to fail.
final class TaskRepository: Sendable {
    private let state = LockedBox((syncs: 0, shouldFail: false))

    struct SyncError: Error {}

    var shouldFail: Bool {
        get { self.state.withLock { $0.shouldFail } }
        set { self.state.withLock { $0.shouldFail = newValue } }
    }

    func syncFromRemote() async throws {
        try self.state.withLock { state throws(SyncError) in
            if state.shouldFail { throw SyncError() }
            state.syncs += 1
        }
    }

    var syncCount: Int { self.state.withLock { $0.syncs } }
}

/// A handler that returns a fixed result for payloads of its type.
struct FixedHandler: SilentPushHandler {
    let id: String
    let type: String
    let result: SilentPushResult

    func matchesPayload(_ payload: JSONValue) -> Bool { payload["type"]?.stringValue == self.type }
    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult { self.result }
}

/// Records the context it was given.
final class ContextRecorder: SilentPushHandler, Sendable {
    let id = "recorder"
    private let seen = LockedBox<[SilentPushContext]>([])

    func matchesPayload(_ payload: JSONValue) -> Bool { true }
    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        self.seen.withLock { $0.append(context) }
        return .noData
    }
    var contexts: [SilentPushContext] { self.seen.withLock { $0 } }
}

private func payload(_ json: String) throws -> JSONValue { try JSONValue(parsing: Array(json.utf8)) }

@Suite("SilentPushRouter")
struct SilentPushRouterTests {
    let connectivity = ManualConnectivityObserver(.wifi)
    let protectedData = ManualProtectedDataObserver(available: true)

    @Test("The seed's TaskSyncHandler: syncs on task_sync, fails while protected data is locked")
    func taskSync() async throws {
        let repository = TaskRepository()
        let router = SilentPushRouter(connectivity: self.connectivity, protectedData: self.protectedData)
        router.addHandler(TaskSyncHandler(repository: repository))
        let push = try payload(#"{"aps":{"content-available":1},"type":"task_sync"}"#)
        #expect(await router.handlePush(payload: push) == .newData)
        #expect(repository.syncCount == 1)
        self.protectedData.isProtectedDataAvailable = false
        #expect(await router.handlePush(payload: push) == .failed)
        #expect(repository.syncCount == 1)
        #expect(await router.handlePush(payload: try payload(#"{"type":"other"}"#)) == .noData)
    }

    @Test(
        "Aggregation: any newData wins, else any failed, else noData",
        arguments: [
            ([SilentPushResult.noData], SilentPushResult.noData), ([.newData], .newData), ([.failed], .failed),
            ([.noData, .failed], .failed), ([.failed, .newData], .newData), ([.noData, .noData], .noData),
            ([.newData, .failed, .noData], .newData), ([], .noData),
        ]
    )
    func aggregation(_ results: [SilentPushResult], _ expected: SilentPushResult) async throws {
        #expect(SilentPushResult.aggregate(results) == expected)
        let router = SilentPushRouter(connectivity: self.connectivity, protectedData: self.protectedData)
        for (index, result) in results.enumerated() { router.addHandler(FixedHandler(id: "h\(index)", type: "t", result: result)) }
        #expect(await router.handlePush(payload: try payload(#"{"type":"t"}"#)) == expected)
    }

    @Test("Results map to the background fetch result")
    func fetchResult() {
        #expect(SilentPushResult.newData.backgroundFetchResult == .newData)
        #expect(SilentPushResult.noData.backgroundFetchResult == .noData)
        #expect(SilentPushResult.failed.backgroundFetchResult == .failed)
    }

    @Test("Ids are unique: a second handler with the same id is refused; remove by id")
    func uniqueIDs() async throws {
        let router = SilentPushRouter(connectivity: self.connectivity, protectedData: self.protectedData)
        #expect(router.addHandler(FixedHandler(id: "a", type: "t", result: .newData)))
        #expect(!router.addHandler(FixedHandler(id: "a", type: "t", result: .failed)))
        #expect(router.handlerIDs == ["a"])
        #expect(await router.handlePush(payload: try payload(#"{"type":"t"}"#)) == .newData)
        #expect(router.removeHandler("a"))
        #expect(!router.removeHandler("a"))
        #expect(await router.handlePush(payload: try payload(#"{"type":"t"}"#)) == .noData)
    }

    @Test("The context is read from the observers at dispatch time")
    func context() async throws {
        let recorder = ContextRecorder()
        let router = SilentPushRouter(connectivity: self.connectivity, protectedData: self.protectedData)
        router.addHandler(recorder)
        _ = await router.handlePush(payload: .object([:]))
        self.connectivity.currentStatus = .offline
        self.protectedData.isProtectedDataAvailable = false
        _ = await router.handlePush(payload: .object([:]))
        #expect(recorder.contexts.map(\.connectivity) == [.wifi, .offline])
        #expect(recorder.contexts.map(\.protectedDataAvailable) == [true, false])
    }

    @Test("The completion-handler variant calls back exactly once, even when the router is released")
    func completionHandler() async throws {
        var router: SilentPushRouter? = SilentPushRouter(connectivity: self.connectivity, protectedData: self.protectedData)
        router!.addHandler(FixedHandler(id: "a", type: "t", result: .newData))
        let results = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[BackgroundFetchResult], any Error>) in
            let calls = LockedCalls(expected: 1) { continuation.resume(returning: $0) }
            router!.handlePush(payload: .object(["type": .string("t")])) { calls.record($0) }
            router = nil
        }
        #expect(results == [.newData])
    }

    @Test("Stress: 500 concurrent pushes while handlers come and go; every completion exactly once")
    func stress() async throws {
        let router = SilentPushRouter(connectivity: self.connectivity, protectedData: self.protectedData)
        router.addHandler(FixedHandler(id: "stable", type: "t", result: .noData))
        let calls = CountingCalls()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 0..<200 {
                    router.addHandler(FixedHandler(id: "churn-\(round % 5)", type: "t", result: .newData))
                    router.removeHandler("churn-\((round + 2) % 5)")
                    await Task.yield()
                }
            }
            for index in 0..<500 {
                group.addTask {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        router.handlePush(payload: .object(["type": .string("t")])) { result in
                            calls.record(index, result)
                            continuation.resume()
                        }
                    }
                }
            }
        }
        #expect(calls.count == 500)
        #expect(calls.duplicates == 0)
        #expect(calls.results.isSubset(of: [.newData, .noData]))
    }
}

/// Collects completion calls and resumes when `expected` arrived.
final class LockedCalls: Sendable {
    private let values = LockedBox<[BackgroundFetchResult]>([])
    private let expected: Int
    private let done: @Sendable ([BackgroundFetchResult]) -> Void

    init(expected: Int, done: @escaping @Sendable ([BackgroundFetchResult]) -> Void) {
        self.expected = expected
        self.done = done
    }

    func record(_ value: BackgroundFetchResult) {
        let finished = self.values.withLock { values -> [BackgroundFetchResult]? in
            values.append(value)
            return values.count == self.expected ? values : nil
        }
        if let finished { self.done(finished) }
    }
}

/// Counts completions per push and notices a second call for the same push.
final class CountingCalls: Sendable {
    private struct State {
        var seen = Set<Int>()
        var duplicateCount = 0
        var resultSet = Set<BackgroundFetchResult>()
    }

    private let state = LockedBox(State())

    func record(_ index: Int, _ result: BackgroundFetchResult) {
        self.state.withLock { state in
            if !state.seen.insert(index).inserted { state.duplicateCount += 1 }
            state.resultSet.insert(result)
        }
    }

    var count: Int { self.state.withLock { $0.seen.count } }
    var duplicates: Int { self.state.withLock { $0.duplicateCount } }
    var results: Set<BackgroundFetchResult> { self.state.withLock { $0.resultSet } }
}
