import ForgeAPNs
import ForgeAPNsCore
@testable import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing

/// A server that accepts TCP (the kernel's backlog does) but never answers the TLS handshake.
private func silentEndpoint() throws -> (socket: Socket, configuration: APNSClient.Configuration) {
    let (socket, port) = try Socket.listen(host: "127.0.0.1", port: 0)
    let configuration = APNSClient.Configuration(
        authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID),
        environment: .custom(host: "127.0.0.1", port: port),
        tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem")),
        timeouts: APNSClient.Timeouts(connect: .seconds(120)),
        retry: APNSClient.RetryPolicy(attempts: 1)
    )
    return (socket, configuration)
}

@Suite("Waiting for a connection respects the caller", .timeLimit(.minutes(1)))
struct ConnectWaitTests {
    @Test("A send whose deadline passes while the connection is still handshaking fails at its deadline")
    func deadlineWhileConnecting() async throws {
        let (socket, configuration) = try silentEndpoint()
        defer { withExtendedLifetime(socket) {} }
        try await withAPNSClient(configuration: configuration) { client in
            do throws(APNSError) {
                // The connect timeout is two minutes, past the suite's time limit: only the deadline ends this.
                _ = try await client.send(alert(), to: token(0), deadline: .now + .milliseconds(300))
                Issue.record("accepted by a server that never answers")
            } catch {
                #expect(error.kind == .deadlineExceeded, "\(error)")
                #expect(!error.mayHaveBeenDelivered)
            }
        }
    }

    @Test("Cancelling a send that waits for a connection ends it as cancelled, nothing delivered")
    func cancelWhileConnecting() async throws {
        let (socket, configuration) = try silentEndpoint()
        defer { withExtendedLifetime(socket) {} }
        try await withAPNSClient(configuration: configuration) { client in
            let send = Task { () -> APNSError? in
                do throws(APNSError) {
                    _ = try await client.send(alert(), to: token(0), deadline: .now + .seconds(120))
                    return nil
                } catch {
                    return error
                }
            }
            send.cancel()
            let error = try #require(await send.value)
            #expect(error.kind == .cancelled, "\(error)")
            #expect(!error.mayHaveBeenDelivered)
        }
    }
}
