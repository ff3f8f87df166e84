import ForgeTestSupport
import Foundation
import Testing

// `apnsctl send --tokens-file … --json` against Tests/FaultServer/fault_server.py: an HTTP/2 server
// that is not ForgePush's code (Python, hyper-h2, the `cryptography` package), injects faults chosen
// by each token, and records every request it saw. Each verdict line is checked against that record.
//
// What a record says about one token's copies (see the table at the top of fault_server.py):
// - answered: processed and answered; 200 is a delivery, an error status a definite non-delivery;
// - reset, dropped: processed and never answered;
// - closed-unprocessed, stalled: reached a server that had hung up or stopped answering, never
//   answered; the client cannot tell these from processed copies, so they count as "may have been
//   processed" (a real APNs behind a dead connection may have delivered them);
// - refused, goaway-unprocessed: the server said it did not process them; never attempts;
// - closed-before-preface: reached a connection the server closed before it sent anything, not
//   even its preface: not processed, and the client can tell; never attempts;
// - partial: the request never arrived whole; the client may count it either way.

private let serverScript = PackageRoot.directory.appendingPathComponent("Tests/FaultServer/fault_server.py")
private let sendFlags = [
    "--ca-file", KeysExample.path("ca.pem"),
    "--key-file", KeysExample.path("AuthKey_FORGEKEY01.p8"), "--key-id", "FORGEKEY01",
    "--team-id", "FORGETEAM1", "--topic", "com.example.forgepush", "--title", "Hi", "--json",
]

/// The Python of the venv `make pydeps` creates: `FORGE_TEST_PYTHON` (set by the Makefile), else
/// `.build-venv/bin/python` in the package. Missing is a failure, never a skip: a skipped oracle is
/// a check that cannot fail.
func venvPython() throws -> URL {
    var tried: [String] = []
    if let path = ProcessInfo.processInfo.environment["FORGE_TEST_PYTHON"], !path.isEmpty {
        if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
        tried.append("FORGE_TEST_PYTHON=\(path)")
    }
    let fallback = PackageRoot.directory.appendingPathComponent(".build-venv/bin/python")
    if FileManager.default.isExecutableFile(atPath: fallback.path) { return fallback }
    tried.append(fallback.path)
    throw CLIFailureForTests(message: "no Python with h2 and cryptography for the fault server (tried \(tried.joined(separator: ", "))): "
                             + "run `make test` (or `make pydeps`), which creates .build-venv/")
}

/// A token whose first hex digits select a fault of fault_server.py: `marker` (two digits), then
/// `n` (one digit, "the first n times"), then `index` to make it unique.
private func token(_ marker: String, n: Int = 0, _ index: Int) -> String {
    precondition(marker.count == 2 && (0..<16).contains(n))
    return marker + String(n, radix: 16) + String(format: "%061x", index)
}

/// One `apnsctl send` run and what the server recorded meanwhile.
private struct OracleRun {
    var tokens: [String]
    var result: CommandRunner.Result
    /// Every record line of the server (none when nothing listened).
    var records: [[String: Any]]

    var requestRecords: [[String: Any]] { self.records.filter { $0["event"] as? String == "request" } }
    /// Connections that completed the TLS handshake.
    var connections: Int { self.records.filter { $0["event"] as? String == "connection" }.count }

    /// Starts the fault server with `serverFlags` (or, with nil, leaves a bound port that nothing
    /// listens on), sends `tokens` from a file, stops the server and reads its record.
    static func run(_ tokens: [String], serverFlags: [String]?, timeout: TimeInterval = 90) throws -> OracleRun {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fault-oracle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let tokensFile = directory.appendingPathComponent("tokens.txt")
        try Data((tokens.joined(separator: "\n") + "\n").utf8).write(to: tokensFile)
        let recordFile = directory.appendingPathComponent("record.ndjson")

        guard let serverFlags else {
            let port = try ClosedPort()
            defer { port.close() }
            let result = try CommandRunner.run(
                ["send", "--url", "https://127.0.0.1:\(port.port)", "--tokens-file", tokensFile.path] + sendFlags, timeout: timeout
            )
            return OracleRun(tokens: tokens, result: result, records: [])
        }
        let server = try ServerProcess(
            executable: try venvPython(), arguments: [serverScript.path, "--record", recordFile.path] + serverFlags,
            portPrefix: "PORT ", keepsInputOpen: true
        )
        let result: CommandRunner.Result
        do {
            result = try CommandRunner.run(
                ["send", "--url", "https://127.0.0.1:\(server.port)", "--tokens-file", tokensFile.path] + sendFlags, timeout: timeout
            )
        } catch {
            server.stop()
            throw error
        }
        // Stopped before the record is read: a stalled connection's requests are recorded on the way out.
        let stopped = server.stop()
        #expect(stopped.exitCode == 0, "fault server: \(stopped.stderr)")
        let text = (try? String(contentsOf: recordFile, encoding: .utf8)) ?? ""
        let records = try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "record line: \(line)")
        }
        return OracleRun(tokens: tokens, result: result, records: records)
    }
}

