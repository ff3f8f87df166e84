import ForgeTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

private let bundle = "com.example.forgepush"
private let alertPayload = KeysExample.path("payloads/alert.json")

/// keys-example's test key: registered with the server, signing the workers' provider tokens.
private enum TestKey {
    static let file = KeysExample.path("AuthKey_FORGEKEY01.p8")
    static let server = ["--register-key", "\(file):FORGEKEY01:FORGETEAM1", "--topic", bundle]
    /// With the CA that signed the server's certificate.
    static let worker = ["--key-file", file, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1", "--ca-file", KeysExample.path("ca.pem")]
}

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
        self.server = try ServerProcess(TestKey.server + ["--quiet", "--latency", "20ms", "--record", self.recordFile])
    }

    func create(_ name: String, _ extra: [String] = []) throws -> ChildProcess.Result {
        try CommandRunner.run(
            ["campaign", "create", "--postgres", self.postgres.url, "--name", name, "--tokens-file", self.tokensFile, "--payload", alertPayload,
             "--topic", bundle] + extra
        )
    }

    func work(_ name: String, _ extra: [String] = []) -> [String] {
        ["campaign", "work", "--postgres", self.postgres.url, "--name", name, "--url", "https://127.0.0.1:\(self.server.port)"]
            + TestKey.worker + ["--json"] + extra
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
        let record = try ServerRecord(path: self.recordFile)
        #expect(record.recordsEvery(verdicts))
        // One apns-id per token, whatever the number of copies: duplicates are visible as such.
        #expect(record.tokenOfID.count == self.all.count, "\(record.tokenOfID.count) apns-ids for \(self.all.count) tokens")
        let flagged = Set(verdicts.filter { $0["may_have_been_delivered"] as? Bool == true }.compactMap { $0["token"] as? String })
        #expect(record.duplicated.isSubset(of: flagged), "\(record.duplicated.count) duplicated, \(flagged.count) flagged")
        // psql, not postgres-nio: the database holds one row per token, each final.
        let rows = try self.postgres.psql(
            "SELECT count(*), count(*) FILTER (WHERE state = 'accepted') FROM campaign_tokens JOIN campaigns ON campaigns.id = campaign WHERE name = '\(name)'"
        )
        #expect(rows == "\(self.all.count)|\(self.all.count)", "\(rows)")
        return (verdicts, record.count - self.all.count)
    }
}

@Suite("apnsctl campaign --postgres: workers on a private PostgreSQL cluster", .serialized, .timeLimit(.minutes(4)))
struct CampaignPostgresTests {
    @Test("create, one worker, report and watch: every token accepted once; bad input to create exits 65 naming the flag, writing nothing")
    func createWorkReport() throws {
        let world = try World(tokens: 3000)
        defer { world.stop() }
        // A bad line found while COPY streams the file rolls the whole create back, tables included.
        let badLine = try CommandRunner.run(
            ["campaign", "create", "--postgres", world.postgres.url, "--name", "bad", "--tokens-file",
             try world.folder.file("bad.txt", contents: tokens(3).joined(separator: "\n") + "\nnot-a-token\n"), "--payload", alertPayload,
             "--topic", bundle]
        )
        #expect(badLine.exitCode == 65 && badLine.stderr.contains("bad.txt:4: ") && badLine.stderr.contains("nothing created"),
                "\(badLine.stderr)")
        #expect(try world.postgres.psql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'campaign%'") == "0")
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

