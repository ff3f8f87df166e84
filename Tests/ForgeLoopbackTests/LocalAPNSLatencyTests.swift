import ForgeAPNsCore
import ForgeHTTP2
import ForgeLoopback
import Foundation
import Testing

@Suite("Local APNs server: a round trip away (responseDelay, delay faults)", .timeLimit(.minutes(1)))
struct LocalAPNSLatencyTests {
    @Test("http2.responseDelay holds every answer; a delay fault holds its answer that much longer")
    func latency() async throws {
        let server = try LocalAPNSServer.start(http2: HTTP2ServerConfiguration(responseDelay: .milliseconds(300)))
        let connection = try await h2cClient(server)
        var sent = ContinuousClock.now
        #expect(try await push(connection).status == 200)
        #expect(sent.duration(to: .now) >= .milliseconds(300))
        server.schedule(.delay(.milliseconds(200)))
        sent = ContinuousClock.now
        #expect(try await push(connection).status == 200)
        #expect(sent.duration(to: .now) >= .milliseconds(500))
        #expect(server.acceptedCount == 2)
        await connection.close()
        await server.shutdown()
    }

    @Test("Shutdown drops an answer held by a delay fault and returns; the client hears the connection end")
    func shutdownWhileHeld() async throws {
        let server = try LocalAPNSServer.start()
        let accepted = server.acceptedPushes()
        let connection = try await h2cClient(server)
        server.schedule(.delay(.seconds(3600)))
        async let held = outcome { try await push(connection) }
        for await _ in accepted { break }  // judged and recorded: its answer is now held
        let start = ContinuousClock.now
        await server.shutdown()
        guard case .failure = await held else { Issue.record("a held answer was sent at shutdown"); return }
        #expect(start.duration(to: .now) < .seconds(30))
        #expect(server.acceptedCount == 1)
        await connection.close()
    }
}

/// The result of a send, as a value.
private func outcome(_ body: () async throws -> HTTP2Response) async -> Result<HTTP2Response, any Error> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}
