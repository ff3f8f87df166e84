@testable import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A client on a raw socket, to stall where a real client never would. Each read waits at most
/// `bound` in all, so a server that never acts fails the test instead of hanging it.
private struct StallingClient {
    struct Frame {
        var type: UInt8
        var flags: UInt8
        var streamID: UInt32
        var payload: [UInt8]
    }

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    static let bound = Duration.seconds(10)

    let socket: Socket

    init(port: Int) throws {
        self.socket = try Socket.connect(host: "127.0.0.1", port: port, timeout: .seconds(5))
    }

    static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32, payload: [UInt8] = []) -> [UInt8] {
        let length = UInt32(payload.count)
        var bytes: [UInt8] = [UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        bytes += [type, flags]
        bytes += [UInt8(truncatingIfNeeded: stream >> 24) & 0x7F, UInt8(truncatingIfNeeded: stream >> 16)]
        bytes += [UInt8(truncatingIfNeeded: stream >> 8), UInt8(truncatingIfNeeded: stream)]
        return bytes + payload
    }

    /// HEADERS of a POST (HPACK literals, new names); END_STREAM only when `complete`.
    static func request(stream: UInt32, complete: Bool) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in [(":method", "POST"), (":scheme", "http"), (":authority", "localhost"), (":path", "/3/device/ab")] {
            block += [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
        }
        return frame(type: 0x1, flags: complete ? 0x5 : 0x4, stream: stream, payload: block)
    }

    func send(_ bytes: [UInt8]) throws {
        let sent = try bytes.withUnsafeBytes { try self.socket.send($0) }
        #expect(sent == bytes.count)
    }

    /// Reads frames until `done` holds, the server closes the connection, or the bound passes.
    /// - Returns: the frames, and whether the server closed the connection.
    func read(until done: ([Frame]) -> Bool) throws -> (frames: [Frame], closed: Bool) {
        var buffer: [UInt8] = []
        var frames: [Frame] = []
        let deadline = ContinuousClock.now + Self.bound
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while !done(frames), ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: self.socket.descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 100)
            let count: Int?
            do {
                count = try chunk.withUnsafeMutableBytes { try self.socket.receive(into: $0) }
            } catch {
                return (frames, true)  // ECONNRESET: closed too
            }
            guard let count else { continue }
            if count == 0 { return (frames, true) }
            buffer += chunk[0..<count]
            while buffer.count >= 9 {
                let length = buffer[0..<3].reduce(0) { $0 << 8 | Int($1) }
                guard buffer.count >= 9 + length else { break }
                let stream = buffer[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
                frames.append(Frame(type: buffer[3], flags: buffer[4], streamID: stream, payload: Array(buffer[9..<(9 + length)])))
                buffer.removeFirst(9 + length)
            }
        }
        return (frames, false)
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
        let client = try StallingClient(port: server.port)
        try client.send(StallingClient.preface + StallingClient.frame(type: 0x4, stream: 0) + StallingClient.request(stream: 1, complete: false))
        let stalled = try client.read { frames in frames.contains { $0.type == 0x3 } }
        let reset = try #require(stalled.frames.first { $0.type == 0x3 }, "no RST_STREAM; closed: \(stalled.closed)")
        #expect(reset.streamID == 1)
        #expect(reset.payload == [0, 0, 0, 7])  // REFUSED_STREAM: the handler never saw it
        #expect(!stalled.closed)

        // The same connection still serves a complete request.
        try client.send(StallingClient.request(stream: 3, complete: true))
        let answered = try client.read { frames in frames.contains { $0.type == 0x1 && $0.streamID == 3 } }
        #expect(answered.frames.contains { $0.type == 0x1 && $0.streamID == 3 })
        client.socket.abort()
        await server.shutdown()
    }

    @Test("Without a request timeout, nothing resets a stalled request before the client goes")
    func requestTimeoutOff() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(requestTimeout: nil))
        let client = try StallingClient(port: server.port)
        // A PING after the stalled request: its answer proves the server read everything before it.
        try client.send(StallingClient.preface + StallingClient.frame(type: 0x4, stream: 0) + StallingClient.request(stream: 1, complete: false)
            + StallingClient.frame(type: 0x6, stream: 0, payload: Array(repeating: 7, count: 8)))
        let read = try client.read { frames in frames.contains { $0.type == 0x6 && $0.flags & 0x1 != 0 } }
        #expect(!read.frames.contains { $0.type == 0x3 })
        client.socket.abort()
        await server.shutdown()
    }

    @Test("A connection that never sends the client preface is closed (h2c)")
    func silentConnection() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(handshakeTimeout: .milliseconds(200)))
        let client = try StallingClient(port: server.port)
        let read = try client.read { _ in false }
        #expect(read.closed)
        // The server's SETTINGS, then GOAWAY SETTINGS_TIMEOUT, may precede the close.
        if let goAway = read.frames.first(where: { $0.type == 0x7 }) { #expect(goAway.payload[4..<8] == [0, 0, 0, 4]) }
        await server.shutdown()
    }

    @Test("A connection that sends half a preface is closed (h2c)")
    func halfPreface() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(handshakeTimeout: .milliseconds(200)))
        let client = try StallingClient(port: server.port)
        try client.send(Array(StallingClient.preface.prefix(10)))
        #expect(try client.read { _ in false }.closed)
        await server.shutdown()
    }

    @Test("A TLS handshake that never completes is closed")
    func silentTLS() async throws {
        let server = try answeringServer(HTTP2ServerConfiguration(tls: KeysExample.serverTLS, handshakeTimeout: .milliseconds(200)))
        let client = try StallingClient(port: server.port)
        #expect(try client.read { _ in false }.closed)
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
