import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.shop"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ca = KeysExample.path("ca.pem")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let registerKey = ["--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1", "--topic", bundle]
private let pushToStart = String(repeating: "5a", count: 32)
private let updateToken = String(repeating: "ab", count: 32)
private let deadToken = String(repeating: "de", count: 32)

private func endpoint(_ server: ServerProcess) -> [String] { ["--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] + credentials }

/// The JSON objects of NDJSON output.
private func objects(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }
}

/// `apnsctl activities …` against one registry.
private struct Registry {
    let store: String

    func run(_ arguments: [String]) throws -> ChildProcess.Result {
        try CommandRunner.run(["activities"] + arguments.prefix(1) + ["--store", self.store] + arguments.dropFirst())
    }

    func reportPushToStart(_ token: String = pushToStart, installation: String = "i-1") throws -> ChildProcess.Result {
        try self.run(["report", "--installation", installation, "--bundle-id", bundle, "--attributes-type", "OrderAttributes",
                      "--push-to-start-token", token, "--environment", "sandbox"])
    }

    func start(_ id: String, installation: String = "i-1", _ server: ServerProcess) throws -> ChildProcess.Result {
        try self.run(["start", "--activity", id, "--installation", installation, "--bundle-id", bundle, "--attributes-type", "OrderAttributes",
                      "--attributes", #"{"order":"17"}"#, "--content-state", #"{"status":"packing"}"#, "--alert-title", "Order 17",
                      "--alert-body", "Packing"] + endpoint(server))
    }

    func list(_ extra: [String] = []) throws -> [[String: Any]] {
        let result = try self.run(["list", "--json"] + extra)
        #expect(result.exitCode == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]], "\(result.stdout)")
    }

    func show(_ id: String) throws -> [String: Any] {
        let result = try self.run(["show", id, "--json"])
        #expect(result.exitCode == 0, "\(result.stderr)")
        return try #require(try objects(result.stdout).first)
    }
}

/// The requests `serve --json` judged, by the token in the path.
private func served(_ server: ServerProcess) throws -> [[String: Any]] {
    try objects(server.stop().stdout)
}

@Suite("apnsctl activities: the managed Live Activities from a shell, on SQLite and PostgreSQL", .serialized, .timeLimit(.minutes(3)))
struct ActivitiesCLITests {
    @Test("report, start (twice: one request), update held until the token, the report sends it, update, end; then 65 for more")
    func lifecycle() throws {
        let folder = try TemporaryFolder("activities-cli")
        defer { folder.remove() }
        let registry = Registry(store: "sqlite:" + folder.url.appendingPathComponent("la.sqlite").path)
        let server = try ServerProcess(registerKey + ["--json", "--print-requests"])
        let report = try registry.reportPushToStart()
        #expect(report.exitCode == 0 && report.stdout == "applied\n", "\(report.stdout)\(report.stderr)")

        let start = try registry.start("order-17", server)
        #expect(start.exitCode == 0, "\(start.stderr)")
        #expect(start.stdout.hasPrefix("\(pushToStart) 200 accepted apns-id="), "\(start.stdout)")
        let again = try registry.start("order-17", server)
        #expect(again.exitCode == 0 && again.stdout == "order-17 not sent: already starting: a running activity is not started twice\n",
                "\(again.stdout)\(again.stderr)")

        let held = try registry.run(["update", "--activity", "order-17", "--content-state", #"{"status":"packed"}"#, "--json"] + endpoint(server))
        #expect(try held.exitCode == 0 && (objects(held.stdout).first?["outcome"] as? String) == "held", "\(held.stdout)\(held.stderr)")
        let latest = try registry.run(["update", "--activity", "order-17", "--content-state", #"{"status":"shipped"}"#] + endpoint(server))
        #expect(latest.exitCode == 0 && latest.stdout.contains("held"), "\(latest.stdout)")

        // The app reports the activity's token; with credentials the held (latest) update goes out.
        let token = try registry.run(["report", "--activity", "order-17", "--update-token", updateToken, "--sequence", "2"] + endpoint(server))
        #expect(token.exitCode == 0, "\(token.stderr)")
        #expect(token.stdout.hasPrefix("applied\n\(updateToken) 200 accepted apns-id="), "\(token.stdout)")
        let older = try registry.run(["report", "--activity", "order-17", "--update-token", updateToken, "--sequence", "1", "--json"])
        #expect(older.exitCode == 65 && older.stdout.isEmpty, "\(older.stdout)")
        #expect(older.stderr.contains("--sequence: goes backwards: 1 is older than 2, already applied; nothing changed"), "\(older.stderr)")
        let retried = try registry.run(["report", "--activity", "order-17", "--update-token", updateToken, "--sequence", "2", "--json"])
        #expect(try retried.exitCode == 0 && (objects(retried.stdout).first?["applied"] as? Bool) == true, "the same sequence again: \(retried.stdout)")

        let update = try registry.run(["update", "--activity", "order-17", "--content-state", #"{"status":"near"}"#, "--alerting", "--json"]
            + endpoint(server))
        #expect(try update.exitCode == 0 && (objects(update.stdout).first?["outcome"] as? String) == "accepted", "\(update.stdout)")
        let end = try registry.run(["end", "--activity", "order-17", "--content-state", #"{"status":"delivered"}"#, "--dismissal-date", "0"]
            + endpoint(server))
        #expect(end.exitCode == 0 && end.stdout.hasPrefix("\(updateToken) 200 accepted"), "\(end.stdout)\(end.stderr)")

        // An ended activity: 65 with its state and why, and nothing sent.
        let after = try registry.run(["update", "--activity", "order-17", "--content-state", "{}"] + endpoint(server))
        #expect(after.exitCode == 65 && after.stderr.contains("order-17 is ended: ended by the backend; nothing was sent"), "\(after.stderr)")
        let unknown = try registry.run(["end", "--activity", "order-18"] + endpoint(server))
        #expect(unknown.exitCode == 65 && unknown.stderr.contains("no activity has the id order-18"), "\(unknown.stderr)")

        let requests = try served(server)
        #expect(requests.map { $0["token"] as? String } == [pushToStart, updateToken, updateToken, updateToken],
                "the start, the held update, the update, the end: \(requests)")
        let sent = requests.compactMap { $0["request"] as? [String: Any] }
        let bodies = try sent.map { request in
            try #require(try JSONSerialization.jsonObject(with: Data((request["body"] as? String ?? "").utf8)) as? [String: Any])["aps"]
                as? [String: Any]
        }
        #expect(bodies.map { $0?["event"] as? String } == ["start", "update", "update", "end"])
        #expect((bodies[1]?["content-state"] as? [String: Any])?["status"] as? String == "shipped", "the latest held state, not every one")
        let priorities = sent.map { ($0["headers"] as? [String: Any])?["apns-priority"] as? String }
        #expect(priorities[2] == "10", "--alerting: priority 10")
        let collapse = (sent.first?["headers"] as? [String: Any])?["apns-collapse-id"] as? String
        #expect(collapse == "order-17", "the activity id is the start's collapse id")

        let listed = try registry.list()
        #expect(listed.count == 1)
        let object = try #require(listed.first)
        #expect(Set(object.keys) == ["id", "state", "bundle_id", "attributes_type", "installation", "update_token", "started_at", "why", "group", "channel_id"])
        #expect(object["id"] as? String == "order-17" && object["state"] as? String == "ended" && object["update_token"] as? String == updateToken)
        #expect(object["installation"] as? String == "i-1" && object["why"] as? String == "ended by the backend")
        #expect((object["started_at"] as? String).flatMap { try? Date($0, strategy: .iso8601) } != nil)
        #expect(try registry.list(["--state", "active"]).isEmpty)
        let shown = try registry.show("order-17")
        let history = try #require(shown["history"] as? [[String: Any]])
        #expect(history.map { $0["event"] as? String } == ["start_sent", "held", "held", "update_token", "held_sent", "ended"], "\(history)")
    }

    @Test("A report without credentials keeps the held update; prune with credentials sends it once")
    func heldUntilPrune() throws {
        let folder = try TemporaryFolder("activities-cli")
        defer { folder.remove() }
        let registry = Registry(store: "sqlite:" + folder.url.appendingPathComponent("la.sqlite").path)
        let server = try ServerProcess(registerKey + ["--json", "--print-requests"])
        _ = try registry.reportPushToStart()
        #expect(try registry.start("order-20", server).exitCode == 0)
        _ = try registry.run(["update", "--activity", "order-20", "--content-state", #"{"status":"packed"}"#] + endpoint(server))
        let report = try registry.run(["report", "--activity", "order-20", "--update-token", updateToken])
        #expect(report.exitCode == 0 && report.stdout == "applied\n", "\(report.stdout)")
        #expect(report.stderr.contains("order-20 holds an update"), "\(report.stderr)")
        let prune = try registry.run(["prune", "--json"] + endpoint(server))
        #expect(prune.exitCode == 0, "\(prune.stderr)")
        #expect(try objects(prune.stdout).first?["sent_held"] as? Int == 1, "\(prune.stdout)")
        let again = try registry.run(["prune"] + endpoint(server))
        #expect(again.stdout == "ended 0, stale 0, removed 0, held pushes sent 0\n", "\(again.stdout)")
        let routine = try registry.run(["update", "--activity", "order-20", "--content-state", #"{"status":"near"}"#] + endpoint(server))
        #expect(routine.exitCode == 0, "\(routine.stderr)")
        let requests = try served(server)
        #expect(requests.map { $0["token"] as? String } == [pushToStart, updateToken, updateToken], "the held update once: \(requests)")
        let priority = ((requests.last?["request"] as? [String: Any])?["headers"] as? [String: Any])?["apns-priority"] as? String
        #expect(priority == "5", "an update without --alerting is routine: priority 5")
    }

    @Test("410 for an update token or a push-to-start token: dead, then 65 with the reason and nothing more sent")
    func deadTokens() throws {
        let folder = try TemporaryFolder("activities-cli")
        defer { folder.remove() }
        let registry = Registry(store: "sqlite:" + folder.url.appendingPathComponent("la.sqlite").path)
        let server = try ServerProcess(registerKey + ["--json", "--unregistered", deadToken])
        // An activity the app started itself, registered by its report; its token is unregistered.
        let registered = try registry.run(["report", "--activity", "match-1", "--update-token", deadToken, "--bundle-id", bundle,
                                           "--attributes-type", "ScoreAttributes"])
        #expect(registered.exitCode == 0, "\(registered.stderr)")
        let update = try registry.run(["update", "--activity", "match-1", "--content-state", #"{"home":1}"#] + endpoint(server))
        #expect(update.exitCode == 1 && update.stdout.hasPrefix("\(deadToken) 410 Unregistered"), "\(update.stdout)\(update.stderr)")
        let next = try registry.run(["update", "--activity", "match-1", "--content-state", #"{"home":2}"#] + endpoint(server))
        #expect(next.exitCode == 65 && next.stderr.contains("match-1 is dead (Unregistered): APNs answered Unregistered"), "\(next.stderr)")
        #expect(try registry.list(["--state", "dead"]).first?["why"] as? String == "APNs answered Unregistered for its update token")

        _ = try registry.reportPushToStart(deadToken, installation: "i-2")
        let start = try registry.start("order-30", installation: "i-2", server)
        #expect(start.exitCode == 1 && start.stdout.hasPrefix("\(deadToken) 410 Unregistered"), "\(start.stdout)\(start.stderr)")
        let retry = try registry.start("order-30", installation: "i-2", server)
        #expect(retry.exitCode == 65 && retry.stderr.contains("is dead (Unregistered): the app must report a new one"), "\(retry.stderr)")
        #expect(try served(server).count == 2)
    }

    @Test("Bad input names the flag and changes nothing", arguments: [
        (["report", "--installation", "i-1", "--bundle-id", bundle, "--attributes-type", "A", "--push-to-start-token", "xyz"], Int32(65),
         "--push-to-start-token"),
        (["report", "--installation", "i-1", "--bundle-id", "", "--attributes-type", "A", "--push-to-start-token", pushToStart], Int32(65),
         "--bundle-id"),
        (["report", "--installation", "i-1", "--bundle-id", bundle, "--attributes-type", "", "--push-to-start-token", pushToStart], Int32(65),
         "--attributes-type"),
        (["report", "--activity", String(repeating: "a", count: 65), "--update-token", updateToken], Int32(65), "--activity"),
        (["report", "--activity", "bad\u{7}id", "--update-token", updateToken], Int32(65), "--activity"),
        (["report", "--activity", "a", "--update-token", updateToken, "--sequence", "-1"], Int32(65), "--sequence"),
        (["report", "--activity", "a"], Int32(64), "--update-token"),
        (["report", "--installation", "i-1", "--push-to-start-token", pushToStart], Int32(64), "--bundle-id"),
        (["list", "--state", "running"], Int32(64), "--state"),
        (["show", "order-1"], Int32(65), "order-1"),
    ])
    func badInput(_ arguments: [String], _ code: Int32, _ flag: String) throws {
        let folder = try TemporaryFolder("activities-cli")
        defer { folder.remove() }
        let registry = Registry(store: "sqlite:" + folder.url.appendingPathComponent("la.sqlite").path)
        let result = try registry.run(arguments)
        #expect(result.exitCode == code, "\(result.stderr)")
        #expect(result.stderr.contains(flag), "\(result.stderr)")
        #expect(try registry.list().isEmpty)
    }

    @Test("A store that is not one: 65 naming the file, left as it was; a --store of no known form: 64; no server: 69")
    func foreignStore() throws {
        let folder = try TemporaryFolder("activities-cli")
        defer { folder.remove() }
        let path = try folder.file("notes.txt", contents: String(repeating: "not a database\n", count: 100))
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let result = try Registry(store: "sqlite:" + path).run(["list"])
        #expect(result.exitCode == 65 && result.stderr.contains("'\(path)' is not a Live Activity store"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        let scheme = try Registry(store: "mysql://localhost/la").run(["list"])
        #expect(scheme.exitCode == 64 && scheme.stderr.contains("--store"), "\(scheme.stderr)")
        // No PostgreSQL on the port: 69 at once, with the reason.
        let closed = try ClosedPort()
        let unreachable = try Registry(store: "postgres://forge@127.0.0.1:\(closed.port)/la?sslmode=disable").run(["list"])
        closed.close()
        #expect(unreachable.exitCode == 69 && unreachable.stderr.contains("cannot connect") && unreachable.stderr.contains("refused"),
                "\(unreachable.stderr)")
    }

    @Test("On PostgreSQL: two processes' reports and starts share one registry; a newer schema is refused naming both versions")
    func postgres() throws {
        let postgres = try PostgresProcess()
        defer { postgres.stop() }
        let registry = Registry(store: postgres.url)
        let server = try ServerProcess(registerKey + ["--json"])
        #expect(try registry.reportPushToStart().exitCode == 0)
        let start = try registry.start("order-40", server)
        #expect(start.exitCode == 0 && start.stdout.hasPrefix("\(pushToStart) 200 accepted"), "\(start.stdout)\(start.stderr)")
        #expect(try registry.start("order-40", server).stdout.contains("not started twice"))
        #expect(try registry.run(["report", "--activity", "order-40", "--update-token", updateToken]).exitCode == 0)
        #expect(try registry.list(["--state", "active"]).map { $0["id"] as? String } == ["order-40"])
        #expect(try served(server).count == 1)

        _ = try postgres.psql("INSERT INTO live_activity_schema (version) VALUES (99)")
        let newer = try registry.run(["list"])
        #expect(newer.exitCode == 65 && newer.stderr.contains("version 99, newer than this build's"), "\(newer.stderr)")
    }

    @Test("--help of every activities subcommand exits 0", arguments: [
        ["activities"], ["activities", "report"], ["activities", "start"], ["activities", "update"], ["activities", "end"],
        ["activities", "renew"], ["activities", "list"], ["activities", "show"], ["activities", "prune"],
    ])
    func help(_ command: [String]) throws {
        let result = try CommandRunner.run(command + ["--help"])
        #expect(result.exitCode == 0 && result.stdout.contains("USAGE"), "\(result.stderr)")
    }
}
