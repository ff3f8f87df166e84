import ForgeAPNs
import ForgeAPNsCore
import ForgeLoopback
import Foundation
import Logging
import ServiceLifecycle
import Testing

private struct Score: Encodable, Sendable {
    var home: Int
    var away: Int
}

@Suite("APNSClient: broadcast channels and graceful shutdown", .timeLimit(.minutes(1)))
struct ChannelsAndLifecycleTests {
    @Test("Create, read, list, broadcast to, and delete a channel; a deleted channel is refused")
    func channelLifecycle() async throws {
        let loopback = try Loopback.start()
        try await withAPNSClient(configuration: loopback.configuration) { client in
            let stored = try await client.createChannel(bundleID: bundleID, storagePolicy: .mostRecentMessageStored)
            let quick = try await client.createChannel(bundleID: bundleID, storagePolicy: .noMessageStored)
            #expect(try await client.channelStoragePolicy(stored, bundleID: bundleID) == .mostRecentMessageStored)
            #expect(try await client.channelStoragePolicy(quick, bundleID: bundleID) == .noMessageStored)
            #expect(Set(try await client.channels(bundleID: bundleID).map(\.rawValue)) == [stored.rawValue, quick.rawValue])
            let update = APNSBroadcastNotification(channelID: quick, bundleID: bundleID, event: .update,
                                                   contentState: Score(home: 1, away: 0), timestamp: Date())
            let sent = try await client.send(update)
            #expect(!sent.apnsID.isEmpty && sent.apnsUniqueID != nil)
            try await client.deleteChannel(quick, bundleID: bundleID)
            #expect(try await client.channels(bundleID: bundleID).map(\.rawValue) == [stored.rawValue])
            do {
                _ = try await client.send(update)
                Issue.record("a broadcast to a deleted channel was accepted")
            } catch let error as APNSError {
                #expect(error.status == 400 && error.reason == .channelNotRegistered && error.attempts == 1)
            }
        }
        let broadcasts = loopback.server.accepted.filter { $0.channelID != nil }
        #expect(broadcasts.count == 1 && broadcasts.first?.topic == bundle)
        await loopback.server.shutdown()
    }

    @Test("As a ServiceLifecycle service: runs until graceful shutdown, then refuses new sends")
    func service() async throws {
        let loopback = try Loopback.start()
        let client = try APNSClient(configuration: loopback.configuration)
        let group = ServiceGroup(services: [client], logger: Logger(label: "test.lifecycle"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            #expect(try await client.send(alert(), to: token(0)).attempts == 1)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        do {
            _ = try await client.send(alert(), to: token(1))
            Issue.record("a send after shutdown was accepted")
        } catch {
            #expect(error.kind == .shutdown)
        }
        #expect(loopback.server.acceptedCount == 1)
        await loopback.server.shutdown()
    }
}
