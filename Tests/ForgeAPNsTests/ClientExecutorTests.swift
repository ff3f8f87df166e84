import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Testing

@Suite("The client's executor: tasks that send run on the connections' I/O threads", .timeLimit(.minutes(1)))
struct ClientExecutorTests {
    /// The calling thread's name, as the kernel has it (connection I/O threads are named
    /// `forge-h2c:PORT`).
    private static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    @Test("Tasks preferring client.executor send, and every answer resumes them on an I/O thread; after shutdown they still run")
    func tasksOnTheClientExecutor() async throws {
        let loopback = try Loopback.start()
        let tasks = 40
        let pushes = 10
        var escaped: APNSClient?
        try await withAPNSClient(configuration: loopback.configuration) { client in
            escaped = client
            let prepared = try alert().prepared()
            let outcomes = await withTaskGroup(of: (accepted: Int, resumedOnIOThread: Int).self) { group in
                for task in 0..<tasks {
                    group.addTask(executorPreference: client.executor) {
                        var accepted = 0
                        var resumedOnIOThread = 0
                        for push in 0..<pushes {
                            if (try? await client.send(prepared, to: token(task * pushes + push))) != nil { accepted += 1 }
                            if Self.threadName().hasPrefix("forge-h2c:") { resumedOnIOThread += 1 }
                        }
                        return (accepted, resumedOnIOThread)
                    }
                }
                return await group.reduce(into: [(accepted: Int, resumedOnIOThread: Int)]()) { $0.append($1) }
            }
            #expect(outcomes.map(\.accepted).reduce(0, +) == tasks * pushes)
            // A response is read on an I/O thread, and the task it resumes is queued right there.
            #expect(outcomes.map(\.resumedOnIOThread).reduce(0, +) == tasks * pushes)
        }
        #expect(Set(loopback.server.accepted.map(\.token)).count == tasks * pushes)
        // Shut down: no connection is left to run on; the task runs on the global executor and fails fast.
        let client = try #require(escaped)
        let late = await Task(executorPreference: client.executor) { () -> (APNSError.Kind?, String) in
            do {
                _ = try await client.send(alert(), to: token(0))
                return (nil, Self.threadName())
            } catch {
                return ((error as? APNSError)?.kind, Self.threadName())
            }
        }.value
        #expect(late.0 == .shutdown)
        #expect(!late.1.hasPrefix("forge-h2c:"))
        await loopback.server.shutdown()
    }

    @Test("With a transport other than the client's pools, the executor is the global one")
    func inProcessTransport() async throws {
        let transport = APNSInProcessTransport { _ in
            APNSTransportResponse(status: 200, headers: [APNSHeaderField("apns-id", "00000000-0000-0000-0000-000000000001")])
        }
        let configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), environment: .sandbox
        )
        let client = try APNSClient(configuration: configuration, transport: transport)
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<20 {
                group.addTask(executorPreference: client.executor) { (try? await client.send(alert(), to: token(index))) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 20 && results.allSatisfy { $0 })
        await client.shutdown()
    }
}
