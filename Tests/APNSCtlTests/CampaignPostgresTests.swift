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

/// PostgresCampaignWorker.window: the most tokens a worker that loses its lease leaves sent without
/// a committed verdict, so the most one lost lease can duplicate.
private let window = 1024

/// The JSON objects of NDJSON output.
private func objects(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }
}

/// `count` distinct 64-digit tokens.
private func tokens(_ count: Int) -> [String] {
    (0..<count).map { String(repeating: "1", count: 56) + String(format: "%08x", $0) }
}

/// A campaign's world: a private PostgreSQL cluster, `apnsctl serve` recording what it accepts,
/// and a tokens file.
private struct World {
    let postgres: PostgresProcess
    let folder: TemporaryFolder
    let server: ServerProcess
    let all: [String]
    let tokensFile: String
    let recordFile: String

    init(tokens count: Int) throws {
        self.postgres = try PostgresProcess()
        self.folder = try TemporaryFolder("campaign-pg")
        self.all = tokens(count)
        self.tokensFile = try self.folder.file("tokens.txt", contents: self.all.joined(separator: "\n") + "\n")
        self.recordFile = self.folder.url.appendingPathComponent("accepted.ndjson").path
        self.server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet", "--latency", "20ms", "--record", self.recordFile])
    }

    func create(_ name: String, _ extra: [String] = []) throws -> ChildProcess.Result {
        try CommandRunner.run(
            ["campaign", "create", "--postgres", self.postgres.url, "--name", name, "--tokens-file", self.tokensFile, "--payload", alertPayload,
             "--topic", bundle] + extra
        )
    }

    func work(_ name: String, _ extra: [String] = []) -> [String] {
        ["campaign", "work", "--postgres", self.postgres.url, "--name", name, "--url", "https://127.0.0.1:\(self.server.port)",
         "--ca-file", ca] + credentials + ["--json"] + extra
    }

    func stop() {
        if self.server.child.isRunning { _ = self.server.stop() }
        self.postgres.stop()
        self.folder.remove()
    }

    /// `campaign report --json`: the verdicts and the summary, checked against the tokens file and
    /// the server's record (the ground truth): exactly one final verdict per token, in file order,
    /// every accepted token under its apns-id in the record, every token recorded more than once
    /// flagged. Returns the number of pushes recorded beyond one per token.
    func checkReport(_ name: String) throws -> (verdicts: [[String: Any]], duplicates: Int) {
        // The server writes its record through once it stops.
        let served = self.server.stop()
        #expect(served.exitCode == 0, "\(served.stderr)")
        let report = try CommandRunner.run(["campaign", "report", "--postgres", self.postgres.url, "--name", name, "--json"])
        #expect(report.exitCode == 0, "\(report.stderr)")
        let lines = try objects(report.stdout)
        let summary = try #require(lines.last)
        let verdicts = Array(lines.dropLast())
        #expect(summary["summary"] as? Bool == true && summary["total"] as? Int == self.all.count
            && summary["accepted"] as? Int == self.all.count, "\(summary)")
        let counts = ["accepted", "rejected", "failed", "not_sent"].map { summary[$0] as? Int ?? -1 }
        #expect(counts.reduce(0, +) == self.all.count, "\(summary)")
        #expect(verdicts.count == self.all.count)
        #expect(verdicts.enumerated().allSatisfy { position, verdict in
            verdict["index"] as? Int == position && verdict["line"] as? Int == position + 1 && verdict["token"] as? String == self.all[position]
                && verdict["outcome"] as? String == "accepted"
        })
        let recorded = try objects(String(contentsOfFile: self.recordFile, encoding: .utf8))
        var copies: [String: Int] = [:]
        var tokenOfID: [String: String] = [:]
        for entry in recorded {
            let token = try #require(entry["token"] as? String)
            copies[token, default: 0] += 1
            tokenOfID[try #require(entry["apns_id"] as? String).lowercased()] = token
        }
        #expect(verdicts.allSatisfy { tokenOfID[($0["apns_id"] as? String ?? "").lowercased()] == $0["token"] as? String })
        // One apns-id per token, whatever the number of copies: duplicates are visible as such.
        #expect(tokenOfID.count == self.all.count, "\(tokenOfID.count) apns-ids for \(self.all.count) tokens")
        let flagged = Set(verdicts.filter { $0["may_have_been_delivered"] as? Bool == true }.compactMap { $0["token"] as? String })
        let duplicated = copies.filter { $0.value > 1 }
        #expect(duplicated.keys.allSatisfy { flagged.contains($0) }, "\(duplicated.count) duplicated, \(flagged.count) flagged")
        // psql, not postgres-nio: the database holds one row per token, each final.
        let rows = try self.postgres.psql(
            "SELECT count(*), count(*) FILTER (WHERE state = 'accepted') FROM campaign_tokens JOIN campaigns ON campaigns.id = campaign WHERE name = '\(name)'"
        )
        #expect(rows == "\(self.all.count)|\(self.all.count)", "\(rows)")
        return (verdicts, recorded.count - self.all.count)
    }
}