/// What the server saw of one token.
private struct Copies {
    /// Answers in the order given: (status, reason, apns-id).
    var answers: [(status: Int, reason: String?, apnsID: String?)] = []
    /// Copies that may have been processed and got no answer (reset, dropped, closed-unprocessed, stalled).
    var unanswered = 0
    var partial = 0
    var refused = 0
    var goawayUnprocessed = 0
    /// Copies on a connection closed before the server's preface: not processed.
    var beforePreface = 0
    /// The last copy the server really processed: "answered <status> <reason>", "reset" or "dropped".
    var lastProcessed: String?

    /// Copies the server processed or may have processed: attempts, by the target semantics.
    var attempts: Int { self.answers.count + self.unanswered }
    /// Copies that may have been delivered: accepted ones and unanswered ones. An error answer is a
    /// definite non-delivery.
    var deliveries: Int { self.answers.filter { $0.status == 200 }.count + self.unanswered }
    /// The flag must be set: a copy went unanswered, or more than one copy may have been delivered.
    var mustFlag: Bool { self.unanswered > 0 || self.deliveries > 1 }
    /// The flag may be set: as above, counting incomplete copies as possibly complete.
    var mayFlag: Bool { self.unanswered + self.partial > 0 || self.deliveries + self.partial > 1 }
}

/// Checks the verdict lines of a run against the server's record and the target semantics. Each
/// rule is one expectation that names the rule and up to three offending tokens.
private struct Oracle {
    var run: OracleRun
    var verdicts: [[String: Any]] = []
    var summary: [String: Any]?
    var copies: [String: Copies] = [:]
    let sourceLocation: SourceLocation

