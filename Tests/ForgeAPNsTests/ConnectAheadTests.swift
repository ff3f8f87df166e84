import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Testing

@Suite("connect(): a connection opened before the first push", .timeLimit(.minutes(1)))
struct ConnectAheadTests {
    @Test("connect() opens one connection before any push; the pushes then go on it")
    func opensBeforeAnyPush() async throws {
        let loopback = try Loopback.start()
        try await withAPNSClient(configuration: loopback.configuration) { client in
            #expect(client.openConnections == 0)
            try await client.connect()
            #expect(client.openConnections == 1)
            #expect(loopback.server.acceptedConnections == 1)
            #expect(loopback.server.acceptedCount == 0, "connect() sends nothing")
            // A second call finds it open: no other connection.
            try await client.connect()
            #expect(loopback.server.acceptedConnections == 1)
            for index in 0..<3 { _ = try await client.send(alert(), to: token(index)) }
            #expect(loopback.server.acceptedCount == 3)
            #expect(loopback.server.acceptedConnections == 1, "the pushes used the connection opened ahead")
        }
        await loopback.server.shutdown()
    }

    @Test("A refused port: connect() throws unreachable with the connect's error, and nothing is left open")
    func refused() async throws {
        let closed = try ClosedPort()
        let configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID),
            environment: .custom(host: "127.0.0.1", port: closed.port),
            tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem"))
        )
        try await withAPNSClient(configuration: configuration) { client in
            do throws(APNSError) {
                try await client.connect(deadline: .now + .seconds(10))
                Issue.record("connected to a port nobody listens on")
            } catch {
                #expect(error.kind == .unreachable, "\(error)")
                #expect(error.detail.contains("127.0.0.1:\(closed.port)"), "\(error.detail)")
                #expect(!error.mayHaveBeenDelivered)
            }
            #expect(client.openConnections == 0)
        }
    }

    @Test("After shutdown connect() throws shutdown; over an in-process transport it returns at once")
    func shutdownAndOtherTransports() async throws {
        let loopback = try Loopback.start()
        let client = try APNSClient(configuration: loopback.configuration)
        try await withAPNSClient(client) { _ in }
        do throws(APNSError) {
            try await client.connect()
            Issue.record("connected after shutdown")
        } catch {
            #expect(error.kind == .shutdown, "\(error)")
        }
        #expect(loopback.server.acceptedConnections == 0)

        let transport = APNSInProcessTransport { _ in APNSTransportResponse(status: 200) }
        try await withAPNSClient(APNSClient(configuration: loopback.configuration, transport: transport)) { client in
            try await client.connect()
            #expect(client.openConnections == 0)
        }
        await loopback.server.shutdown()
    }
}