@Suite("apnsctl campaign --postgres: workers on a private PostgreSQL cluster", .serialized, .timeLimit(.minutes(4)))
struct CampaignPostgresTests {
    @Test("create, one worker, report and watch: every token accepted once; bad input to create exits 65 naming the flag, writing nothing")
    func createWorkReport() throws {
        let world = try World(tokens: 3000)
        defer { world.stop() }
        let created = try world.create("spring", ["--batch-size", "500"])
        #expect(created.exitCode == 0, "\(created.stderr)")
        #expect(created.stderr.contains("campaign spring: created with 3000 tokens in batches of 500"), "\(created.stderr)")

        // Refused, and nothing written: the campaign table still holds the one campaign.
        let taken = try world.create("spring")
        #expect(taken.exitCode == 65 && taken.stderr.contains("campaign spring exists"), "\(taken.stderr)")
        let badPayload = try CommandRunner.run(
            ["campaign", "create", "--postgres", world.postgres.url, "--name", "bad", "--tokens-file", world.tokensFile, "--payload",
             try world.folder.file("bad.json", contents: "[1]"), "--topic", bundle]
        )
        #expect(badPayload.exitCode == 65 && badPayload.stderr.contains("--payload"), "\(badPayload.stderr)")
        let badLine = try CommandRunner.run(
            ["campaign", "create", "--postgres", world.postgres.url, "--name", "bad", "--tokens-file",
             try world.folder.file("bad.txt", contents: tokens(3).joined(separator: "\n") + "\nnot-a-token\n"), "--payload", alertPayload,
             "--topic", bundle]
        )
        #expect(badLine.exitCode == 65 && badLine.stderr.contains("bad.txt:4: ") && badLine.stderr.contains("nothing created"),
                "\(badLine.stderr)")
        let badTopic = try world.create("bad", ["--topic", "not a bundle id"])
        #expect(badTopic.exitCode == 65 && badTopic.stderr.contains("--topic"), "\(badTopic.stderr)")
        let badURL = try CommandRunner.run(
            ["campaign", "create", "--postgres", "mysql://x/y", "--name", "bad", "--tokens-file", world.tokensFile, "--payload", alertPayload,
             "--topic", bundle]
        )
        #expect(badURL.exitCode == 65 && badURL.stderr.contains("--postgres: not a postgres:// URL"), "\(badURL.stderr)")
        #expect(try world.postgres.psql("SELECT string_agg(name, ','), (SELECT count(*) FROM campaign_tokens) FROM campaigns") == "spring|3000")

        let worked = try CommandRunner.run(world.work("spring"), timeout: 60)
        #expect(worked.exitCode == 0, "\(worked.stderr)")
        let printed = try objects(worked.stdout)
        #expect(printed.count == 3001 && printed.last?["summary"] as? Bool == true && printed.last?["accepted"] as? Int == 3000,
                "\(printed.last ?? [:])")
        let (verdicts, duplicates) = try world.checkReport("spring")
        #expect(duplicates == 0)
        #expect(verdicts.allSatisfy { $0["may_have_been_delivered"] as? Bool == false && $0["sends"] as? Int == 1 })
        // What the worker printed is what the database holds.
        #expect(Set(printed.dropLast().compactMap { $0["apns_id"] as? String }) == Set(verdicts.compactMap { $0["apns_id"] as? String }))

        // Watching a complete campaign prints every verdict once, then the summary.
        let watched = try CommandRunner.run(["campaign", "watch", "--postgres", world.postgres.url, "--name", "spring", "--json"])
        #expect(watched.exitCode == 0, "\(watched.stderr)")
        let watchedLines = try objects(watched.stdout)
        #expect(watchedLines.count == 3001 && Set(watchedLines.dropLast().compactMap { $0["index"] as? Int }) == Set(0..<3000))
        let missing = try CommandRunner.run(["campaign", "report", "--postgres", world.postgres.url, "--name", "autumn"])
        #expect(missing.exitCode == 66 && missing.stderr.contains("campaign autumn does not exist"), "\(missing.stderr)")
    }
}
