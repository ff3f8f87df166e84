import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.shop"
private let good = String(repeating: "ab", count: 32)
private let redacted = "eyJhbGci…(a provider token, redacted)"

/// A client that put a provider token where other values belong (a topic, a collapse id, the device
/// token, a query parameter, a payload string): no output of apnsctl shows it.
@Suite("apnsctl shows no provider token: serve's lines, requests, record, inbox API and events; send, activity, doctor",
       .serialized, .timeLimit(.minutes(3)))
struct ProviderTokenRedactionCLITests {
    let token = try! ExampleProviderToken()
    let ca = KeysExample.path("ca.pem")

    /// The requests of a client that swapped values, on one connection to `port`, in order; the
    /// last is an accepted push with `apns-id` `marker`, after which every other was recorded.
    func sendSwapped(port: Int, marker: String) async throws {
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(
            host: "localhost", port: port, tls: HTTP2TLSConfiguration(trustRoots: .file(self.ca))
        ))
        let alert = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        let requests: [(path: String, headers: [(String, String)], body: [UInt8])] = [
            ("/3/device/\(good)", [("apns-topic", self.token.jwt)], alert),
            ("/3/device/\(good)", [("apns-topic", bundle), ("apns-collapse-id", self.token.jwt)], alert),
            ("/3/device/\(self.token.jwt)", [("apns-topic", bundle)], alert),
            ("/3/device/\(good)?auth=\(self.token.jwt)", [("apns-topic", bundle)], alert),
            ("/3/device/\(good)", [("apns-topic", bundle)], Array(#"{"aps":{"alert":"\#(self.token.jwt)"}}"#.utf8)),
            ("/3/device/\(good)", [("apns-topic", bundle), ("apns-id", marker)], alert),
        ]
        for request in requests {
            let headers = [HTTP2HeaderField("apns-push-type", "alert")] + request.headers.map { HTTP2HeaderField($0.0, $0.1) }
            _ = try await connection.send(HTTP2Request(authority: "localhost", path: request.path, headers: headers, body: request.body))
        }
        await connection.close()
    }

    /// `text` shows neither the token nor its signature, and does show `redacted` (something was redacted).
    func expectRedacted(_ text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!self.token.isShown(in: text), "\(what) shows the provider token:\n\(text)", sourceLocation: sourceLocation)
        #expect(text.contains(redacted), "\(what) redacted nothing:\n\(text)", sourceLocation: sourceLocation)
    }

    @Test("serve: default lines, --print-requests, --json --print-requests; the why names the swapped value", arguments: [
        [], ["--print-requests"], ["--json", "--print-requests"],
    ])
    func serveLines(_ flags: [String]) async throws {
        let server = try ServerProcess(["--topic", bundle] + flags)
        try await self.sendSwapped(port: server.port, marker: UUID().uuidString)
        let stopped = server.stop()
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
        // A line names a device push's token only when it is one (hex); --print-requests shows everything.
        if flags.isEmpty {
            #expect(!self.token.isShown(in: stopped.stdout), "\(stopped.stdout)")
        } else {
            self.expectRedacted(stopped.stdout, "stdout")
        }
        #expect(!self.token.isShown(in: stopped.stderr), "\(stopped.stderr)")
        for why in [
            "the apns-topic header holds a provider token: were the topic and the authorization swapped?",
            "the apns-collapse-id header holds a provider token: were the collapse id and the authorization swapped?",
            "the device token in the path holds a provider token: were the device token and the authorization swapped?",
        ] {
            #expect(stopped.stdout.contains(why), "\(why)\n\(stopped.stdout)")
        }
    }

