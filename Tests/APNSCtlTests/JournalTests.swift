import ForgeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ca = KeysExample.path("ca.pem")
private let alertPayload = KeysExample.path("payloads/alert.json")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let registerKey = ["--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1"]
/// JournalCampaign.window: the most tokens one crash can send twice.
private let window = 4096

/// The JSON objects of NDJSON output; a line cut short by SIGKILL (no newline yet) is left out.
private func objects(_ text: String) throws -> [[String: Any]] {
    let complete = text.hasSuffix("\n") ? Substring(text) : text[..<(text.lastIndex(of: "\n") ?? text.startIndex)]
    return try complete.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }
}

@Suite("apnsctl send --journal: a campaign killed with SIGKILL and re-run", .serialized, .timeLimit(.minutes(3)))
struct JournalTests {
    @Test("Killed mid-run and re-run: one final verdict per token, every accepted push in the server's record, every duplicate flagged and within the window")
    func killedAndResumed() throws {
        let folder = try TemporaryFolder("send-journal")
        defer { folder.remove() }
        let all = (0..<20_000).map { String(format: "%064x", $0 + 1) }
        let tokensFile = try folder.file("tokens.txt", contents: all.joined(separator: "\n") + "\n")
        let recordFile = folder.url.appendingPathComponent("accepted.ndjson").path
        let journal = folder.url.appendingPathComponent("campaign.db").path
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet", "--latency", "20ms", "--record", recordFile])
        let command = ["send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] + credentials
            + ["--topic", bundle, "--tokens-file", tokensFile, "--payload", alertPayload, "--journal", journal, "--json"]

        // The first run is killed once it has printed (so committed) some verdicts: no sleeps.
        let first = try ChildProcess(executable: CommandRunner.binary, arguments: command, environment: CommandRunner.environment())
        #expect(first.waitForStandardOutput(lines: 500, timeout: .seconds(60)))
        first.signal(SIGKILL)
        let killed = first.finish(timeout: .seconds(60))
        let printed = try objects(killed.stdout)
        #expect(!printed.isEmpty && printed.count < all.count, "\(printed.count) verdicts printed before SIGKILL")

        let resumed = try CommandRunner.run(command)
        #expect(resumed.exitCode == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("journal: resuming campaign "), "\(resumed.stderr)")
        // A changed input is refused, naming what changed; nothing is sent.
        let changed = try CommandRunner.run(
            Array(command.dropLast(5)) + ["--title", "Changed", "--journal", journal, "--json"]
        )
        #expect(changed.exitCode == 65 && changed.stderr.contains("changed payload"), "\(changed.stderr)")
        let stopped = server.stop()
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")

        let report = try CommandRunner.run(["campaign", "report", "--journal", journal, "--json"])
        #expect(report.exitCode == 0, "\(report.stderr)")
        let lines = try objects(report.stdout)
        let summary = try #require(lines.last)
        let verdicts = lines.dropLast()
        #expect(summary["summary"] as? Bool == true && summary["total"] as? Int == all.count && summary["accepted"] as? Int == all.count,
                "\(summary)")
        // Exactly one final verdict per token, in file order.
        #expect(verdicts.count == all.count)
        #expect(verdicts.enumerated().allSatisfy { position, verdict in
            verdict["index"] as? Int == position && verdict["token"] as? String == all[position] && verdict["outcome"] as? String == "accepted"
        })

        // The server's record is the ground truth: every accepted push is in it under its apns-id.
        let recorded = try objects(String(contentsOfFile: recordFile, encoding: .utf8))
        var copies: [String: Int] = [:]
        var tokenOfID: [String: String] = [:]
        for entry in recorded {
            let token = try #require(entry["token"] as? String)
            copies[token, default: 0] += 1
            tokenOfID[try #require(entry["apns_id"] as? String).lowercased()] = token
        }
        #expect(verdicts.allSatisfy { tokenOfID[($0["apns_id"] as? String ?? "").lowercased()] == $0["token"] as? String })
        // One apns-id per token, whatever the number of copies: duplicates are visible as such.
        #expect(tokenOfID.count == all.count, "\(tokenOfID.count) apns-ids for \(all.count) tokens")
        // Every token the server saw more than once is flagged; the duplicates stay within the window.
        let flagged = Set(verdicts.filter { $0["may_have_been_delivered"] as? Bool == true }.compactMap { $0["token"] as? String })
        let duplicated = copies.filter { $0.value > 1 }
        #expect(duplicated.keys.allSatisfy { flagged.contains($0) }, "\(duplicated.count) duplicated, \(flagged.count) flagged")
        #expect(recorded.count - all.count <= window, "\(recorded.count - all.count) duplicates")
        // The resumed run printed the same flags, once each token's verdict was committed.
        let resumedFlagged = try objects(resumed.stdout).dropLast().filter { $0["may_have_been_delivered"] as? Bool == true }
        #expect(Set(resumedFlagged.compactMap { $0["token"] as? String }) == flagged)
        // A verdict printed before the kill was committed: its token was never sent again.
        #expect(printed.allSatisfy { copies[$0["token"] as? String ?? ""] == 1 })
    }

    @Test("An endpoint that fails TLS: exit 69, and every token stays to send (not_sent, not flagged): nothing left marked as sending")
    func unreachable() throws {
        let folder = try TemporaryFolder("send-journal")
        defer { folder.remove() }
        let all = (0..<3000).map { String(format: "%064x", $0 + 1) }
        let tokensFile = try folder.file("tokens.txt", contents: all.joined(separator: "\n") + "\n")
        let journal = folder.url.appendingPathComponent("campaign.db").path
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        // Without --ca-file the test CA is not trusted: nothing reaches the server.
        let sent = try CommandRunner.run(
            ["send", "--url", "https://127.0.0.1:\(server.port)"] + credentials
                + ["--topic", bundle, "--tokens-file", tokensFile, "--payload", alertPayload, "--journal", journal, "--json"]
        )
        _ = server.stop()
        #expect(sent.exitCode == 69, "\(sent.stderr)")
        let report = try CommandRunner.run(["campaign", "report", "--journal", journal, "--json"])
        let lines = try objects(report.stdout)
        #expect(lines.count == all.count + 1)
        #expect(lines.dropLast().allSatisfy { $0["outcome"] as? String == "not_sent" && $0["may_have_been_delivered"] as? Bool == false
            && $0["sends"] as? Int == 0 }, "\(lines.prefix(2))")
        #expect(lines.last?["not_sent"] as? Int == all.count, "\(lines.last ?? [:])")
    }

    @Test("--journal needs a tokens file (not stdin) and a shared payload, and takes no --resume-from")
    func usage() throws {
        let base = ["send", "--url", "https://127.0.0.1:9", "--ca-file", ca] + credentials + ["--topic", bundle]
        let noFile = try CommandRunner.run(base + ["--token", String(repeating: "ab", count: 32), "--title", "Hi", "--journal", "j.db"])
        #expect(noFile.exitCode == 64 && noFile.stderr.contains("--journal applies to --tokens-file"), "\(noFile.stderr)")
        let stdin = try CommandRunner.run(base + ["--tokens-file", "-", "--title", "Hi", "--journal", "j.db"])
        #expect(stdin.exitCode == 64 && stdin.stderr.contains("not standard input"), "\(stdin.stderr)")
        let resume = try CommandRunner.run(base + ["--tokens-file", "t.txt", "--title", "Hi", "--journal", "j.db", "--resume-from", "2"])
        #expect(resume.exitCode == 64 && resume.stderr.contains("--resume-from does not apply"), "\(resume.stderr)")
        let noPayload = try CommandRunner.run(base + ["--tokens-file", "t.txt", "--journal", "j.db"])
        #expect(noPayload.exitCode == 64 && noPayload.stderr.contains("--journal sends one shared payload"), "\(noPayload.stderr)")
        let missing = try CommandRunner.run(["campaign", "report", "--journal", "/nonexistent/campaign.db"])
        #expect(missing.exitCode == 66 && missing.stderr.contains("does not exist"), "\(missing.stderr)")
    }
}
