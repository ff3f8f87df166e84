@testable import ForgeHTTP2
import ForgeSupport
import ForgeTestSupport
import Foundation
import Testing

/// A server whose handler hands every request to the test, which answers when it chooses.
final class DeferredServer: Sendable {
    let server: HTTP2Server
    let requests: AsyncStream<(HTTP2ServerRequest, HTTP2Responder)>

    init(_ configuration: HTTP2ServerConfiguration = HTTP2ServerConfiguration()) throws {
        let (stream, continuation) = AsyncStream.makeStream(of: (HTTP2ServerRequest, HTTP2Responder).self)
        self.requests = stream
        self.server = try HTTP2Server.start(configuration) { request, responder in
            continuation.yield((request, responder))
            return nil
        }
    }

    /// The next `count` requests, in arrival order.
    func next(_ count: Int) async -> [(HTTP2ServerRequest, HTTP2Responder)] {
        var received: [(HTTP2ServerRequest, HTTP2Responder)] = []
        for await item in self.requests {
            received.append(item)
            if received.count == count { break }
        }
        return received
    }

    func client(
        tls: HTTP2TLSConfiguration? = nil, pingInterval: Duration? = nil, pingTimeout: Duration = .seconds(10),
        events: (@Sendable (HTTP2ConnectionEvent) -> Void)? = nil
    ) async throws -> HTTP2Connection {
        try await HTTP2Connection.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: self.server.port, tls: tls, pingInterval: pingInterval, pingTimeout: pingTimeout),
            events: events
        )
    }

    /// The server side of the first accepted connection.
    func firstConnection() async -> HTTP2ServerConnection? {
        for await connection in self.server.connections { return connection }
        return nil
    }
}

private func echoServer(_ configuration: HTTP2ServerConfiguration = HTTP2ServerConfiguration()) throws -> HTTP2Server {
    try HTTP2Server.start(configuration) { request, _ in
        HTTP2Response(status: 200, headers: [HTTP2HeaderField("x-path", request.path), HTTP2HeaderField("x-peer-cert", request.clientCertificate == nil ? "none" : "present")],
                      body: request.body)
    }
}

/// The result of a send, as a value: success, or the transport's error.
func outcome(_ body: () async throws -> HTTP2Response) async -> Result<HTTP2Response, HTTP2ClientError> {
    do {
        return .success(try await body())
    } catch let error as HTTP2ClientError {
        return .failure(error)
    } catch {
        return .failure(HTTP2ClientError(.protocolError, mayHaveBeenProcessed: true, detail: "unexpected error \(error)"))
    }
}

