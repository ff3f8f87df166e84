import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let ca = KeysExample.path("ca.pem")
private let credentials = ["--key-file", KeysExample.path("AuthKey_FORGEKEY01.p8"), "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let token = String(repeating: "ab", count: 32)

/// `.apns` files (simctl's format): one fixture for `xcrun simctl push` on a Mac and apnsctl here.
@Suite("apnsctl send and .apns files", .serialized, .timeLimit(.minutes(2)))
struct SimulatorFileCLITests {
    @Test("--dry-run --write-apns writes the payload with its bundle; sending that file needs no --topic and is accepted as the same push")
    func writeThenSend() throws {
        let folder = try TemporaryFolder("apns-file")
        defer { folder.remove() }
        let path = folder.url.appendingPathComponent("hello.apns").path
        let written = try CommandRunner.run(["send", "--dry-run", "--topic", bundle, "--token", token, "--title", "Hi", "--body", "There",
                                             "--write-apns", path])
        #expect(written.exitCode == 0, "\(written.stderr)")
        let file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        #expect(file["Simulator Target Bundle"] as? String == bundle)
        let alert = (file["aps"] as? [String: Any])?["alert"] as? [String: Any]
        #expect(alert?["title"] as? String == "Hi" && alert?["body"] as? String == "There", "\(file)")

        let server = try ServerProcess(["--topic", bundle, "--json"])
        let sent = try CommandRunner.run(["send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] + credentials
                                         + ["--token", token, "--payload", path, "--json"])
        let served = server.stop().stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(sent.exitCode == 0 && sent.stdout.contains(#""outcome":"accepted""#), "\(sent.stdout)\(sent.stderr)")
        #expect(served.first?["topic"] as? String == bundle && served.first?["status"] as? Int == 200, "\(served)")
    }

    @Test("A .apns file simctl refuses: 65, naming the file and the rule, nothing sent", arguments: [
        ("not-object.apns", "[1]", [String](), "a .apns file must be one JSON object"),
        ("no-aps.apns", #"{"alert":"x"}"#, [], #"a .apns file must have a top-level "aps" object"#),
        ("large.apns", #"{"aps":{"alert":"\#(String(repeating: "z", count: 4100))"}}"#, [], "a .apns file must be at most 4096 bytes"),
        ("voip.apns", #"{"Simulator Target Bundle":"com.example.forgepush","aps":{}}"#, ["--push-type", "voip"],
         "a .apns file holds a notification to an app, as simctl pushes it: push type alert, background, liveactivity, not voip"),
    ])
    func refused(_ name: String, _ contents: String, _ flags: [String], _ rule: String) throws {
        let folder = try TemporaryFolder("apns-file")
        defer { folder.remove() }
        let path = try folder.file(name, contents: contents)
        // Port 9 on loopback: nothing listens, and nothing must be tried.
        let result = try CommandRunner.run(["send", "--url", "https://127.0.0.1:9", "--topic", bundle, "--token", token, "--payload", path]
                                           + credentials + flags)
        #expect(result.exitCode == 65, "\(result.stderr)")
        #expect(result.stderr.contains("--payload '\(path)': \(rule)"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}