    @Test("serve --record, and the inbox: GET /api/v1/pushes, a push, the phone, the event stream")
    func serveRecordAndInbox() async throws {
        let folder = try TemporaryFolder("redaction")
        defer { folder.remove() }
        let record = folder.url.appendingPathComponent("record.ndjson").path
        let server = try ServerProcess(["--ui-port", "0", "--quiet", "--record", record])
        #expect(server.child.waitForStandardOutput(lines: 2, timeout: .seconds(30)))
        let ui = try #require(server.child.standardOutputSoFar.split(separator: "\n").dropFirst().first?.dropFirst(3))
        // The stream is open before anything is sent: `: connected` is its first comment.
        let events = try ChildProcess(executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: ["-sN", "\(ui)/api/v1/events"])
        #expect(events.waitForStandardOutput(containing: ": connected", timeout: .seconds(30)))
        let marker = UUID().uuidString
        try await self.sendSwapped(port: server.port, marker: marker)
        // Events are written in the order judged: once the marker's is there, every other one is whole.
        #expect(events.waitForStandardOutput(containing: marker, timeout: .seconds(30)), "\(events.standardOutputSoFar)")
        self.expectRedacted(events.standardOutputSoFar, "the event stream")
        _ = events.kill()
        for path in ["/api/v1/pushes", "/api/v1/pushes/\(marker)", "/api/v1/devices/\(good)", "/api/v1/devices"] {
            let answer = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-fsS", "\(ui)\(path)"], timeout: .seconds(30))
            #expect(answer.exitCode == 0, "\(path): \(answer.stderr)")
            #expect(!self.token.isShown(in: answer.stdout), "\(path) shows the provider token:\n\(answer.stdout)")
            if path == "/api/v1/pushes" || path == "/api/v1/devices/\(good)" { self.expectRedacted(answer.stdout, path) }
        }
        let stopped = server.stop()
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
        self.expectRedacted(try String(contentsOfFile: record, encoding: .utf8), "--record")
        #expect(!self.token.isShown(in: stopped.stdout + stopped.stderr))
    }

    @Test("send, activity and doctor: errors, dry runs, verdicts and --verbose quote a provider token redacted")
    func clients() throws {
        let server = try ServerProcess(["--topic", bundle, "--quiet"])
        defer { server.stop() }
        let folder = try TemporaryFolder("redaction")
        defer { folder.remove() }
        let tokens = try folder.file("tokens.txt", contents: "\(good)\n\(self.token.jwt)\n")
        let endpoint = ["--url", "https://127.0.0.1:\(server.port)", "--ca-file", self.ca, "--key-file", KeysExample.path("AuthKey_FORGEKEY01.p8"),
                        "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
        let jwt = self.token.jwt
        // Whether the value is quoted (so redacted) whatever the signature: a topic is refused by the
        // client when the signature holds '_', else sent, refused by the server and not quoted.
        let runs: [(arguments: [String], quotes: Bool)] = [
            (["send", "--dry-run", "--topic", bundle, "--token", jwt, "--title", "hi"], true),
            (["send", "--dry-run", "--topic", bundle, "--token", good, "--title", jwt], true),
            (["send", "--dry-run", "--json", "--topic", bundle, "--token", good, "--title", jwt], true),
            (["send"] + endpoint + ["--topic", jwt, "--token", good, "--title", "hi", "--verbose"], false),
            (["send"] + endpoint + ["--topic", bundle, "--tokens-file", tokens, "--title", jwt, "--format", "human", "--verbose"], false),
            (["send"] + endpoint + ["--topic", bundle, "--tokens-file", tokens, "--title", "hi", "--json"], false),
            (["activity", "update", "--dry-run", "--json", "--topic", bundle, "--token", good, "--content-state", #"{"s":"\#(jwt)"}"#], true),
            (["activity", "update"] + endpoint + ["--topic", bundle, "--token", jwt, "--content-state", "{}", "--verbose"], true),
            (["doctor"] + endpoint + ["--topic", jwt], false),
        ]
        for run in runs {
            let result = try CommandRunner.run(run.arguments)
            let output = result.stdout + result.stderr
            let command = run.arguments.prefix(2).joined(separator: " ")
            #expect(!self.token.isShown(in: output), "\(command) shows the provider token:\n\(output)")
            if run.quotes { #expect(output.contains(redacted), "\(command): \(output)") }
        }
    }
}
