import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let token = String(repeating: "ab", count: 32)
private let channel = "dHN0LTEyMzQ1Njc4OTAxMjM0NTY="

/// A `.apns` file (simctl's format) for a Live Activity event, with its target bundle.
private func simulatorFile(_ aps: String) -> String {
    #"{"Simulator Target Bundle":"\#(bundle)","aps":\#(aps)}"#
}

private let now = Int(Date().timeIntervalSince1970)
private let start = simulatorFile(
    #"{"event":"start","timestamp":\#(now),"attributes-type":"DeliveryAttributes","attributes":{"order":"A-17"},"content-state":{"status":"preparing"},"alert":{"title":"Order A-17","body":"Preparing"}}"#
)
private let update = simulatorFile(#"{"event":"update","timestamp":\#(now),"content-state":{"status":"on the way"}}"#)
private let end = simulatorFile(#"{"event":"end","timestamp":\#(now),"content-state":{"status":"delivered"},"dismissal-date":0}"#)

/// `apnsctl activity … --payload FILE`: the payload a Simulator fixture holds, sent as it is, with the
/// headers from flags; checked against the command's event before anything is sent.
@Suite("apnsctl activity and .apns files", .serialized, .timeLimit(.minutes(2)))
struct ActivityPayloadFileTests {
    @Test("start, update and end from .apns files, without --topic: accepted by serve as liveactivity pushes to the file's bundle")
    func startUpdateEndFromFiles() throws {
        let folder = try TemporaryFolder("activity-apns")
        defer { folder.remove() }
        let server = try ServerProcess(["--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1", "--topic", bundle, "--json"])
        let endpoint = ["--url", "https://127.0.0.1:\(server.port)", "--ca-file", KeysExample.path("ca.pem")]
        var results: [CommandRunner.Result] = []
        for (event, contents) in [("start", start), ("update", update), ("end", end)] {
            let path = try folder.file("\(event).apns", contents: contents)
            results.append(try CommandRunner.run(["activity", event, "--token", token, "--payload", path, "--json"] + endpoint + credentials))
        }
        let served = server.stop().stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        for result in results {
            #expect(result.exitCode == 0 && result.stdout.contains(#""outcome":"accepted""#), "\(result.stdout)\(result.stderr)")
        }
        #expect(served.count == 3, "\(served)")
        #expect(served.allSatisfy { $0["push_type"] as? String == "liveactivity" && $0["topic"] as? String == "\(bundle).push-type.liveactivity" && $0["status"] as? Int == 200 },
                "\(served)")
    }

    @Test("--dry-run sends the file's aps unchanged, to a token and as a broadcast, with the header flags")
    func dryRunKeepsThePayload() throws {
        let folder = try TemporaryFolder("activity-apns")
        defer { folder.remove() }
        let path = try folder.file("update.apns", contents: update)
        let toToken = try CommandRunner.run(["activity", "update", "--dry-run", "--json", "--token", token, "--payload", path,
                                             "--priority", "5", "--collapse-id", "order-17"] + credentials)
        let broadcast = try CommandRunner.run(["activity", "update", "--dry-run", "--json", "--channel", channel, "--payload", path]
                                              + credentials)
        for result in [toToken, broadcast] {
            #expect(result.exitCode == 0, "\(result.stderr)")
            let request = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
            let aps = try #require((request["body"] as? [String: Any])?["aps"] as? [String: Any], "\(request)")
            #expect(aps["event"] as? String == "update" && aps["timestamp"] as? Int == now, "\(aps)")
            #expect((aps["content-state"] as? [String: Any])?["status"] as? String == "on the way", "\(aps)")
            #expect((request["body"] as? [String: Any])?["Simulator Target Bundle"] == nil, "the simulator's key is not sent")
        }
        let headers = try #require((try JSONSerialization.jsonObject(with: Data(toToken.stdout.utf8)) as? [String: Any])?["headers"] as? [String: Any])
        #expect(headers["apns-topic"] as? String == "\(bundle).push-type.liveactivity" && headers["apns-priority"] as? String == "5"
                && headers["apns-collapse-id"] as? String == "order-17", "\(headers)")
        let broadcastRequest = try #require(try JSONSerialization.jsonObject(with: Data(broadcast.stdout.utf8)) as? [String: Any])
        #expect(broadcastRequest["path"] as? String == "/4/broadcasts/apps/\(bundle)", "\(broadcastRequest)")
    }

    @Test("A payload file that does not fit its command: 65 naming the file and the rule, nothing sent", arguments: [
        ("end", "update.apns", update, #"aps.event is "update", but this is activity end"#),
        ("update", "no-event.json", #"{"aps":{"timestamp":1,"content-state":{}}}"#, #"needs aps.event, "update" for activity update"#),
        ("update", "state.apns", simulatorFile(#"{"event":"update","timestamp":1,"content-state":[1]}"#),
         "aps.content-state must be a JSON object (the app's ContentState)"),
        ("update", "no-time.apns", simulatorFile(#"{"event":"update","content-state":{}}"#), "needs aps.timestamp, a number of seconds since 1970"),
        ("start", "start.apns", simulatorFile(#"{"event":"start","timestamp":1,"content-state":{},"attributes-type":"A","attributes":{}}"#),
         "needs aps.alert: a push that starts a Live Activity must alert"),
        ("update", "no-aps.apns", #"{"alert":"x"}"#, #"a .apns file must have a top-level "aps" object"#),
        ("update", "large.apns", #"{"aps":{"alert":"\#(String(repeating: "z", count: 4100))"}}"#, "a .apns file must be at most 4096 bytes"),
    ])
    func refused(_ event: String, _ name: String, _ contents: String, _ rule: String) throws {
        let folder = try TemporaryFolder("activity-apns")
        defer { folder.remove() }
        let path = try folder.file(name, contents: contents)
        // Port 9 on loopback: nothing listens, and nothing must be tried.
        let result = try CommandRunner.run(["activity", event, "--url", "https://127.0.0.1:9", "--topic", bundle, "--token", token,
                                            "--payload", path] + credentials)
        #expect(result.exitCode == 65, "\(result.stderr)")
        #expect(result.stderr.contains("--payload '\(path)': \(rule)"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test("Content flags beside --payload: 64 naming them, since the file already holds the content")
    func contentFlagsBesidePayload() throws {
        let folder = try TemporaryFolder("activity-apns")
        defer { folder.remove() }
        let path = try folder.file("start.apns", contents: start)
        let update = try CommandRunner.run(["activity", "update", "--token", token, "--payload", path, "--content-state", "{}",
                                            "--alert-title", "Hi"] + credentials)
        #expect(update.exitCode == 64)
        #expect(update.stderr.contains("--content-state, --alert-title: the payload comes from --payload"), "\(update.stderr)")
        let start = try CommandRunner.run(["activity", "start", "--token", token, "--payload", path, "--attributes", "{}"] + credentials)
        #expect(start.exitCode == 64 && start.stderr.contains("--attributes: the payload comes from --payload"), "\(start.stderr)")
        let end = try CommandRunner.run(["activity", "end", "--token", token, "--payload", path, "--dismissal-date", "0"] + credentials)
        #expect(end.exitCode == 64 && end.stderr.contains("--dismissal-date: the payload comes from --payload"), "\(end.stderr)")
    }
}
