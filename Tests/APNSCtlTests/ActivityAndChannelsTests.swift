import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ca = KeysExample.path("ca.pem")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1", "--topic", bundle]
private let registerKey = ["--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1"]
private let token = String(repeating: "ab", count: 32)

private func endpoint(_ server: ServerProcess) -> [String] { ["--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] }

/// The JSON objects of NDJSON output.
private func objects(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }
}

@Suite("apnsctl activity and channels against apnsctl serve", .serialized, .timeLimit(.minutes(2)))
struct ActivityAndChannelsTests {
    @Test("activity start, update and end are accepted as liveactivity pushes, each with its event")
    func startUpdateEnd() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--json"])
        let start = try CommandRunner.run(["activity", "start"] + endpoint(server) + credentials + [
            "--token", token, "--attributes-type", "DeliveryAttributes", "--attributes", #"{"order":"A-17"}"#,
            "--content-state", #"{"status":"preparing"}"#, "--alert-title", "Order A-17", "--alert-body", "Preparing",
        ])
        let stateFile = try TemporaryFolder.inProcess("activity").appendingPathComponent("state.json")
        try Data(#"{"status":"on the way","eta":10}"#.utf8).write(to: stateFile)
        let update = try CommandRunner.run(["activity", "update"] + endpoint(server) + credentials + [
            "--token", token, "--content-state", "@\(stateFile.path)", "--stale-date", "2030-01-01T00:00:00Z", "--json",
        ])
        let end = try CommandRunner.run(["activity", "end"] + endpoint(server) + credentials + [
            "--token", token, "--content-state", #"{"status":"delivered"}"#, "--dismissal-date", "0",
        ])
        let served = try objects(server.stop().stdout)
        for result in [start, update, end] { #expect(result.exitCode == 0, "\(result.stderr)") }
        #expect(start.stdout.hasPrefix("\(token) 200 accepted apns-id="), "\(start.stdout)")
        let updateLines = try objects(update.stdout)
        let updateLine = try #require(updateLines.first)
        #expect(updateLine["outcome"] as? String == "accepted" && updateLine["status"] as? Int == 200)
        // The same summary as `send`: one object after the verdict, and a line in human output.
        #expect(updateLines.count == 2 && updateLines.last?["summary"] as? Bool == true && updateLines.last?["accepted"] as? Int == 1,
                "\(update.stdout)")
        #expect(end.stdout.split(separator: "\n").last?.hasPrefix("sent 1: 1 accepted, 0 rejected, 0 failed, 0 not sent in ") == true,
                "\(end.stdout)")
        #expect(served.count == 3 && served.allSatisfy { $0["push_type"] as? String == "liveactivity" && $0["status"] as? Int == 200 })
    }

    @Test("--dry-run shows the aps of each event: content state, dates as seconds, the alert of a start")
    func dryRun() throws {
        let end = try CommandRunner.run(["activity", "end", "--dry-run"] + credentials + [
            "--token", token, "--content-state", #"{"status":"delivered"}"#, "--timestamp", "1700000000",
            "--dismissal-date", "2023-11-14T22:13:30Z", "--json",
        ])
        #expect(end.exitCode == 0, "\(end.stderr)")
        let request = try #require(try objects(end.stdout).first)
        let aps = try #require((request["body"] as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["event"] as? String == "end" && aps["timestamp"] as? Int == 1_700_000_000 && aps["dismissal-date"] as? Int == 1_700_000_010)
        #expect((aps["content-state"] as? [String: Any])?["status"] as? String == "delivered")
        #expect((request["headers"] as? [String: Any])?["apns-topic"] as? String == "\(bundle).push-type.liveactivity")
        let start = try CommandRunner.run(["activity", "start", "--dry-run"] + credentials + [
            "--token", token, "--attributes-type", "DeliveryAttributes", "--attributes", "{}", "--content-state", "{}",
            "--alert-title", "Hi", "--json",
        ])
        let startAPS = try #require(((try objects(start.stdout).first)?["body"] as? [String: Any])?["aps"] as? [String: Any])
        #expect(startAPS["event"] as? String == "start" && startAPS["attributes-type"] as? String == "DeliveryAttributes")
        #expect((startAPS["alert"] as? [String: Any])?["title"] as? String == "Hi")
    }

    @Test("Bad input names the flag: content state not an object or not JSON (65), start without an alert (64), bad date (65)",
          arguments: [
              (["update", "--token", token, "--content-state", "[1,2]"], Int32(65), "--content-state"),
              (["update", "--token", token, "--content-state", "{not json"], Int32(65), "--content-state"),
              (["update", "--token", token, "--content-state", "@/nonexistent/state.json"], Int32(66), "--content-state"),
              (["start", "--token", token, "--attributes-type", "A", "--attributes", "{}", "--content-state", "{}"], Int32(64), "--alert-title"),
              (["update", "--token", token, "--content-state", "{}", "--stale-date", "tomorrow"], Int32(65), "--stale-date"),
              (["update", "--token", "xyz", "--content-state", "{}"], Int32(65), "--token"),
              (["update", "--content-state", "{}"], Int32(64), "--token"),
              (["update", "--channel", "c", "--token", token, "--content-state", "{}"], Int32(64), "--channel"),
          ])
    func badInput(_ arguments: [String], _ code: Int32, _ flag: String) throws {
        let result = try CommandRunner.run(["activity"] + arguments + credentials + ["--dry-run"])
        #expect(result.exitCode == code, "\(result.stderr)")
        #expect(result.stderr.contains(flag), "\(result.stderr)")
    }

    @Test("channels create, get, list, a broadcast to the channel, delete; then the channel is gone")
    func channelRoundTrip() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--json"])
        let create = try CommandRunner.run(["channels", "create", "--storage-policy", "most-recent"] + endpoint(server) + credentials)
        #expect(create.exitCode == 0, "\(create.stderr)")
        let channel = create.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let get = try CommandRunner.run(["channels", "get", "--channel", channel] + endpoint(server) + credentials)
        #expect(get.stdout == "\(channel) most-recent\n", "\(get.stdout)\(get.stderr)")
        let list = try CommandRunner.run(["channels", "list", "--json"] + endpoint(server) + credentials)
        #expect((try objects(list.stdout).first?["channels"] as? [String]) == [channel])
        let broadcast = try CommandRunner.run(["activity", "update", "--channel", channel, "--content-state", #"{"score":"2-1"}"#]
            + endpoint(server) + credentials)
        #expect(broadcast.exitCode == 0 && broadcast.stdout.contains(" 200 accepted "), "\(broadcast.stdout)\(broadcast.stderr)")
        let delete = try CommandRunner.run(["channels", "delete", "--channel", channel] + endpoint(server) + credentials)
        #expect(delete.exitCode == 0 && delete.stdout == "deleted \(channel)\n")
        let again = try CommandRunner.run(["channels", "get", "--channel", channel] + endpoint(server) + credentials)
        let served = try objects(server.stop().stdout)
        #expect(again.exitCode == 1 && again.stderr.contains("ChannelNotRegistered"), "\(again.stderr)")
        // The broadcast was judged by the server as one.
        #expect(served.contains { $0["push_type"] as? String == "liveactivity" && $0["status"] as? Int == 200 })
    }

    @Test("A content state that is not JSON: 65, the flag, and line and column in the words send uses")
    func contentStateNotJSON() throws {
        let inline = try CommandRunner.run(["activity", "update", "--dry-run"] + credentials + ["--token", token, "--content-state", #"{"a" 1}"#])
        #expect(inline.exitCode == 65, "\(inline.stderr)")
        #expect(inline.stderr.contains(#"error: --content-state: not valid JSON: unexpected '1' at column 6 (expected ':')"#), "\(inline.stderr)")
        let file = try TemporaryFolder.inProcess("activity").appendingPathComponent("broken-state.json")
        try Data("{\n  \"status\": \"late\",\n  \"eta\": }\n".utf8).write(to: file)
        let fromFile = try CommandRunner.run(["activity", "update", "--dry-run"] + credentials + ["--token", token, "--content-state", "@\(file.path)"])
        #expect(fromFile.exitCode == 65, "\(fromFile.stderr)")
        #expect(fromFile.stderr.contains("--content-state: not valid JSON: unexpected '}' at line 3, column 10"), "\(fromFile.stderr)")
        // send's --data reads JSON the same way.
        let data = try CommandRunner.run(["send", "--dry-run"] + credentials + ["--token", token, "--title", "x", "--data", #"k={"a" 1}"#])
        #expect(data.exitCode == 65 && data.stderr.contains("unexpected '1' at column 6 (expected ':')"), "\(data.stderr)")
    }

    @Test("A channel command against a closed port is 69, with a plain message")
    func unreachable() throws {
        let closed = try ClosedPort()
        let result = try CommandRunner.run(["channels", "list", "--url", "https://127.0.0.1:\(closed.port)", "--ca-file", ca] + credentials)
        closed.close()
        #expect(result.exitCode == 69, "\(result.stderr)")
        #expect(result.stderr.contains("cannot reach 127.0.0.1:\(closed.port)"), "\(result.stderr)")
    }

    @Test("--help of every activity and channels subcommand exits 0", arguments: [
        ["activity"], ["activity", "start"], ["activity", "update"], ["activity", "end"],
        ["channels"], ["channels", "create"], ["channels", "get"], ["channels", "list"], ["channels", "delete"],
    ])
    func help(_ command: [String]) throws {
        let result = try CommandRunner.run(command + ["--help"])
        #expect(result.exitCode == 0 && result.stdout.contains("USAGE:"), "\(result.stderr)")
    }
}
