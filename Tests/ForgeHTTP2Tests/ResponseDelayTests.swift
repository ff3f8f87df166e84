@testable import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing

private let post = HTTP2Request(scheme: "http", authority: "127.0.0.1", path: "/3/device/abc", body: Array(#"{"aps":{}}"#.utf8))

@Suite("Held responses: the queue, without I/O")
struct HeldResponsesTests {
    private func response(_ tag: Int) -> HTTP2Response { HTTP2Response(status: 200, body: [UInt8(truncatingIfNeeded: tag)]) }

    @Test("The FIFO gives responses back in order, only once due, across wrap-arounds and growth")
    func fifo() {
        var held = HeldResponses()
        #expect(held.isEmpty && held.nextDue == nil && held.popDue(now: .max) == nil)
        var next = 0, expected = 0
        // Appends and pops interleaved so the ring wraps, then a burst that makes it grow while wrapped.
        for round in 0..<40 {
            let appends = round == 30 ? 100 : 3
            for _ in 0..<appends {
                held.append(due: UInt64(1_000 + next), streamID: Int32(2 * next + 1), response: self.response(next))
                next += 1
            }
            #expect(held.nextDue == UInt64(1_000 + expected))
            #expect(held.popDue(now: UInt64(1_000 + expected) - 1) == nil)  // not due yet
            let pops = round == 39 ? held.count : 2
            for _ in 0..<pops {
                let entry = held.popDue(now: .max)
                #expect(entry?.streamID == Int32(2 * expected + 1) && entry?.response == self.response(expected))
                expected += 1
            }
        }
        #expect(held.isEmpty && expected == next)
    }

    @Test("A due time smaller than the one before is raised to it: the FIFO never reorders")
    func monotonic() {
        var held = HeldResponses()
        held.append(due: 500, streamID: 1, response: self.response(1))
        held.append(due: 400, streamID: 3, response: self.response(3))
        #expect(held.popDue(now: 450)?.streamID == nil)
        #expect(held.popDue(now: 500)?.streamID == 1)
        #expect(held.popDue(now: 500)?.streamID == 3)
    }

    @Test("Responses with delays of their own come out by due time, between the FIFO's")
    func scheduled() {
        var held = HeldResponses()
        held.append(due: 100, streamID: 1, response: self.response(1))
        held.append(due: 300, streamID: 3, response: self.response(3))
        held.schedule(due: 400, streamID: 5, response: self.response(5))
        held.schedule(due: 50, streamID: 7, response: self.response(7))
        held.schedule(due: 200, streamID: 9, response: self.response(9))
        held.schedule(due: 200, streamID: 11, response: self.response(11))  // same due: arrival order
        #expect(held.nextDue == 50 && held.count == 6)
        var order: [Int32] = []
        while let entry = held.popDue(now: 1_000) { order.append(entry.streamID) }
        #expect(order == [7, 1, 9, 11, 3, 5])
        #expect(held.isEmpty && held.nextDue == nil)
    }
}

@Suite("Server response delay: the round trip, on loopback", .timeLimit(.minutes(1)))
struct ResponseDelayTests {
    @Test("The default sends responses at once")
    func defaultIsZero() {
        #expect(HTTP2ServerConfiguration().responseDelay == .zero)
    }

    @Test("50 requests at once: each answered no sooner than the delay, all together (not one after another)")
    func concurrentStreams() async throws {
        let delay = Duration.milliseconds(300)
        let server = try HTTP2Server.start(HTTP2ServerConfiguration(responseDelay: delay)) { request, _ in
            HTTP2Response(status: 200, body: Array(request.path.utf8))
        }
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: nil))
        let start = ContinuousClock.now
        let elapsed = try await withThrowingTaskGroup(of: Duration.self) { group in
            for index in 0..<50 {
                group.addTask {
                    var request = post
                    request.path = "/3/device/\(index)"
                    let sent = ContinuousClock.now
                    let response = try await connection.send(request)
                    #expect(response.status == 200 && response.body == Array(request.path.utf8))
                    return sent.duration(to: .now)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let total = start.duration(to: .now)
        #expect(elapsed.count == 50)
        // A lower bound per response, which holds however slow the machine: nothing comes early.
        #expect(elapsed.allSatisfy { $0 >= delay }, "\(elapsed.filter { $0 < delay })")
        // One after another would take 50 × 300 ms = 15 s; held side by side they take about 300 ms.
        #expect(total < .seconds(10), "\(total)")
        await connection.close()
        await server.shutdown()
    }

    @Test("A PING is answered at once while a response is held")
    func pingNotHeld() async throws {
        // Long enough that even a badly starved server thread acknowledges the PING before the response is due.
        let delay = Duration.seconds(1)
        let server = try HTTP2Server.start(HTTP2ServerConfiguration(responseDelay: delay)) { _, _ in HTTP2Response(status: 200) }
        let client = try RawHTTP2Client(port: server.port)
        let sent = ContinuousClock.now
        try client.send(RawHTTP2Client.preface + RawHTTP2Client.frame(type: 0x4, stream: 0) + RawHTTP2Client.request(stream: 1, complete: true)
            + RawHTTP2Client.frame(type: 0x6, stream: 0, payload: Array(repeating: 7, count: 8)))
        let pinged = client.read { frames in frames.contains { $0.type == 0x6 && $0.flags & 0x1 != 0 } }
        #expect(pinged.frames.contains { $0.type == 0x6 && $0.flags & 0x1 != 0 }, "no PING ACK; closed: \(pinged.closed)")
        // The response cannot have come yet: it is held for a second after the request arrived.
        #expect(!pinged.frames.contains { $0.type == 0x1 && $0.streamID == 1 })
        let answered = client.read { frames in frames.contains { $0.type == 0x1 && $0.streamID == 1 } }
        #expect(answered.frames.contains { $0.type == 0x1 && $0.streamID == 1 }, "no response; closed: \(answered.closed)")
        #expect(sent.duration(to: .now) >= delay)
        client.abort()
        await server.shutdown()
    }

    @Test("A stream the client resets while its response is held is skipped; the connection goes on")
    func resetWhileHeld() async throws {
        let server = try HTTP2Server.start(HTTP2ServerConfiguration(responseDelay: .milliseconds(300))) { _, _ in HTTP2Response(status: 200) }
        let client = try RawHTTP2Client(port: server.port)
        let cancel = RawHTTP2Client.frame(type: 0x3, stream: 1, payload: [0, 0, 0, 8])  // RST_STREAM CANCEL
        try client.send(RawHTTP2Client.preface + RawHTTP2Client.frame(type: 0x4, stream: 0) + RawHTTP2Client.request(stream: 1, complete: true)
            + cancel + RawHTTP2Client.request(stream: 3, complete: true))
        let read = client.read { frames in frames.contains { $0.type == 0x1 && $0.streamID == 3 } }
        #expect(read.frames.contains { $0.type == 0x1 && $0.streamID == 3 }, "no response on stream 3; closed: \(read.closed)")
        #expect(!read.frames.contains { $0.streamID == 1 }, "stream 1 was answered or reset after its cancel")
        #expect(!read.frames.contains { $0.type == 0x7 } && !read.closed)
        client.abort()
        await server.shutdown()
    }

    @Test("respond(_:after:) holds one response for its own delay on top of the server's; others pass it")
    func respondAfter() async throws {
        let server = try DeferredServer(HTTP2ServerConfiguration(responseDelay: .milliseconds(200)))
        let connection = try await server.client()
        try await withThrowingTaskGroup(of: (Int, Duration).self) { group in
            for index in 0..<2 {
                group.addTask {
                    var request = post
                    request.path = "/\(index)"
                    let sent = ContinuousClock.now
                    let status = try await connection.send(request).status
                    #expect(status == 200)
                    return (index, sent.duration(to: .now))
                }
            }
            let received = await server.next(2)
            let posted = ContinuousClock.now
            for (request, responder) in received {
                if request.path == "/0" {
                    responder.respond(HTTP2Response(status: 200), after: .milliseconds(600))
                } else {
                    responder.respond(HTTP2Response(status: 200), after: .zero)
                }
            }
            // Completion order: /1 (200 ms) before /0 (800 ms).
            let first = try #require(try await group.next())
            let second = try #require(try await group.next())
            #expect(first.0 == 1 && second.0 == 0)
            #expect(first.1 >= .milliseconds(200))
            #expect(posted.duration(to: .now) >= .milliseconds(800))
        }
        await connection.close()
        await server.server.shutdown()
    }
}
