import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ca = KeysExample.path("ca.pem")
private let alertPayload = KeysExample.path("payloads/alert.json")
private let good = String(repeating: "ab", count: 32)
private let unknown = String(repeating: "cd", count: 32)
private let gone = String(repeating: "0f", count: 32)

/// One sample of Prometheus text: `name{label="value",…} number`.
struct PrometheusSample: Equatable {
    var name: String
    var labels: [String: String]
    var value: Double

    /// Every sample line of `text` (comments skipped); a line that is not `name{labels} value` fails the test.
    static func parse(_ text: String) -> [PrometheusSample] {
        text.split(separator: "\n").compactMap { line -> PrometheusSample? in
            if line.hasPrefix("#") { return nil }
            let nameEnd = line.firstIndex { $0 == "{" || $0 == " " } ?? line.endIndex
            let name = String(line[..<nameEnd])
            var labels: [String: String] = [:]
            var rest = line[nameEnd...]
            if rest.hasPrefix("{") {
                guard let close = rest.firstIndex(of: "}") else {
                    Issue.record("no closing brace: \(line)")
                    return nil
                }
                for pair in rest[rest.index(after: rest.startIndex)..<close].split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2, parts[1].hasPrefix("\""), parts[1].hasSuffix("\"") else {
                        Issue.record("bad label \(pair) in: \(line)")
                        return nil
                    }
                    labels[String(parts[0])] = String(parts[1].dropFirst().dropLast())
                }
                rest = rest[rest.index(after: close)...]
            }
            guard rest.hasPrefix(" "), let value = Double(rest.dropFirst()), !name.isEmpty else {
                Issue.record("not `name{labels} value`: \(line)")
                return nil
            }
            return PrometheusSample(name: name, labels: labels, value: value)
        }
    }
}

@Suite("apnsctl serve --metrics-port: the local server's Prometheus text, read by curl", .serialized, .timeLimit(.minutes(2)))
struct ServeMetricsTests {
    /// `curl -s -w '\n%{http_code}' URL`: the body and the status.
    func curl(_ url: String) throws -> (status: Int, body: String) {
        let result = try runTool(["curl", "-s", "--max-time", "10", "-w", "\n%{http_code}", url])
        #expect(result.status == 0, "\(result.output)")
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    @Test("Counters by status, reason and push type equal what apnsctl send sent; the latency histogram counts every request")
    func countsWhatWasSent() throws {
        let server = try ServerProcess([
            "--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1", "--topic", bundle, "--token", good, "--unregistered", gone,
            "--reject-unknown-tokens", "--quiet", "--metrics-port", "0",
        ])
        #expect(server.child.waitForStandardOutput(lines: 2, timeout: .seconds(10)))
        let printed = server.child.standardOutputSoFar.split(separator: "\n")
        #expect(printed.count >= 2, "the metrics port is the second line: \(printed)")
        let metricsPort = try #require(Int(printed.count >= 2 ? printed[1] : ""), "\(printed)")
        let metrics = "http://127.0.0.1:\(metricsPort)/metrics"

        let before = PrometheusSample.parse(try self.curl(metrics).body)
        #expect(!before.contains { $0.name == "apns_local_requests_total" }, "nothing judged yet: \(before)")

        let sent = try CommandRunner.run([
            "send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca, "--key-file", keyFile, "--key-id", "FORGEKEY01",
            "--team-id", "FORGETEAM1", "--topic", bundle, "--payload", alertPayload,
            "--token", good, "--token", unknown, "--token", good, "--token", gone, "--token", unknown, "--token", good,
        ])
        #expect(sent.exitCode == 1, "some pushes are rejected: \(sent.stdout) \(sent.stderr)")

        let answer = try self.curl(metrics)
        // The phones take accepted pushes after they are answered, in batches read from the inbox:
        // scraped until their counter has all three, for at most 30 s (a loaded machine's pause).
        var delivered: [PrometheusSample] = []
        let deadline = ContinuousClock.now + .seconds(30)
        while delivered.map(\.value).reduce(0, +) < 3, ContinuousClock.now < deadline {
            delivered = PrometheusSample.parse(try self.curl(metrics).body).filter { $0.name == "apns_local_deliveries_total" }
        }
        #expect(delivered.filter { $0.labels["state"] == "delivered" }.map(\.value).reduce(0, +) == 3, "\(delivered)")
        let missing = try self.curl("http://127.0.0.1:\(metricsPort)/other")
        let stopped = server.stop()
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
        #expect(answer.status == 200)
        #expect(missing.status == 404)

        let samples = PrometheusSample.parse(answer.body)
        let requests = samples.filter { $0.name == "apns_local_requests_total" }
        let counts = Dictionary(uniqueKeysWithValues: requests.map { ("\($0.labels["status"]!) \($0.labels["reason"]!)", $0.value) })
        #expect(counts == ["200 ": 3, "400 BadDeviceToken": 2, "410 Unregistered": 1], "\(requests)")
        #expect(requests.allSatisfy { $0.labels["push_type"] == "alert" })
        let durationCounts = samples.filter { $0.name == "apns_local_request_duration_seconds_count" }
        #expect(durationCounts.map(\.value).reduce(0, +) == 6, "\(durationCounts)")
        #expect(durationCounts.first { $0.labels["status"] == "200" }?.value == 3)
        let connections = samples.first { $0.name == "apns_local_connections_accepted" }
        #expect((connections?.value ?? 0) >= 1, "\(samples)")
    }

    @Test("--metrics-port out of range is a usage error naming the flag")
    func badPort() throws {
        let result = try CommandRunner.run(["serve", "--port", "0", "--metrics-port", "70000"])
        #expect(result.exitCode == 64)
        #expect(result.stderr.contains("--metrics-port must be 0...65535"), "\(result.stderr)")
    }
}
