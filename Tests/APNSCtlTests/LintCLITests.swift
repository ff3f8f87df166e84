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

    /// LA007 in bulk: a file that names one activity several times (a feed of score changes) sends
    /// it priority-10 updates in quick succession. The repeats are tagged, the first is not, another
    /// activity is not; priority 5 spends no budget; per-line payloads count too; `--no-lint` silences it.
    @Test("send --tokens-file naming an activity twice at priority 10: LA007 on the repeats only, one warning; not at priority 5")
    func frequentUpdatesAcrossAFile() throws {
        let folder = try TemporaryFolder("lint-cli")
        defer { folder.remove() }
        let now = Int(Date().timeIntervalSince1970)
        let update = #"{"aps":{"event":"update","timestamp":\#(now),"content-state":{"score":"1-0"}}}"#
        let payload = try folder.file("update.json", contents: update)
        let activity = String(repeating: "ab", count: 32), other = String(repeating: "cd", count: 32)
        let shared = try folder.file("tokens.txt", contents: [activity, other, activity, activity].joined(separator: "\n") + "\n")
        let perLine = try folder.file("lines.ndjson", contents: [activity, other, activity].map {
            #"{"token":"\#($0)","payload":\#(update)}"#
        }.joined(separator: "\n") + "\n")
        let server = try ServerProcess(["--topic", bundle, "--quiet"])
        let base = ["send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] + credentials + [
            "--topic", bundle, "--push-type", "liveactivity", "--json",
        ]
        let urgent = try CommandRunner.run(base + ["--payload", payload, "--tokens-file", shared])
        let gentle = try CommandRunner.run(base + ["--payload", payload, "--tokens-file", shared, "--priority", "5"])
        let lines = try CommandRunner.run(base + ["--tokens-file", perLine])
        let silenced = try CommandRunner.run(base + ["--payload", payload, "--tokens-file", shared, "--no-lint", "LA007"])
        _ = server.stop()

        for result in [urgent, gentle, lines, silenced] { #expect(result.exitCode == 0, "\(result.stderr)") }
        let tagged = { (result: CommandRunner.Result) throws -> [Int] in
            try objects(result.stdout).filter { ($0["lints"] as? [String])?.contains("LA007") == true }.compactMap { $0["line"] as? Int }.sorted()
        }
        #expect(try tagged(urgent) == [3, 4], "\(urgent.stdout)")
        let warnings = urgent.stderr.split(separator: "\n").filter { $0.hasPrefix("warning: LA007: line 3, after line 1 to the same token: a priority-10 update") }
        #expect(warnings.count == 1 && urgent.stderr.contains("1 more line like it"), "\(urgent.stderr)")
        #expect(try tagged(gentle).isEmpty && !gentle.stderr.contains("LA007"), "priority 5 spends no budget: \(gentle.stderr)")
        #expect(try tagged(lines) == [3], "\(lines.stdout)")
        #expect(try tagged(silenced).isEmpty && !silenced.stderr.contains("LA007"), "\(silenced.stderr)")
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
        ["lint", "payload.json"],
    ])
    func unknownID(_ command: [String]) throws {
        let result = try CommandRunner.run(command + ["--no-lint", "LA01"])
        #expect(result.exitCode == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--no-lint LA01: no such lint"), "\(result.stderr)")
        #expect(result.stderr.contains("known: LA001, LA002, LA003, LA004, LA005, LA006, LA007, LA008, LA009, LA010, LA011, LA012, LA013, LA014, "
            + "BG001, BG002, AL001, AL002"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}