private let post = HTTP2Request(scheme: "http", authority: "127.0.0.1", path: "/3/device/abc", body: Array(#"{"aps":{}}"#.utf8))

@Suite("Server and client over sockets", .timeLimit(.minutes(1)))
struct ServerTests {
    @Test("shutdown() a second time, and two at once, return: a stopped server has nothing left to wait for")
    func shutdownTwice() async throws {
        let server = try echoServer()
        let client = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: nil))
        #expect(try await client.send(post).status == 200)
        async let first: Void = server.shutdown()
        async let second: Void = server.shutdown()
        _ = await (first, second)
        await server.shutdown()
        await client.close()
    }

    @Test("No wake-up is lost: sends and a cancellation that find the I/O thread waiting, and bursts that find it running, all complete; a cancelled task sends nothing")
    func noLostWakeUp() async throws {
        // Requests to /hold get no answer (the responder is dropped, the stream stays open).
        let server = try HTTP2Server.start(HTTP2ServerConfiguration()) { request, _ in
            request.path == "/hold" ? nil : HTTP2Response(status: 200, body: request.body)
        }
        // No PINGs and no deadlines: the I/O thread's only timer is a minute away, past the suite's
        // time limit, so work it is not woken for would stay in its inbox and fail the test.
        let connection = try await HTTP2Connection.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: nil, pingInterval: nil, stallInterval: nil)
        )
        // One at a time: each request arrives while the thread waits in poll.
        for _ in 0..<300 { #expect(try await connection.send(post).status == 200) }
        // Many at once: most arrive while it runs, and must wake nothing.
        let accepted = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    var accepted = 0
                    for _ in 0..<200 where try await connection.send(post).status == 200 { accepted += 1 }
                    return accepted
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(accepted == 16 * 200)
        // A cancellation is work in the inbox too: the held stream is reset at once.
        let held = Task { await outcome { try await connection.send(HTTP2Request(scheme: "http", authority: "127.0.0.1", path: "/hold")) } }
        while connection.outstandingCount == 0 { await Task.yield() }
        held.cancel()
        guard case .failure(let error) = await held.value else {
            Issue.record("a request the server never answered succeeded")
            return
        }
        #expect(error.code == .cancelled, "\(error)")
        // A task cancelled before it sends: its request never leaves. Had it gone out, the server
        // would hold it and it would end at its deadline as possibly processed (the deadline keeps
        // such a failure from hanging the suite).
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await outcome {
                try await connection.send(HTTP2Request(scheme: "http", authority: "127.0.0.1", path: "/hold"), deadline: .now + .seconds(10))
            }
        }
        guard case .failure(let earlyError) = await early.value else {
            Issue.record("a request from a cancelled task succeeded")
            return
        }
        #expect(earlyError.code == .cancelled && !earlyError.mayHaveBeenProcessed, "\(earlyError)")
        #expect(try await connection.send(post).status == 200)
        await connection.close()
        await server.shutdown()
    }

    @Test("Client against the project's server: h2c, and TLS on IPv4 and IPv6")
    func clientAgainstServer() async throws {
        let plain = try echoServer()
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: plain.port, tls: nil))
        let response = try await connection.send(post)
        #expect(response.status == 200 && response.body == post.body && response[header: "x-path"] == "/3/device/abc")
        await connection.close()
        await plain.shutdown()

        for host in ["127.0.0.1", "::1"] {
            let server = try echoServer(HTTP2ServerConfiguration(host: host, tls: KeysExample.serverTLS))
            let secure = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: host, port: server.port, tls: KeysExample.clientTLS))
            #expect(try await secure.send(post).status == 200)
            await secure.close()
            await server.shutdown()
        }
    }

    @Test("A client certificate reaches the handler")
    func clientCertificate() async throws {
        var tls = KeysExample.serverTLS
        tls.requestsClientCertificate = true
        tls.clientCertificateTrustRoots = KeysExample.path("ca.pem")
        let server = try echoServer(HTTP2ServerConfiguration(tls: tls))
        var clientTLS = KeysExample.clientTLS
        clientTLS.clientIdentity = .pem(certificateFile: KeysExample.path("client.pem"), privateKeyFile: KeysExample.path("client.key"))
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "localhost", port: server.port, tls: clientTLS))
        #expect(try await connection.send(post)[header: "x-peer-cert"] == "present")
        await connection.close()
        await server.shutdown()
    }

    @Test("nghttp, curl and h2load against the server, h2c and TLS")
    func externalClients() async throws {
        let plain = try echoServer()
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("forge-body-\(UUID().uuidString)")
        try Data(#"{"aps":{"alert":"hi"}}"#.utf8).write(to: body)
        defer { try? FileManager.default.removeItem(at: body) }

        let nghttp = try await ChildProcess("/usr/bin/nghttp", ["-d", body.path, "http://127.0.0.1:\(plain.port)/3/device/abc"]).finish()
        #expect(nghttp.exitCode == 0 && nghttp.stdout.contains(#"{"aps":{"alert":"hi"}}"#), "\(nghttp.stdout)")

        let curl = try await ChildProcess(
            "/usr/bin/curl", ["-sS", "--http2-prior-knowledge", "--data-binary", "@\(body.path)", "http://127.0.0.1:\(plain.port)/3/device/abc"]
        ).finish()
        #expect(curl.exitCode == 0 && curl.stdout == #"{"aps":{"alert":"hi"}}"#, "\(curl.stdout)")

        let h2load = try await ChildProcess("/usr/bin/h2load", ["-n", "2000", "-c", "1", "-m", "50", "http://127.0.0.1:\(plain.port)/3/device/abc"]).finish()
        #expect(h2load.exitCode == 0 && h2load.stdout.contains("2000 succeeded"), "\(h2load.stdout)")
        await plain.shutdown()

        let secure = try echoServer(HTTP2ServerConfiguration(tls: KeysExample.serverTLS))
        let secureCurl = try await ChildProcess(
            "/usr/bin/curl", ["-sS", "--http2", "--cacert", KeysExample.path("ca.pem"), "--data-binary", "@\(body.path)",
                              "https://localhost:\(secure.port)/3/device/abc"]
        ).finish()
        #expect(secureCurl.exitCode == 0 && secureCurl.stdout == #"{"aps":{"alert":"hi"}}"#, "\(secureCurl.stdout)")
        let secureNghttp = try await ChildProcess("/usr/bin/nghttp", ["-d", body.path, "https://localhost:\(secure.port)/3/device/abc"]).finish()
        #expect(secureNghttp.exitCode == 0 && secureNghttp.stdout.contains("alert"), "\(secureNghttp.stdout)")
        await secure.shutdown()
    }

    @Test("A client that does not offer h2 is refused by the server")
    func noALPN() async throws {
        let secure = try echoServer(HTTP2ServerConfiguration(tls: KeysExample.serverTLS))
        let curl = try await ChildProcess(
            "/usr/bin/curl", ["-sS", "--http1.1", "--cacert", KeysExample.path("ca.pem"), "https://localhost:\(secure.port)/"]
        ).finish()
        #expect(curl.exitCode != 0)
        await secure.shutdown()
    }

    @Test("Stream limit 1 -> 1000 -> 1 over a socket, changed while requests wait")
    func streamLimitDance() async throws {
        let server = try DeferredServer(HTTP2ServerConfiguration(settings: HTTP2Settings(maxConcurrentStreams: 1)))
        let connection = try await server.client()
        let serverConnection = try #require(await server.firstConnection())
        let results = Task { await connection.sendBatch(Array(repeating: post, count: 20)) }
        // Only one request may be open at a time while the limit is 1.
        for _ in 0..<3 {
            let (_, responder) = try #require(await server.next(1).first)
            #expect(serverConnection.requestCount <= 3)
            responder.respond(HTTP2Response(status: 200))
        }
        serverConnection.updateSettings(HTTP2Settings(maxConcurrentStreams: 1000))
        let burst = await server.next(17)
        #expect(burst.count == 17)
        serverConnection.updateSettings(HTTP2Settings(maxConcurrentStreams: 1))
        for (_, responder) in burst { responder.respond(HTTP2Response(status: 200)) }
        let all = await results.value
        #expect(all.count == 20 && all.allSatisfy { (try? $0.get().status) == 200 })
        await connection.close()
        await server.server.shutdown()
    }

    @Test("GOAWAY with streams on both sides of last-stream-id")
    func goAway() async throws {
        let server = try DeferredServer()
        let connection = try await server.client()
        let serverConnection = try #require(await server.firstConnection())
        let results = Task { await connection.sendBatch(Array(repeating: post, count: 10)) }
        let received = await server.next(10)
        serverConnection.goAway(lastStreamID: 9, errorCode: .noError, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
        for (request, responder) in received where request.streamID <= 9 { responder.respond(HTTP2Response(status: 200)) }
        let all = await results.value
        let succeeded = all.filter { (try? $0.get().status) == 200 }.count
        let refused = all.compactMap { result -> HTTP2ClientError? in
            if case .failure(let error) = result { return error }
            return nil
        }
        #expect(succeeded == 5)
        #expect(refused.count == 5 && refused.allSatisfy { $0.code == .goingAway && $0.isSafeToRetry && $0.detail.contains("Shutdown") })
        guard case .goingAway(9, _, _) = connection.state else {
            if case .closed = connection.state {} else { Issue.record("state \(connection.state)") }
            return
        }
        await server.server.shutdown()
    }

    @Test("RST_STREAM from the server; the connection goes on")
    func resets() async throws {
        let server = try DeferredServer()
        let connection = try await server.client()
        async let refused = outcome { try await connection.send(post) }
        let (_, responder) = try #require(await server.next(1).first)
        responder.reset(.refusedStream)
        guard case .failure(let error) = await refused else { Issue.record("succeeded"); return }
        #expect(error.code == .refusedStream && error.isSafeToRetry)
        async let next = connection.send(post)
        let (_, second) = try #require(await server.next(1).first)
        second.respond(HTTP2Response(status: 200))
        #expect(try await next.status == 200)
        await connection.close()
        await server.server.shutdown()
    }

    @Test("An abrupt close mid-stream fails the request as possibly processed")
    func abruptClose() async throws {
        let server = try DeferredServer()
        let connection = try await server.client()
        let serverConnection = try #require(await server.firstConnection())
        async let pending = outcome { try await connection.send(post) }
        _ = await server.next(1)
        serverConnection.closeAbruptly()
        guard case .failure(let error) = await pending else { Issue.record("succeeded"); return }
        #expect(error.code == .connectionClosed && error.mayHaveBeenProcessed)
        // Later requests fail at once, never hang.
        await #expect(throws: HTTP2ClientError.self) { try await connection.send(post) }
        await server.server.shutdown()
    }

    @Test("The owner hears of a close before any request on the connection fails (a pool must not offer it to a replay)")
    func closedEventFirst() async throws {
        let server = try DeferredServer()
        let events = LockedBox<[HTTP2ConnectionEvent]>([])
        let connection = try await server.client { event in events.withLock { $0.append(event) } }
        let serverConnection = try #require(await server.firstConnection())
        async let pending = outcome { try await connection.send(post) }
        _ = await server.next(1)
        serverConnection.closeAbruptly()
        guard case .failure = await pending else { Issue.record("succeeded"); return }
        // The I/O thread sent the event before it resumed this task with the failure: no wait is needed.
        #expect(events.withLock { $0.contains { if case .closed = $0 { true } else { false } } })
        await server.server.shutdown()
    }

    @Test("The owner hears of a GOAWAY before the requests it refuses fail")
    func goAwayEventFirst() async throws {
        let server = try DeferredServer()
        let events = LockedBox<[HTTP2ConnectionEvent]>([])
        let connection = try await server.client { event in events.withLock { $0.append(event) } }
        let serverConnection = try #require(await server.firstConnection())
        async let first = outcome { try await connection.send(post) }
        async let second = outcome { try await connection.send(post) }
        let requests = await server.next(2)
        // The lower stream is processed; the higher one is refused by the GOAWAY's last stream id.
        let sorted = requests.sorted { $0.0.streamID < $1.0.streamID }
        serverConnection.goAway(lastStreamID: sorted[0].0.streamID)
        sorted[0].1.respond(HTTP2Response(status: 200))
        let outcomes = await [first, second]
        let refused = outcomes.compactMap { if case .failure(let error) = $0 { error } else { nil } }
        #expect(refused.count == 1 && refused.allSatisfy { !$0.mayHaveBeenProcessed })
        #expect(events.withLock { $0.contains { if case .goAway = $0 { true } else { false } } })
        await connection.close()
        await server.server.shutdown()
    }

    @Test("A peer that never answers PING is declared dead; everything in flight fails")
    func unansweredPing() async throws {
        let server = try DeferredServer(HTTP2ServerConfiguration(answersPings: false))
        let connection = try await server.client(pingInterval: .milliseconds(50), pingTimeout: .milliseconds(100))
        // Whether the request reached the server before the PING timed out depends on scheduling; either
        // way it must fail with peerUnresponsive, as possibly processed only if it was sent.
        let result = await outcome { try await connection.send(post) }
        guard case .failure(let error) = result else { Issue.record("succeeded"); return }
        #expect(error.code == .peerUnresponsive)
        guard case .closed(let closedError) = connection.state else { Issue.record("still open"); return }
        #expect(closedError.code == .peerUnresponsive)
        // A request after the death fails at once as never processed.
        guard case .failure(let late) = await outcome({ try await connection.send(post) }) else { Issue.record("sent"); return }
        #expect(late.code == .peerUnresponsive && !late.mayHaveBeenProcessed)
        await server.server.shutdown()
    }

    @Test("A PING answered late, within the timeout, keeps the connection alive")
    func latePing() async throws {
        let server = try DeferredServer(HTTP2ServerConfiguration(answersPings: false))
        let connection = try await server.client(pingInterval: .milliseconds(20), pingTimeout: .seconds(30))
        let serverConnection = try #require(await server.firstConnection())
        // Wait (bounded) until the client's keep-alive PING has arrived, then answer it late.
        let start = ContinuousClock.now
        while serverConnection.unansweredPingCount == 0 && start.duration(to: .now) < .seconds(20) {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(serverConnection.unansweredPingCount > 0)
        serverConnection.answerPendingPings()
        async let response = connection.send(post)
        let (_, responder) = try #require(await server.next(1).first)
        responder.respond(HTTP2Response(status: 200))
        #expect(try await response.status == 200)
        guard case .active = connection.state else { Issue.record("closed: \(connection.state)"); return }
        await connection.close()
        await server.server.shutdown()
    }

    @Test("A server that stops reading backs up the client's writes; the deadline still fires; reading again recovers")
    func stopReading() async throws {
        let server = try HTTP2Server.start(HTTP2ServerConfiguration()) { request, _ in HTTP2Response(status: 200, body: Array("\(request.body.count)".utf8)) }
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: nil))
        var serverConnection: HTTP2ServerConnection?
        for await accepted in server.connections { serverConnection = accepted; break }
        let handle = try #require(serverConnection)
        #expect(try await connection.send(post).status == 200)
        handle.setReading(false)
        var big = post
        big.body = [UInt8](repeating: 0x61, count: 4 << 20)  // 4 MiB: far beyond windows and socket buffers
        let stalled = await outcome { try await connection.send(big, deadline: .now + .milliseconds(300)) }
        guard case .failure(let error) = stalled else { Issue.record("sent while the server was not reading"); return }
        #expect(error.code == .deadlineExceeded)
        handle.setReading(true)
        let response = try await connection.send(big, deadline: .now + .seconds(30))
        #expect(response.status == 200 && response.body == Array("\(4 << 20)".utf8))
        await connection.close()
        await server.shutdown()
    }

    @Test("Cancelling the calling task resets the stream; the connection goes on")
    func cancellation() async throws {
        let server = try DeferredServer()
        let connection = try await server.client()
        let task = Task { try await connection.send(post) }
        let (_, responder) = try #require(await server.next(1).first)
        task.cancel()
        let result = await task.result
        guard case .failure(let error as HTTP2ClientError) = result else { Issue.record("not cancelled: \(result)"); return }
        #expect(error.code == .cancelled)
        responder.respond(HTTP2Response(status: 200))  // too late: ignored
        async let next = connection.send(post)
        let (_, second) = try #require(await server.next(1).first)
        second.respond(HTTP2Response(status: 200))
        #expect(try await next.status == 200)
        await connection.close()
        await server.server.shutdown()
    }

    @Test("A deadline that passes resets the stream and fails the request; the connection goes on")
    func deadline() async throws {
        // /never is never answered; everything else is answered at once.
        let server = try HTTP2Server.start(HTTP2ServerConfiguration()) { request, _ in
            request.path == "/never" ? nil : HTTP2Response(status: 200)
        }
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: nil))
        var never = post
        never.path = "/never"
        let result = await outcome { try await connection.send(never, deadline: .now + .milliseconds(100)) }
        guard case .failure(let error) = result else { Issue.record("succeeded"); return }
        #expect(error.code == .deadlineExceeded)
        #expect(try await connection.send(post).status == 200)
        await connection.close()
        await server.shutdown()
    }

    @Test("close() fails in-flight and queued requests at once, as possibly processed and not processed")
    func immediateClose() async throws {
        let server = try DeferredServer(HTTP2ServerConfiguration(settings: HTTP2Settings(maxConcurrentStreams: 1)))
        let connection = try await server.client()
        let batch = Task { await connection.sendBatch([post, post]) }
        _ = await server.next(1)  // the first is open on the server; the second waits for a stream
        await connection.close()
        let results = await batch.value
        guard case .failure(let open) = results[0], case .failure(let queued) = results[1] else {
            Issue.record("expected two failures: \(results)")
            return
        }
        #expect(open.code == .shutdown && open.mayHaveBeenProcessed)
        #expect(queued.code == .shutdown && !queued.mayHaveBeenProcessed)
        await server.server.shutdown()
    }

    @Test("Tasks on the connection's executor send and receive; after close they still run and fail fast")
    func connectionExecutor() async throws {
        let server = try echoServer()
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: nil))
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<200 {
                group.addTask(executorPreference: connection.executor) { (try? await connection.send(post).status) ?? 0 }
            }
            var statuses: [Int] = []
            for await status in group { statuses.append(status) }
            return statuses
        }
        #expect(statuses.count == 200 && statuses.allSatisfy { $0 == 200 })
        let batch = await Task(executorPreference: connection.executor) { await connection.sendBatch(Array(repeating: post, count: 50)) }.value
        #expect(batch.allSatisfy { (try? $0.get().status) == 200 })
        await connection.close()
        let late = await Task(executorPreference: connection.executor) { await outcome { try await connection.send(post) } }.value
        guard case .failure(let error) = late else { Issue.record("sent after close"); return }
        #expect(error.code == .shutdown && !error.mayHaveBeenProcessed)
        await server.shutdown()
    }

    @Test("Graceful shutdown lets an open stream finish; requests after it fail as not processed")
    func gracefulShutdown() async throws {
        let server = try DeferredServer()
        let connection = try await server.client()
        async let pending = outcome { try await connection.send(post) }
        let (_, responder) = try #require(await server.next(1).first)
        async let closed: Void = connection.shutdown(gracePeriod: .seconds(30))
        responder.respond(HTTP2Response(status: 204))
        #expect((try? await pending.get().status) == 204)
        await closed
        do {
            _ = try await connection.send(post)
            Issue.record("sent after shutdown")
        } catch let error as HTTP2ClientError {
            #expect(!error.mayHaveBeenProcessed)
        }
        await server.server.shutdown()
    }
}
