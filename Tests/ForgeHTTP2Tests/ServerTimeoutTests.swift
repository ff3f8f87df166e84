@testable import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension RawHTTP2Client {
    /// HEADERS of a POST; END_STREAM only when `complete`.
    static func request(stream: UInt32, complete: Bool) -> [UInt8] {
        let block = headers([(":method", "POST"), (":scheme", "http"), (":authority", "localhost"), (":path", "/3/device/ab")])
        return frame(type: 0x1, flags: complete ? 0x5 : 0x4, stream: stream, payload: block)
    }
}

private func answeringServer(_ configuration: HTTP2ServerConfiguration) throws -> HTTP2Server {
    try HTTP2Server.start(configuration) { _, _ in HTTP2Response(status: 200) }
}

@Suite("Server timeouts: stalled requests and silent connections", .timeLimit(.minutes(1)))
struct ServerTimeoutTests {
    @Test("Defaults: 10 s for the handshake and preface, 10 s for a request to arrive")
    func defaults() {
        let configuration = HTTP2ServerConfiguration()
        #expect(configuration.handshakeTimeout == .seconds(10))
        #expect(configuration.requestTimeout == .seconds(10))
    }

    @Test("A request whose body never arrives is reset with REFUSED_STREAM; the connection goes on")
    func stalledRequest() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(requestTimeout: .milliseconds(200)))
        let client = try RawHTTP2Client(port: server.port)
        try client.send(RawHTTP2Client.preface + RawHTTP2Client.frame(type: 0x4, stream: 0) + RawHTTP2Client.request(stream: 1, complete: false))
        let stalled = client.read { frames in frames.contains { $0.type == 0x3 } }
        let reset = try #require(stalled.frames.first { $0.type == 0x3 }, "no RST_STREAM; closed: \(stalled.closed)")
        #expect(reset.streamID == 1)
        #expect(reset.payload == [0, 0, 0, 7])  // REFUSED_STREAM: the handler never saw it
        #expect(!stalled.closed)

        // The same connection still serves a complete request.
        try client.send(RawHTTP2Client.request(stream: 3, complete: true))
        let answered = client.read { frames in frames.contains { $0.type == 0x1 && $0.streamID == 3 } }
        #expect(answered.frames.contains { $0.type == 0x1 && $0.streamID == 3 })
        client.abort()
        await server.shutdown()
    }

    @Test("Without a request timeout, nothing resets a stalled request before the client goes")
    func requestTimeoutOff() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(requestTimeout: nil))
        let client = try RawHTTP2Client(port: server.port)
        // A PING after the stalled request: its answer proves the server read everything before it.
        try client.send(RawHTTP2Client.preface + RawHTTP2Client.frame(type: 0x4, stream: 0) + RawHTTP2Client.request(stream: 1, complete: false)
            + RawHTTP2Client.frame(type: 0x6, stream: 0, payload: Array(repeating: 7, count: 8)))
        let read = client.read { frames in frames.contains { $0.type == 0x6 && $0.flags & 0x1 != 0 } }
        #expect(!read.frames.contains { $0.type == 0x3 })
        client.abort()
        await server.shutdown()
    }

    @Test("A connection that never sends the client preface is closed (h2c)")
    func silentConnection() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(handshakeTimeout: .milliseconds(200)))
        let client = try RawHTTP2Client(port: server.port)
        let read = client.read { _ in false }
        #expect(read.closed)
        // The server's SETTINGS, then GOAWAY SETTINGS_TIMEOUT, may precede the close.
        if let goAway = read.frames.first(where: { $0.type == 0x7 }) { #expect(goAway.payload[4..<8] == [0, 0, 0, 4]) }
        await server.shutdown()
    }

    @Test("A connection that sends half a preface is closed (h2c)")
    func halfPreface() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(handshakeTimeout: .milliseconds(200)))
        let client = try RawHTTP2Client(port: server.port)
        try client.send(Array(RawHTTP2Client.preface.prefix(10)))
        #expect(client.read { _ in false }.closed)
        await server.shutdown()
    }

    @Test("A TLS handshake that never completes is closed")
    func silentTLS() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(tls: KeysExample.serverTLS, handshakeTimeout: .milliseconds(200)))
        let client = try RawHTTP2Client(port: server.port)
        #expect(client.read { _ in false }.closed)
        await server.shutdown()
    }

    @Test("A TLS connection that completes the handshake but sends no preface is closed")
    func tlsWithoutPreface() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(tls: KeysExample.serverTLS, handshakeTimeout: .seconds(1)))
        let socket = try Socket.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        let tls = try TLSConnection(client: try TLSContext.client(KeysExample.clientTLS), host: "127.0.0.1", verifyPeer: true)
        let channel = Channel(socket: socket, tls: tls)
        try channel.handshake(deadline: monotonicNanoseconds() + 10_000_000_000)
        var closed = false
        let deadline = ContinuousClock.now + .seconds(10)
        var plaintext: [UInt8] = []
        while !closed, ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 100)
            do {
                closed = try !channel.read(into: &plaintext)
            } catch {
                closed = true
            }
        }
        #expect(closed)
        await server.shutdown()
    }
}
