@testable import ForgeHTTP2
import ForgeLoopback
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A client that writes HTTP/2 frames by hand, to do what a well-behaved client never does.
private struct RawFrames {
    struct Frame {
        var type: UInt8
        var flags: UInt8
        var streamID: UInt32
        var payload: [UInt8]
    }

    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32, payload: [UInt8] = []) -> [UInt8] {
        let length = UInt32(payload.count)
        var bytes: [UInt8] = [UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        bytes += [type, flags]
        bytes += [UInt8(truncatingIfNeeded: stream >> 24) & 0x7F, UInt8(truncatingIfNeeded: stream >> 16)]
        bytes += [UInt8(truncatingIfNeeded: stream >> 8), UInt8(truncatingIfNeeded: stream)]
        return bytes + payload
    }

    /// HPACK literals without indexing, new names (lengths under 127).
    static func headers(_ fields: [(String, String)]) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in fields {
            block.append(0x00)
            block.append(UInt8(name.utf8.count))
            block.append(contentsOf: name.utf8)
            block.append(UInt8(value.utf8.count))
            block.append(contentsOf: value.utf8)
        }
        return block
    }

    /// Reads frames until `done` says so or the deadline passes.
    static func read(_ socket: Socket, until done: ([Frame]) -> Bool) throws -> [Frame] {
        var buffer: [UInt8] = []
        var frames: [Frame] = []
        let deadline = ContinuousClock.now + .seconds(10)
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while !done(frames), ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 100)
            guard let count = try chunk.withUnsafeMutableBytes({ try socket.receive(into: $0) }) else { continue }
            if count == 0 { break }
            buffer += chunk[0..<count]
            while buffer.count >= 9 {
                let length = buffer[0..<3].reduce(0) { $0 << 8 | Int($1) }
                guard buffer.count >= 9 + length else { break }
                let stream = buffer[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
                frames.append(Frame(type: buffer[3], flags: buffer[4], streamID: stream, payload: Array(buffer[9..<(9 + length)])))
                buffer.removeFirst(9 + length)
            }
        }
        return frames
    }
}

@Suite("Local APNs server: frames a client must not send (C4, C5)", .timeLimit(.minutes(1)))
struct RawFramesTests {
    @Test("C2, C4, C5: SETTINGS as APNs sends them; streams over the limit are refused; PRIORITY is ignored and PING answered")
    func streamLimit() async throws {
        let server = try LocalAPNsServer.start()
        let socket = try Socket.connect(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        func request(_ stream: UInt32) -> [UInt8] {
            // HEADERS without END_STREAM: the stream stays open, as a push whose body is still coming.
            RawFrames.frame(type: 0x1, flags: 0x4, stream: stream, payload: RawFrames.headers([
                (":method", "POST"), (":scheme", "http"), (":authority", "localhost"),
                (":path", "/3/device/" + String(repeating: "ab", count: 32)), ("apns-topic", "com.example.forgepush"),
            ]))
        }
        // The client does not wait for (or acknowledge) the server's SETTINGS before opening three streams.
        var bytes = RawFrames.preface + RawFrames.frame(type: 0x4, stream: 0)
        bytes += request(1)
        bytes += RawFrames.frame(type: 0x2, stream: 1, payload: [0, 0, 0, 0, 16])  // PRIORITY
        bytes += request(3) + request(5)
        bytes += RawFrames.frame(type: 0x6, stream: 0, payload: Array("forgeping".utf8.prefix(8)))  // PING
        let sent = try bytes.withUnsafeBytes { try socket.send($0) }
        #expect(sent == bytes.count)
        let frames = try RawFrames.read(socket) { frames in
            frames.filter { $0.type == 0x3 }.count >= 2 && frames.contains { $0.type == 0x6 && $0.flags & 0x1 != 0 }
        }
        let settings = try #require(frames.first { $0.type == 0x4 && $0.flags & 0x1 == 0 })
        var announced: [UInt16: UInt32] = [:]
        for offset in stride(from: 0, to: settings.payload.count, by: 6) {
            let p = settings.payload
            let id = UInt16(p[offset]) << 8 | UInt16(p[offset + 1])
            var value: UInt32 = 0
            for byte in p[(offset + 2)..<(offset + 6)] { value = value << 8 | UInt32(byte) }
            announced[id] = value
        }
        // HEADER_TABLE_SIZE 1 (4096 is the default, so it may be left out), MAX_CONCURRENT_STREAMS 3,
        // INITIAL_WINDOW_SIZE 4, MAX_FRAME_SIZE 5, MAX_HEADER_LIST_SIZE 6.
        #expect(announced[3] == 1 && announced[6] == 8000)
        #expect((announced[1] ?? 4096) == 4096 && (announced[4] ?? 65_535) == 65_535 && (announced[5] ?? 16_384) == 16_384)
        let resets = frames.filter { $0.type == 0x3 }
        #expect(resets.map(\.streamID).sorted() == [3, 5])
        #expect(resets.allSatisfy { $0.payload == [0, 0, 0, 7] })  // REFUSED_STREAM
        #expect(frames.contains { $0.type == 0x6 && $0.flags & 0x1 != 0 && $0.payload == Array("forgeping".utf8.prefix(8)) })
        #expect(!frames.contains { $0.type == 0x7 })  // no GOAWAY: PRIORITY was ignored, the refusals were per stream
        socket.abort()
        await server.shutdown()
    }
}