    init(_ run: OracleRun, sourceLocation: SourceLocation = #_sourceLocation) {
        self.run = run
        self.sourceLocation = sourceLocation
        var unparsable: [String] = []
        for line in run.result.stdout.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                unparsable.append(String(line))
                continue
            }
            if object["summary"] as? Bool == true {
                #expect(self.summary == nil, "a second summary: \(line)", sourceLocation: sourceLocation)
                self.summary = object
            } else {
                #expect(self.summary == nil, "a verdict after the summary: \(line)", sourceLocation: sourceLocation)
                self.verdicts.append(object)
            }
        }
        #expect(unparsable.isEmpty, "stdout lines that are not JSON objects: \(unparsable.prefix(3))", sourceLocation: sourceLocation)
        #expect(self.summary != nil, "no summary object; exit \(run.result.exitCode), stderr: \(run.result.stderr.suffix(2000))",
                sourceLocation: sourceLocation)
        for record in run.requestRecords {
            guard let token = record["token"] as? String else { continue }
            var copies = self.copies[token] ?? Copies()
            switch record["action"] as? String {
            case "answered":
                let status = record["status"] as? Int ?? 0
                let reason = record["reason"] as? String
                copies.answers.append((status, reason, record["apns_id"] as? String))
                copies.lastProcessed = "answered \(status) \(reason ?? "-")"
            case "reset", "dropped":
                copies.unanswered += 1
                copies.lastProcessed = record["action"] as? String
            case "closed-unprocessed", "stalled": copies.unanswered += 1
            case "partial": copies.partial += 1
            case "refused": copies.refused += 1
            case "goaway-unprocessed": copies.goawayUnprocessed += 1
            case "closed-before-preface": copies.beforePreface += 1
            default: break
            }
            self.copies[token] = copies
        }
    }

    private func expectNone(_ rule: String, _ offenders: [String]) {
        #expect(offenders.isEmpty, "\(rule): \(offenders.count) token(s), e.g. \(offenders.prefix(3).joined(separator: " | "))",
                sourceLocation: self.sourceLocation)
    }

    private static func describe(_ verdict: [String: Any]) -> String {
        let data = try? JSONSerialization.data(withJSONObject: verdict, options: [.sortedKeys])
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "\(verdict)"
    }

    private func describe(_ token: String, _ verdict: [String: Any]) -> String {
        let c = self.copies[token] ?? Copies()
        return "\(Self.describe(verdict)) server: answers \(c.answers.map { "\($0.status)" }), unanswered \(c.unanswered), "
            + "partial \(c.partial), refused \(c.refused), goaway-unprocessed \(c.goawayUnprocessed)"
    }

    /// The rules every run keeps.
    /// - Parameters:
    ///   - mayStopEarly: the run may stop reading (an unreachable endpoint): then the summary's
    ///     `unread_after_line` says where, and exactly the tokens before it have verdicts.
    ///   - exitCodes: the exit codes allowed when some token is not accepted.
    func check(mayStopEarly: Bool = false, exitCodes: Set<Int32> = [1, 69]) {
        let unreadAfter = self.summary?["unread_after_line"] as? Int
        if !mayStopEarly {
            #expect(unreadAfter == nil, "the run stopped reading after line \(unreadAfter ?? 0)", sourceLocation: self.sourceLocation)
        }
        let expectedTokens = unreadAfter.map { Array(self.run.tokens.prefix($0)) } ?? self.run.tokens

        // Every token read has exactly one verdict line; no verdict for anything else.
        var lines: [String: Int] = [:]
        for verdict in self.verdicts { lines[verdict["token"] as? String ?? "<no token>", default: 0] += 1 }
        self.expectNone("tokens without exactly one verdict line", expectedTokens.filter { lines[$0] != 1 }.map { "\($0): \(lines[$0] ?? 0) lines" })
        let expectedSet = Set(expectedTokens)
        self.expectNone("verdict lines for tokens not sent", lines.keys.filter { !expectedSet.contains($0) })

        var outcomes: [String: Int] = [:]
        var byReason: [String: Int] = [:]
        var flagged = 0
        var unknownOutcome: [String] = [], acceptedUnanswered: [String] = [], rejectedOtherwise: [String] = []
        var notSentProcessed: [String] = [], flagMissing: [String] = [], flagFalseButMust: [String] = []
        var flagTrueButCannot: [String] = [], attemptsWrong: [String] = [], failedWithoutCopy: [String] = []
        for verdict in self.verdicts {
            guard let token = verdict["token"] as? String else { continue }
            let copies = self.copies[token] ?? Copies()
            let outcome = verdict["outcome"] as? String ?? "<none>"
            outcomes[outcome, default: 0] += 1
            let flag = verdict["may_have_been_delivered"] as? Bool
            if flag == true { flagged += 1 }
            switch outcome {
            case "accepted":
                // The server answered 200 for it, with the apns-id the verdict gives.
                if !copies.answers.contains(where: { $0.status == 200 && $0.apnsID == verdict["apns_id"] as? String }) {
                    acceptedUnanswered.append(self.describe(token, verdict))
                }
            case "rejected":
                let reason = verdict["reason"] as? String
                byReason[reason ?? "<none>", default: 0] += 1
                let status = verdict["status"] as? Int
                if copies.lastProcessed != "answered \(status ?? 0) \(reason ?? "-")" {
                    rejectedOtherwise.append(self.describe(token, verdict) + ", last processed \(copies.lastProcessed ?? "none")")
                }
            case "failed":
                // No final answer, and some copy may have been processed: one reached the server unanswered.
                if copies.unanswered + copies.partial == 0 { failedWithoutCopy.append(self.describe(token, verdict)) }
            case "not_sent":
                if copies.attempts > 0 { notSentProcessed.append(self.describe(token, verdict)) }
            default:
                unknownOutcome.append(self.describe(token, verdict))
            }
            switch flag {
            case nil: flagMissing.append(token)
            case .some(true) where !copies.mayFlag: flagTrueButCannot.append(self.describe(token, verdict))
            case .some(false) where copies.mustFlag: flagFalseButMust.append(self.describe(token, verdict))
            default: break
            }
            if outcome == "failed" && flag == false { flagFalseButMust.append("failed: " + self.describe(token, verdict)) }
            let attempts = verdict["attempts"] as? Int ?? -1
            if !(copies.attempts...(copies.attempts + copies.partial)).contains(attempts) {
                attemptsWrong.append(self.describe(token, verdict))
            }
        }
        self.expectNone("outcome not one of accepted / rejected / failed / not_sent", unknownOutcome)
        self.expectNone("accepted, but the server never answered 200 with that apns-id", acceptedUnanswered)
        self.expectNone("rejected, but the last request the server processed got another answer", rejectedOtherwise)
        self.expectNone("failed, but no copy reached the server unanswered (so nothing was processed: not_sent)", failedWithoutCopy)
        self.expectNone("not_sent, but the server processed (or may have processed) a copy", notSentProcessed)
        self.expectNone("verdict line without a boolean may_have_been_delivered", flagMissing)
        self.expectNone("may_have_been_delivered false, but a copy went unanswered or more than one may have been delivered",
                        flagFalseButMust)
        self.expectNone("may_have_been_delivered true, but every copy was answered and at most one delivered", flagTrueButCannot)
        self.expectNone("attempts is not the number of copies the server processed (refused and GOAWAY replays are not attempts)",
                        attemptsWrong)

        // The provider token was valid on every request (the server verified each ES256 signature).
        let authFailures = self.run.requestRecords.filter { $0["status"] as? Int == 403 }
        #expect(authFailures.isEmpty, "403 answers: \(authFailures.prefix(3))", sourceLocation: self.sourceLocation)

        // The summary counts the lines.
        if let summary = self.summary {
            #expect(summary["total"] as? Int == self.verdicts.count, "summary total vs \(self.verdicts.count) lines",
                    sourceLocation: self.sourceLocation)
            for key in ["accepted", "rejected", "failed", "not_sent"] {
                #expect(summary[key] as? Int == outcomes[key, default: 0], "summary \(key) \(summary[key] ?? "-") vs \(outcomes[key, default: 0]) lines",
                        sourceLocation: self.sourceLocation)
            }
            #expect(summary["rejected_by_reason"] as? [String: Int] == byReason, "summary rejected_by_reason vs lines \(byReason)",
                    sourceLocation: self.sourceLocation)
            #expect(summary["may_have_been_delivered"] as? Int == flagged,
                    "summary may_have_been_delivered \(summary["may_have_been_delivered"] ?? "missing") vs \(flagged) flagged lines",
                    sourceLocation: self.sourceLocation)
        }

        // Exit 0 exactly when every token was accepted.
        let allAccepted = outcomes["accepted", default: 0] == self.run.tokens.count && self.verdicts.count == self.run.tokens.count
        #expect(allAccepted ? self.run.result.exitCode == 0 : exitCodes.contains(self.run.result.exitCode),
                "exit \(self.run.result.exitCode) with \(outcomes); stderr: \(self.run.result.stderr.suffix(1000))",
                sourceLocation: self.sourceLocation)
    }

    func verdict(_ token: String) -> [String: Any]? { self.verdicts.first { $0["token"] as? String == token } }
}

