import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ca = KeysExample.path("ca.pem")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let tokens = (0..<3).map { String(repeating: "0", count: 56) + String(format: "%08x", $0) }

/// A Live Activity update whose ETA is Unix seconds (LA001), timestamped now.
private func unixETAPayload() -> String {
    #"{"aps":{"event":"update","timestamp":\#(Int(Date().timeIntervalSince1970)),"content-state":{"eta":1767225600}}}"#
}

/// The JSON objects of NDJSON output.
private func objects(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }
}

/// Lints as a sender meets them: a `warning:` on stderr once per notification, the ids in every
/// NDJSON line as `lints`, never blocking the send, and `--no-lint ID` to silence one.
@Suite("Lints from apnsctl send and activity: warnings, the lints field, --no-lint", .serialized, .timeLimit(.minutes(2)))
struct LintCLITests {
    @Test("send --tokens-file with a shared payload: one warning, every verdict line carries the lint ids, all accepted")
    func sendWarnsOnceAndTagsLines() throws {
        let folder = try TemporaryFolder("lint-cli")
        defer { folder.remove() }
        let payload = try folder.file("update.json", contents: unixETAPayload())
        let file = try folder.file("tokens.txt", contents: tokens.joined(separator: "\n") + "\n")
        let server = try ServerProcess(["--topic", bundle, "--quiet"])
        let arguments = ["send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] + credentials + [
            "--topic", bundle, "--push-type", "liveactivity", "--payload", payload, "--tokens-file", file, "--json",
        ]
        let linted = try CommandRunner.run(arguments)
        let silenced = try CommandRunner.run(arguments + ["--no-lint", "la001"])
        _ = server.stop()

        #expect(linted.exitCode == 0, "\(linted.stderr)")
        let warnings = linted.stderr.split(separator: "\n").filter { $0.hasPrefix("warning: LA001: aps.content-state.eta 1767225600 looks like Unix seconds") }
        #expect(warnings.count == 1, "once per notification, not per token: \(linted.stderr)")
        let lines = try objects(linted.stdout).filter { $0["summary"] == nil }
        #expect(lines.count == tokens.count)
        #expect(lines.allSatisfy { $0["outcome"] as? String == "accepted" && $0["lints"] as? [String] == ["LA001"] }, "\(linted.stdout)")

        #expect(silenced.exitCode == 0 && !silenced.stderr.contains("LA001"), "\(silenced.stderr)")
        #expect(try objects(silenced.stdout).allSatisfy { $0["lints"] == nil }, "\(silenced.stdout)")
    }

    @Test("activity update: the warning, the lints field in its JSON line; --dry-run warns too")
    func activityWarns() throws {
        let server = try ServerProcess(["--topic", bundle, "--quiet"])
        let update = try CommandRunner.run(["activity", "update", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] + credentials + [
            "--topic", bundle, "--token", tokens[0], "--content-state", #"{"eta":1767225600}"#, "--json",
        ])
        _ = server.stop()
        #expect(update.exitCode == 0, "\(update.stderr)")
        #expect(update.stderr.contains("warning: LA001: aps.content-state.eta 1767225600"), "\(update.stderr)")
        let verdict = try #require(try objects(update.stdout).first)
        #expect(verdict["lints"] as? [String] == ["LA001"], "\(update.stdout)")

        let dryRun = try CommandRunner.run(["activity", "update", "--dry-run"] + credentials + [
            "--topic", bundle, "--token", tokens[0], "--content-state", #"{"eta":1767225600}"#,
        ])
        #expect(dryRun.exitCode == 0 && dryRun.stderr.contains("warning: LA001:"), "\(dryRun.stderr)")
    }

    @Test("An unknown --no-lint id is a usage error (64) that lists the known ids and suggests the nearest", arguments: [
        ["send", "--dry-run", "--topic", bundle, "--token", tokens[0], "--title", "Hi"],
        ["activity", "update", "--dry-run", "--topic", bundle, "--token", tokens[0], "--content-state", "{}"],
    ])
    func unknownID(_ command: [String]) throws {
        let result = try CommandRunner.run(command + ["--no-lint", "LA01"])
        #expect(result.exitCode == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--no-lint LA01: no such lint"), "\(result.stderr)")
        #expect(result.stderr.contains("known: LA001, LA002, LA003, LA004, LA005, LA006, LA007, BG001, BG002, AL001, AL002"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}