    @Test(
        "Four workers, one killed with SIGKILL and one stopped with SIGSTOP past its lease: one final verdict per token, every duplicate flagged and within the bound"
    )
    func fourWorkersKilledAndStopped() throws {
        let world = try World(tokens: 20_000)
        defer { world.stop() }
        let created = try world.create("summer", ["--batch-size", "250"])
        #expect(created.exitCode == 0, "\(created.stderr)")
        let lease = 2
        // A watcher from the start: it must print each final verdict once, as the workers commit them.
        let watcher = try ChildProcess(
            executable: CommandRunner.binary, arguments: ["campaign", "watch", "--postgres", world.postgres.url, "--name", "summer", "--json"],
            environment: CommandRunner.environment()
        )
        // Few streams each (--concurrency 5 over at most 4 connections, 20 ms a push): slow enough
        // that batches are still pending when a lease runs out, so the scenario happens as written.
        let workers = try (0..<4).map { number in
            try ChildProcess(
                executable: CommandRunner.binary,
                arguments: world.work("summer", ["--lease", String(lease), "--owner", "w\(number)", "--concurrency", "5"]),
                environment: CommandRunner.environment()
            )
        }
        /// The batch `owner` holds and its tokens marked sending (handed to its sender, no verdict
        /// committed), polled until there are some (bounded); nil if never seen.
        func held(by owner: String) throws -> (batch: Int, epoch: Int)? {
            for _ in 0..<500 {
                let row = try world.postgres.psql(
                    """
                    SELECT b.batch, b.lease_epoch FROM campaign_batches b JOIN campaign_tokens t
                        ON t.campaign = b.campaign AND t.idx >= b.first_idx AND t.idx < b.end_idx AND t.state = 'sending'
                    WHERE b.lease_owner = '\(owner)' AND b.state = 'leased' GROUP BY b.batch, b.lease_epoch
                    """
                )
                let fields = row.split(separator: "|").compactMap { Int($0) }
                if fields.count == 2 { return (fields[0], fields[1]) }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return nil
        }
        /// The tokens of `batch` left sending, read while their worker can no longer write.
        func sending(in batch: Int) throws -> Set<Int> {
            let text = try world.postgres.psql(
                """
                SELECT t.idx FROM campaign_tokens t JOIN campaign_batches b ON t.campaign = b.campaign AND t.idx >= b.first_idx
                    AND t.idx < b.end_idx WHERE b.batch = \(batch) AND t.state = 'sending'
                """
            )
            return Set(text.split(separator: "\n").compactMap { Int($0) })
        }

        // Killed while it holds a batch with tokens on their way, once it has committed (so
        // printed) some verdicts.
        #expect(workers[0].waitForStandardOutput(lines: 300, timeout: .seconds(60)))
        let killedBatch = try #require(try held(by: "w0"))
        workers[0].signal(SIGKILL)
        _ = workers[0].finish(timeout: .seconds(30))
        let leftByKilled = try sending(in: killedBatch.batch)

        // Stopped while it holds a batch, until another worker holds that batch with a higher epoch
        // (or twice the lease has passed), then continued.
        #expect(workers[1].waitForStandardOutput(lines: 300, timeout: .seconds(60)))
        let stoppedBatch = try #require(try held(by: "w1"))
        workers[1].signal(SIGSTOP)
        let stopped = ContinuousClock.now
        let leftByStopped = try sending(in: stoppedBatch.batch)
        var takenOver = false
        while !takenOver, ContinuousClock.now - stopped < .seconds(2 * lease) {
            let epoch = try world.postgres.psql(
                "SELECT lease_epoch FROM campaign_batches WHERE batch = \(stoppedBatch.batch) AND lease_owner IS DISTINCT FROM 'w1'"
            )
            takenOver = Int(epoch).map { $0 > stoppedBatch.epoch } ?? false
            if !takenOver { Thread.sleep(forTimeInterval: 0.1) }
        }
        workers[1].signal(SIGCONT)

        var results: [ChildProcess.Result] = []
        for worker in workers.dropFirst() {
            let result = worker.finish(timeout: .seconds(90))
            #expect(result.exitCode == 0, "\(result.stderr)")
            results.append(result)
        }
        if takenOver {
            // The stopped worker woke to a lease it no longer held: fenced, it said so and went on.
            #expect(results[0].stderr.contains("lease on batch \(stoppedBatch.batch) (epoch \(stoppedBatch.epoch)) lost"), "\(results[0].stderr)")
        }
        let watched = watcher.finish(timeout: .seconds(30))
        #expect(watched.exitCode == 0, "\(watched.stderr)")

        let (verdicts, duplicates) = try world.checkReport("summer")
        // Only a token left sending by a lost lease can be sent twice, and each of those is flagged.
        let uncertain = leftByKilled.union(takenOver ? leftByStopped : [])
        #expect(!leftByKilled.isEmpty && uncertain.count <= 2 * window)
        #expect(duplicates <= uncertain.count, "\(duplicates) duplicates, \(uncertain.count) tokens left sending")
        let flagged = Set(verdicts.filter { $0["may_have_been_delivered"] as? Bool == true }.compactMap { $0["index"] as? Int })
        #expect(uncertain.isSubset(of: flagged), "\(uncertain.subtracting(flagged).count) left sending but not flagged")
        #expect(verdicts.allSatisfy { ($0["sends"] as? Int ?? 0) == (flagged.contains($0["index"] as? Int ?? -1) ? 2 : 1) })
        // The watcher printed each token's final verdict once, then the same summary.
        let watchedLines = try objects(watched.stdout)
        let watchedIndices = watchedLines.dropLast().compactMap { $0["index"] as? Int }
        #expect(watchedIndices.count == world.all.count && Set(watchedIndices) == Set(0..<world.all.count))
        #expect(watchedLines.last?["accepted"] as? Int == world.all.count)
        print("campaign --postgres crash test: \(world.all.count) tokens, \(verdicts.count) verdicts, \(leftByKilled.count) left sending by the killed "
            + "worker, \(leftByStopped.count) by the stopped one (taken over: \(takenOver)), \(duplicates) duplicates, \(flagged.count) flagged")
    }

    @Test("Ctrl-C: the worker stops claiming, its pushes on their way get their answers, the batch is given back (exit 130); another worker finishes with no duplicate")
    func interrupted() throws {
        let world = try World(tokens: 3000)
        defer { world.stop() }
        #expect(try world.create("winter", ["--batch-size", "1000"]).exitCode == 0)
        let worker = try ChildProcess(
            executable: CommandRunner.binary, arguments: world.work("winter", ["--owner", "w"]), environment: CommandRunner.environment()
        )
        #expect(worker.waitForStandardOutput(lines: 300, timeout: .seconds(60)))
        worker.signal(SIGINT)
        let stopped = worker.finish(timeout: .seconds(60))
        #expect(stopped.exitCode == 130 && stopped.stderr.contains("interrupted: batch given back"), "\(stopped.stderr)")
        // Given back at once, not left to expire with its 30 s lease; nothing left marked as sending.
        #expect(try world.postgres.psql("SELECT count(*) FROM campaign_batches WHERE state = 'leased'") == "0")
        #expect(try world.postgres.psql("SELECT count(*) FROM campaign_tokens WHERE state = 'sending'") == "0")
        let finished = try CommandRunner.run(world.work("winter"), timeout: 60)
        #expect(finished.exitCode == 0, "\(finished.stderr)")
        let (_, duplicates) = try world.checkReport("winter")
        #expect(duplicates == 0)
    }
}