@Suite("apnsctl send against an independent HTTP/2 server (Python h2) that injects faults", .serialized, .timeLimit(.minutes(2)))
struct FaultOracleTests {
    @Test("Per-token faults mixed in one run: every verdict agrees with what the server recorded")
    func mixedFaults() throws {
        // 400 tokens, about a tenth with a fault, spread through the file.
        let faults: [(marker: String, n: Int, count: Int)] = [
            ("b0", 0, 8), ("b1", 0, 8), ("c1", 1, 6), ("c5", 1, 6), ("c6", 1, 6), ("d1", 1, 4), ("d1", 2, 2),
            ("d2", 0, 2), ("e1", 1, 2), ("e2", 0, 1), ("e3", 1, 3),
        ]
        var tokens = (0..<400).map { token("00", $0) }
        var slot = 7
        for fault in faults {
            for _ in 0..<fault.count {
                tokens[slot] = token(fault.marker, n: fault.n, slot)
                slot += 7
            }
        }
        let run = try OracleRun.run(tokens, serverFlags: [])
        let oracle = Oracle(run)
        oracle.check(exitCodes: [1])

        // The fixed rejections carry their reasons, and 410 its timestamp.
        for token in tokens where token.hasPrefix("b1") {
            let verdict = oracle.verdict(token)
            #expect(verdict?["outcome"] as? String == "rejected" && verdict?["reason"] as? String == "Unregistered"
                    && verdict?["timestamp"] is String, "\(verdict ?? [:])")
        }
        // REFUSED_STREAM for ever: a bounded replay budget, then not sent, as nothing was processed
        // (failed only if a copy met a connection another token's fault dropped).
        for token in tokens where token.hasPrefix("d2") {
            let copies = oracle.copies[token] ?? Copies()
            #expect(copies.refused >= 1 && copies.refused <= 16, "\(token) was refused \(copies.refused) times")
            let outcome = oracle.verdict(token)?["outcome"] as? String
            let allowed: Set<String> = copies.unanswered > 0 ? ["failed"] : copies.partial > 0 ? ["failed", "not_sent"] : ["not_sent"]
            #expect(outcome.map(allowed.contains) == true, "\(oracle.verdict(token) ?? [:]), \(copies.unanswered) unanswered copies")
        }
        // Each body the server received is JSON (a payload built from --title, issue 14 item 1).
        let notJSON = run.requestRecords.filter { $0["body_is_json"] as? Bool == false }
        #expect(notJSON.isEmpty, "\(notJSON.count) request bodies are not a JSON object")
    }

    @Test("REFUSED_STREAM for ever: a bounded replay budget, then not sent; refused replays are not attempts")
    func refusedForever() throws {
        // No fault that closes a connection here, so no copy can be caught by someone else's drop.
        var tokens = (0..<60).map { token("00", $0) }
        for slot in [5, 25, 45] { tokens[slot] = token("d2", slot) }
        for slot in [15, 35] { tokens[slot] = token("d1", n: 3, slot) }
        let oracle = Oracle(try OracleRun.run(tokens, serverFlags: []))
        oracle.check()
        for token in tokens where token.hasPrefix("d2") {
            let refused = oracle.copies[token]?.refused ?? 0
            #expect(refused >= 1 && refused <= 16, "\(token) was refused \(refused) times")
            let verdict = oracle.verdict(token)
            #expect(verdict?["outcome"] as? String == "not_sent" && verdict?["attempts"] as? Int == 0, "\(verdict ?? [:])")
        }
    }

    @Test("GOAWAY after each connection's first request: replays are not attempts, every token one truthful verdict")
    func goawayAfterFirstRequest() throws {
        let tokens = (0..<200).map { token("00", $0) }
        let run = try OracleRun.run(tokens, serverFlags: ["--goaway-after", "1"])
        Oracle(run).check()
    }

    @Test("A connection that stalls after 50 requests is found dead before the 30 s request deadline")
    func stalledConnection() throws {
        let tokens = (0..<150).map { token("00", $0) }
        let started = ContinuousClock.now
        let run = try OracleRun.run(tokens, serverFlags: ["--stall-after", "50"])
        let elapsed = ContinuousClock.now - started
        Oracle(run).check()
        #expect(elapsed < .seconds(30), "the run took \(elapsed)")
        #expect(run.requestRecords.contains { $0["action"] as? String == "stalled" }, "no request reached a stalled connection")
    }

    @Test("A server that served, then aborts three connections in a row with streams in flight: ridden out, every token accepted, exit 0")
    func abortedConnectionsInARow() throws {
        let tokens = (0..<3_000).map { token("00", $0) }
        let run = try OracleRun.run(tokens, serverFlags: ["--abort-plan", "600,0,0"])
        let oracle = Oracle(run)
        oracle.check()
        #expect(run.result.exitCode == 0, "exit \(run.result.exitCode): \(run.result.stderr.suffix(1000))")
        let accepted = oracle.verdicts.count { $0["outcome"] as? String == "accepted" }
        #expect(accepted == tokens.count, "\(accepted) of \(tokens.count) accepted")
        #expect(run.connections >= 4, "the plan's three aborted connections, then one that serves: \(run.connections)")
        // The copies in flight at each abort may have been delivered: flagged, as the oracle checked.
        let flagged = oracle.verdicts.count { $0["may_have_been_delivered"] as? Bool == true }
        #expect(flagged >= 1, "a copy in flight at the first abort is flagged")
    }

    @Test("A server that drops each connection after the TLS handshake: backoff keeps connections few, exit 69 within 10 s, no false verdict")
    func dropAfterHandshake() throws {
        let tokens = (0..<200).map { token("00", $0) }
        let started = ContinuousClock.now
        let run = try OracleRun.run(tokens, serverFlags: ["--drop-after-handshake"])
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(10), "the run took \(elapsed)")
        let oracle = Oracle(run)
        oracle.check(mayStopEarly: true, exitCodes: [69])
        #expect(run.result.exitCode == 69, "exit \(run.result.exitCode): \(run.result.stderr)")
        // Three connects in a row (the retry policy's attempts) make the endpoint unreachable; a
        // slow run (a sanitizer's) may try again once the short backoff has passed before it stops.
        #expect(run.connections <= 8, "\(run.connections) connections")
        let outcomes = Set(oracle.verdicts.compactMap { $0["outcome"] as? String })
        #expect(outcomes == ["not_sent"], "nothing was processed before the server's preface: \(outcomes)")
        #expect(run.result.stderr.contains("closed each connection before it spoke HTTP/2"), "\(run.result.stderr)")
    }

    @Test("A server that served 1,000, then drops every new connection after the TLS handshake: the send stops early, exit 69, a resume command")
    func servedThenDropsAfterHandshake() throws {
        let tokens = (0..<10_000).map { token("00", $0) }
        let run = try OracleRun.run(tokens, serverFlags: ["--first-connection-serves", "1000"])
        let oracle = Oracle(run)
        oracle.check(mayStopEarly: true, exitCodes: [69])
        #expect(run.result.exitCode == 69, "exit \(run.result.exitCode): \(run.result.stderr)")
        let accepted = oracle.verdicts.filter { $0["outcome"] as? String == "accepted" }.count
        #expect(accepted == 1000, "\(accepted) accepted")
        // The first connection, then the connects of the unreachable window (10 s of doubling
        // backoffs, about eight) and, in a slow run, one more: before, the client backed off up to
        // 30 s between connects and never gave up, and never stopped reading.
        #expect(run.connections <= 12, "\(run.connections) connections")
        let unread = oracle.summary?["unread_after_line"] as? Int
        #expect(unread.map { $0 < tokens.count } == true, "the send stopped reading early: \(oracle.summary ?? [:])")
        #expect(run.result.stderr.contains("became unreachable after 1000 answered"), "\(run.result.stderr)")
        #expect(run.result.stderr.contains("\nresume: ") && run.result.stderr.contains(" --resume-from "), "\(run.result.stderr)")
    }

    @Test("Nothing listening: every token not sent, exit 69, and the resume line names the first line")
    func closedPort() throws {
        let tokens = (0..<2000).map { token("00", $0) }
        let run = try OracleRun.run(tokens, serverFlags: nil)
        let oracle = Oracle(run)
        oracle.check(mayStopEarly: true, exitCodes: [69])
        #expect(run.result.exitCode == 69, "exit \(run.result.exitCode): \(run.result.stderr)")
        let notSent = oracle.verdicts.filter { $0["outcome"] as? String == "not_sent" && $0["may_have_been_delivered"] as? Bool == false }
        let other = oracle.verdicts.first { $0["outcome"] as? String != "not_sent" || $0["may_have_been_delivered"] as? Bool != false }
        #expect(notSent.count == oracle.verdicts.count && !notSent.isEmpty,
                "\(oracle.verdicts.count - notSent.count) of \(oracle.verdicts.count) verdicts are not `not_sent` without the flag, e.g. \(other ?? [:])")
        // Where to go on: the first line, since nothing was sent. The summary names the last line read
        // only when the stop came before the end of the file; a fast enough failure reads it all.
        #expect(run.result.stderr.contains("resume with --resume-from 1 (the first line not sent"), "\(run.result.stderr)")
        if let unread = oracle.summary?["unread_after_line"] { #expect(unread is Int && oracle.verdicts.count < tokens.count) }
    }
}
