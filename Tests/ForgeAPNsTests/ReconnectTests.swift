import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import ForgeLoopback
import ForgeSupport
import Testing

/// Connections that come and go: each is made, used and released, whatever ended it. `make
/// sanitize` runs this suite under LeakSanitizer too (`apns-bench reconnect` measures the RSS of
/// 10,000 of them).
@Suite("Reconnects: every connection made and lost is released; a healthy one resets the backoff", .timeLimit(.minutes(2)))
struct ReconnectTests {
    @Test("A server that ends every connection after one answer: each send takes a new connection and is accepted")
    func goAwayAfterEachAnswer() async throws {
        let loopback = try Loopback.start()
        loopback.server.schedule(.goAway(errorCode: .noError, reason: .shutdown), afterRequests: 0, count: .max)
        let sends = 200
        try await withAPNSClient(configuration: loopback.configuration) { client in
            for index in 0..<sends {
                // A connection that answered is healthy: its GOAWAY costs no backoff, so none of
                // these waits, and none is a retry.
                let result = try await client.send(alert(), to: token(index))
                #expect(result.attempts == 1)
            }
        }
        #expect(loopback.server.acceptedCount == sends)
        #expect(Set(loopback.server.accepted.map(\.connectionID)).count == sends)
        #expect(loopback.server.acceptedConnections == sends)
        await loopback.server.shutdown()
    }

    @Test("A server that drops connections before answering: pushes end not sent or failed, and the pool backs off")
    func dropBeforeAnswer() async throws {
        // Two attempts a push: each lost copy and each connection that fails counts against it.
        let loopback = try Loopback.start(retry: APNSClient.RetryPolicy(attempts: 2, backoffBase: .milliseconds(5), backoffCap: .milliseconds(50)))
        loopback.server.schedule(.dropConnection(processed: false), afterRequests: 0, count: .max)
        let list = (0..<200).map { token($0).hexString }
        let result = try await withAPNSClient(configuration: loopback.configuration) { client in
            await collect(try client.sendBulk(alert(), to: list.async), expected: list.count)
        }
        // Nothing was ever processed: no push may be called accepted or rejected.
        #expect(result.summary.accepted == 0 && result.summary.rejected.isEmpty)
        #expect(result.summary.failed + result.summary.notSent == list.count)
        #expect(loopback.server.acceptedCount == 0)
        // Each connection that fails doubles the wait before the next (100 ms, 200 ms, …, at least
        // half of it after jitter), so however slow the machine, a run within this suite's 2-minute
        // limit makes at most about log2(120 s / 50 ms) + 1 = 12 connections; without the backoff
        // every try of every push would take one (hundreds).
        let connections = loopback.server.acceptedConnections
        #expect(connections <= 16, "\(connections) connections for \(list.count) pushes")
        await loopback.server.shutdown()
    }

    @Test("A server that sends GOAWAY (IdleTimeout) on new connections before answering: replayed, not unreachable")
    func goAwayBeforeFirstAnswer() async throws {
        // The first four connections get GOAWAY with last stream id 0 on their first request (as a
        // server whose idle timer fired just before the request arrived): more than the connect
        // budget (3 attempts), fewer than the replays (8). The fifth answers.
        let refusedConnections = LockedBox(Set<UInt64>())
        let server = try HTTP2Server.start(HTTP2ServerConfiguration()) { _, responder in
            let connection = responder.connection
            let refuse = refusedConnections.withLock { refused -> Bool in
                if refused.contains(connection.id) { return true }
                guard refused.count < 4 else { return false }
                refused.insert(connection.id)
                return true
            }
            guard refuse else { return HTTP2Response(status: 200, headers: [HTTP2HeaderField("apns-id", "00000000-0000-0000-0000-000000000001")]) }
            connection.goAway(lastStreamID: 0, errorCode: .noError, debugData: Array(#"{"reason":"IdleTimeout"}"#.utf8))
            return nil
        }
        let configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), environment: .custom(host: "127.0.0.1", port: server.port),
            tls: APNSClient.TLS(cleartextLoopbackOnly: true)
        )
        let result = try await withAPNSClient(configuration: configuration) { client in
            try await client.send(alert(), to: token(0))
        }
        #expect(result.attempts == 1)
        #expect(refusedConnections.withLock { $0.count } == 4)
        await server.shutdown()
    }
}
