import ForgeHTTP2
import ForgeSupport
import ForgeTestSupport
import Foundation
import Testing

@Suite("apnsctl serve --latency: answers held as from a server that far away", .timeLimit(.minutes(2)))
struct ServeLatencyTests {
    @Test("Durations with a unit: us, ms, s, a bare 0", arguments: [
        ("30ms", Duration.milliseconds(30)), ("0.03s", .milliseconds(30)), ("1s", .seconds(1)), ("250us", .microseconds(250)),
        ("250µs", .microseconds(250)), ("0", .zero), ("0ms", .zero), ("1.5ms", .microseconds(1500)), (".5s", .milliseconds(500)),
        ("3600s", .seconds(3600)),
    ])
    func parses(text: String, duration: Duration) throws {
        #expect(try CommandLineDuration.parse(text) == duration)
        #expect(try CommandLineDuration.parse(CommandLineDuration.text(duration)) == duration)
    }

    @Test("Anything else is refused with the rule", arguments: [
        "", "30", "ms", "30 ms", "30MS", "-30ms", "+30ms", "1e3ms", "1.2.3s", "infs", "nans", "30m", "1h", "3601s", "30ms ", "0x10ms",
    ])
    func refuses(text: String) {
        #expect(throws: CommandLineDuration.Error.self) { try CommandLineDuration.parse(text) }
    }

    @Test("A bad --latency is a usage error (64) naming the flag and the rule; --help documents it")
    func usage() throws {
        let bad = try CommandRunner.run(["serve", "--h2c", "--port", "0", "--latency", "nonsense"])
        #expect(bad.exitCode == 64, "\(bad.stderr)")
        #expect(bad.stderr.contains("--latency") && bad.stderr.contains(CommandLineDuration.rule), "\(bad.stderr)")
        let help = try CommandRunner.run(["serve", "--help"])
        #expect(help.exitCode == 0 && help.stdout.contains("--latency <duration>"), "\(help.stdout)")
    }

    @Test("serve --latency 300ms: each answer takes at least that long; the server still stops on SIGTERM")
    func held() async throws {
        let server = try ServerProcess(["--h2c", "--quiet", "--latency", "300ms"])
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: nil))
        let request = HTTP2Request(
            scheme: "http", authority: "localhost", path: "/3/device/" + String(repeating: "ab", count: 32),
            headers: [HTTP2HeaderField("apns-topic", "com.example.forgepush"), HTTP2HeaderField("apns-push-type", "alert")],
            body: Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        )
        for _ in 0..<2 {
            let sent = ContinuousClock.now
            #expect(try await connection.send(request).status == 200)
            #expect(sent.duration(to: .now) >= .milliseconds(300))
        }
        await connection.close()
        let stopped = server.stop()
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
        #expect(stopped.stderr.contains("answers held 300ms"), "\(stopped.stderr)")
    }
}
