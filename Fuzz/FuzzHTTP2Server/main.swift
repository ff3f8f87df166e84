// HTTP2ServerCore and HTTP2ClientCore are internal to ForgeHTTP2, as for its tests: the debug build
// that `make fuzz` makes is testable.
@testable import ForgeHTTP2
import ForgeFuzzSupport

/// What a client sends an `apnsctl serve` connection after the 24-byte preface, fed to the h2c
/// server session in memory: no socket, no TLS.
enum HTTP2ServerFuzz {
    /// The connection preface's fixed part (RFC 9113 §3.4); the client's SETTINGS frame follows it.
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    /// The SETTINGS the local APNs server announces (LocalAPNSServer.apnsSettings).
    static let settings = HTTP2Settings(
        maxConcurrentStreams: 100, initialWindowSize: 65_535, maxFrameSize: 16_384, headerTableSize: 4_096, maxHeaderListSize: 8_000
    )

    static func test(_ bytes: [UInt8]) {
        let server: HTTP2ServerCore
        do { server = try HTTP2ServerCore(connectionID: 1, settings: Self.settings) } catch { fatalError("no server session: \(error)") }
        // Every complete request is answered at once, as the judge does, so responses go out too.
        server.onRequest = { [unowned server] request in
            let status = request.method == "POST" ? 200 : 405
            server.respond(
                to: request.streamID,
                with: HTTP2Response(status: status, headers: [HTTP2HeaderField("apns-id", "00000000-0000-0000-0000-000000000001")], body: [])
            )
        }
        var output: [UInt8] = []
        do {
            try server.drainOutput(into: &output, limit: .max)
            try (Self.preface + bytes).withUnsafeBytes { try server.receive($0) }
            // What the server says back, until it has nothing more (a peer that reads everything).
            for _ in 0..<1_000 {
                output.removeAll(keepingCapacity: true)
                try server.drainOutput(into: &output, limit: .max)
                if output.isEmpty { break }
            }
            _ = server.expireIncompleteRequests(now: .max, timeout: 0)
            try server.drainOutput(into: &output, limit: .max)
        } catch {
            // A protocol error ends the connection: what a server must do with bad input.
        }
    }

    /// Seeds: what ForgeHTTP2's own client sends after the preface, captured in memory while the
    /// server above answers it.
    static func makeSeeds(_ folder: SeedFolder) throws {
        let apnsHeaders = [
            HTTP2HeaderField("apns-topic", "com.example.app"), HTTP2HeaderField("apns-push-type", "alert"),
            HTTP2HeaderField("apns-priority", "10"), HTTP2HeaderField("apns-expiration", "0"),
            HTTP2HeaderField("apns-id", "123e4567-e89b-12d3-a456-426614174000"),
            HTTP2HeaderField("apns-collapse-id", "chat-42"),
            HTTP2HeaderField("authorization", "bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln", indexing: .neverIndexed),
        ]
        let token = "7c1d3f0e9a8b2c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4e2"
        let alert = Array(#"{"aps":{"alert":{"title":"Hello","body":"From ForgePush"},"sound":"default"}}"#.utf8)
        let cases: [(name: String, requests: [HTTP2Request])] = [
            ("settings-only", []),
            ("one-alert", [HTTP2Request(authority: "localhost", path: "/3/device/" + token, headers: apnsHeaders, body: alert)]),
            (
                "three-alerts",
                (0..<3).map { _ in HTTP2Request(authority: "localhost", path: "/3/device/" + token, headers: apnsHeaders, body: alert) }
            ),
            ("get-no-body", [HTTP2Request(method: "GET", authority: "localhost", path: "/3/device/" + token)]),
            (
                "large-body",
                [HTTP2Request(authority: "localhost", path: "/3/device/" + token, headers: apnsHeaders, body: Array(repeating: 0x61, count: 5_000))]
            ),
        ]
        for (name, requests) in cases {
            try folder.write(name, try Self.capture(requests))
        }
    }

    /// Every byte the client sends for `requests`, the preface's fixed part cut off.
    private static func capture(_ requests: [HTTP2Request]) throws -> [UInt8] {
        let client = try HTTP2ClientCore()
        let server = try HTTP2ServerCore(connectionID: 1, settings: Self.settings)
        server.onRequest = { [unowned server] request in
            server.respond(to: request.streamID, with: HTTP2Response(status: 200))
        }
        for (index, request) in requests.enumerated() {
            client.enqueue(HTTP2ClientCore.Pending(id: UInt64(index + 1), request: request, deadline: nil) { _ in })
        }
        var sent: [UInt8] = []
        for _ in 0..<100 {
            var toServer: [UInt8] = []
            try client.drainOutput(into: &toServer, limit: .max)
            if !toServer.isEmpty { try toServer.withUnsafeBytes { try server.receive($0) } }
            sent += toServer
            var toClient: [UInt8] = []
            try server.drainOutput(into: &toClient, limit: .max)
            if !toClient.isEmpty { try toClient.withUnsafeBytes { try client.receive($0) } }
            if toServer.isEmpty && toClient.isEmpty { break }
        }
        precondition(sent.starts(with: Self.preface), "the client's output does not start with the preface")
        return Array(sent.dropFirst(Self.preface.count))
    }
}

@main
enum FuzzHTTP2Server {
    static func main() { FuzzDriver.main(HTTP2ServerFuzz.test, makeSeeds: HTTP2ServerFuzz.makeSeeds) }
}
