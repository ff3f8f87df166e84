@testable import ForgeHTTP2
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Local APNs server: frames a client must not send (C4, C5)", .timeLimit(.minutes(1)))
struct RawFramesTests {
    @Test("C2, C4, C5: SETTINGS as APNs sends them; streams over the limit are refused; PRIORITY is ignored and PING answered")
    func streamLimit() async throws {
        let server = try LocalAPNSServer.start()
        let client = try RawHTTP2Client(port: server.port)
        func request(_ stream: UInt32) -> [UInt8] {
            // HEADERS without END_STREAM: the stream stays open, as a push whose body is still coming.
            RawHTTP2Client.frame(type: 0x1, flags: 0x4, stream: stream, payload: RawHTTP2Client.headers([
                (":method", "POST"), (":scheme", "http"), (":authority", "localhost"),
                (":path", "/3/device/" + String(repeating: "ab", count: 32)), ("apns-topic", "com.example.forgepush"),
            ]))
        }
        // The client does not wait for (or acknowledge) the server's SETTINGS before opening three streams.
        var bytes = RawHTTP2Client.preface + RawHTTP2Client.frame(type: 0x4, stream: 0)
        bytes += request(1)
        bytes += RawHTTP2Client.frame(type: 0x2, stream: 1, payload: [0, 0, 0, 0, 16])  // PRIORITY
        bytes += request(3) + request(5)
        bytes += RawHTTP2Client.frame(type: 0x6, stream: 0, payload: Array("forgeping".utf8.prefix(8)))  // PING
        try client.send(bytes)
        let frames = client.read { frames in
            frames.filter { $0.type == 0x3 }.count >= 2 && frames.contains { $0.type == 0x6 && $0.flags & 0x1 != 0 }
        }.frames
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
        client.abort()
        await server.shutdown()
    }
}
