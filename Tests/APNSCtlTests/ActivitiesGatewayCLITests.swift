import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.shop"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let updateToken = String(repeating: "ab", count: 32)

/// `apnsctl activities serve`: the Live Activity gateway as a backend in another language meets it,
/// driven by Python's urllib and by curl (Tests/InboxClients/activities_gateway.py), every answer
/// checked against the gateway's OpenAPI document; the pushes judged by `apnsctl serve`.
@Suite("apnsctl activities serve: the gateway from Python and curl, checked against its OpenAPI document", .serialized, .timeLimit(.minutes(3)))
struct ActivitiesGatewayCLITests {
    @Test("report, start, update (routine, alerting), list, show, end; 401, 413, 400s, 409, 404; metrics; a group updated and ended; SIGTERM stops it")
    func python() throws {
        let folder = try TemporaryFolder("activities-gateway")
        defer { folder.remove() }
        let apns = try ServerProcess(["--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1", "--topic", bundle, "--json", "--print-requests"])
        let key = "gateway-test-key-\(UUID().uuidString)"
        let keyPath = folder.url.appendingPathComponent("api-key").path
        try Data("  \(key)\n".utf8).write(to: URL(fileURLWithPath: keyPath))
        let gateway = try ServerProcess(
            executable: CommandRunner.binary,
            arguments: ["activities", "serve", "--store", "sqlite:" + folder.url.appendingPathComponent("la.sqlite").path, "--port", "0",
                        "--api-key-file", keyPath, "--max-body", "4096", "--url", "https://127.0.0.1:\(apns.port)",
                        "--ca-file", KeysExample.path("ca.pem")] + credentials,
            portPrefix: "http://127.0.0.1:"
        )
        let run = try ChildProcess.run(
            try venvPython(),
            [PackageRoot.path("Tests/InboxClients/activities_gateway.py"), "--url", "http://127.0.0.1:\(gateway.port)", "--key", key,
             "--max-body", "4096"],
            mergesStandardError: true, timeout: .seconds(120)
        )
        let stopped = gateway.stop()
        #expect(run.exitCode == 0 && run.stdout.contains(" passed, 0 failed"), "\(run.stdout)")
        #expect(stopped.exitCode == 0, "SIGTERM: a graceful stop: \(stopped.stderr)")
        #expect(!stopped.stderr.contains(key) && !stopped.stdout.contains(key), "the API key was printed")

        let served = try apns.stop().stdout.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        let sent = served.compactMap { $0["request"] as? [String: Any] }
        let events = try sent.map { request in
            (try JSONSerialization.jsonObject(with: Data((request["body"] as? String ?? "").utf8)) as? [String: Any])?["aps"] as? [String: Any]
        }.map { $0?["event"] as? String }
        #expect(events.prefix(4) == ["start", "update", "update", "end"], "\(served)")
        let priorities = sent.map { ($0["headers"] as? [String: Any])?["apns-priority"] as? String }
        #expect(priorities.dropFirst().prefix(2) == ["5", "10"], "routine, then alerting: \(priorities)")
        #expect(served.dropFirst().prefix(3).allSatisfy { $0["token"] as? String == updateToken })
        // Then the group of three: three starts, and each member's pushes through its own token: the
        // group's two updates (one when the second replaced the first while it waited) and its end.
        let group = zip(served, events).dropFirst(4)
        #expect(group.filter { $0.1 == "start" }.count == 3, "\(served)")
        for member in 1...3 {
            let token = String(repeating: "c\(member)", count: 32)
            let pushes = group.filter { $0.0["token"] as? String == token }.map(\.1)
            #expect(pushes == ["update", "update", "end"] || pushes == ["update", "end"], "fan-\(member): \(pushes)")
        }
    }

    /// The whole path a backend in another language takes, with the phones of `apnsctl serve` as the
    /// judge: their token reports reach the gateway (`--report-tokens-to`), the backend starts,
    /// updates and ends over HTTP, and each phone shows the latest state, then the end.
    @Test("Phones of apnsctl serve report to the gateway; a Python backend starts, updates (coalesced) and ends; each phone shows it")
    func phones() throws {
        let folder = try TemporaryFolder("activities-gateway")
        defer { folder.remove() }
        let key = "gateway-phones-\(UUID().uuidString)"
        let keyPath = folder.url.appendingPathComponent("api-key").path
        try Data(key.utf8).write(to: URL(fileURLWithPath: keyPath))
        let serve = [
            CommandRunner.binary.path, "serve", "--port", "0", "--cert", KeysExample.path("server.pem"), "--key", KeysExample.path("server.key"),
            "--ui-port", "0", "--topic", bundle, "--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1", "--quiet",
        ]
        let gateway = [
            CommandRunner.binary.path, "activities", "serve", "--store", "sqlite:" + folder.url.appendingPathComponent("la.sqlite").path,
            "--port", "0", "--api-key-file", keyPath, "--ca-file", KeysExample.path("ca.pem"),
        ] + credentials
        let run = try ChildProcess.run(
            try venvPython(),
            [PackageRoot.path("Tests/InboxClients/gateway_phones.py"), "--serve", serve.joined(separator: " "),
             "--gateway", gateway.joined(separator: " "), "--key", key, "--phones", "3"],
            mergesStandardError: true, timeout: .seconds(150)
        )
        #expect(run.exitCode == 0 && run.stdout.contains(" passed, 0 failed"), "\(run.stdout)")
    }

    @Test("--host off loopback needs --api-key-file (64, naming it); a missing key file is 66; an empty one 65")
    func refusals() throws {
        let folder = try TemporaryFolder("activities-gateway")
        defer { folder.remove() }
        let store = ["--store", "sqlite:" + folder.url.appendingPathComponent("la.sqlite").path]
        let open = try CommandRunner.run(["activities", "serve"] + store + ["--host", "0.0.0.0"] + credentials)
        #expect(open.exitCode == 64 && open.stderr.contains("--api-key-file"), "\(open.stderr)")
        let missing = try CommandRunner.run(["activities", "serve"] + store + ["--api-key-file", folder.url.appendingPathComponent("none").path]
            + credentials)
        #expect(missing.exitCode == 66 && missing.stderr.contains("--api-key-file"), "\(missing.stderr)")
        let emptyPath = folder.url.appendingPathComponent("empty").path
        try Data("\n".utf8).write(to: URL(fileURLWithPath: emptyPath))
        let empty = try CommandRunner.run(["activities", "serve"] + store + ["--api-key-file", emptyPath] + credentials)
        #expect(empty.exitCode == 65 && empty.stderr.contains("--api-key-file"), "\(empty.stderr)")
    }
}
