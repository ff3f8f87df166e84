import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ca = KeysExample.path("ca.pem")
private let alertPayload = KeysExample.path("payloads/alert.json")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let registerKey = ["--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1"]
private let good = String(repeating: "ab", count: 32)
private let other = String(repeating: "cd", count: 32)
private let gone = String(repeating: "0f", count: 32)

/// Writes `text` to a new temporary file and returns its path.
private func temporaryFile(_ text: String, name: String = "tokens.txt") throws -> String {
    let directory = try TemporaryFolder.inProcess("apnsctl-send")
    let url = directory.appendingPathComponent(name)
    try Data(text.utf8).write(to: url)
    return url.path
}

/// `count` distinct 64-digit tokens.
private func tokens(_ count: Int) -> [String] {
    (0..<count).map { String(repeating: "0", count: 56) + String(format: "%08x", $0) }
}

/// `send` to a server on `port` over TLS (trusting the test CA) or h2c.
private func send(port: Int, h2c: Bool = false) -> [String] {
    h2c ? ["send", "--url", "http://127.0.0.1:\(port)"] : ["send", "--url", "https://127.0.0.1:\(port)", "--ca-file", ca]
}

/// The JSON objects of NDJSON output.
private func objects(_ text: String) throws -> [[String: Any]] {
    try text.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
    }
}

@Suite("apnsctl send against apnsctl serve", .serialized, .timeLimit(.minutes(3)))
struct SendTests {
    @Test("One token over TLS is accepted (exit 0); nothing secret is printed, even with --verbose")
    func oneTokenTLS() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--json"])
        let result = try CommandRunner.run(
            send(port: server.port) + credentials + ["--topic", bundle, "--token", good, "--payload", alertPayload, "--verbose",
                                                     "--format", "human"]
        )
        let served = server.stop()
        #expect(result.exitCode == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("\(good) 200 accepted apns-id=") == true, "\(result.stdout)")
        #expect(lines.last?.hasPrefix("sent 1: 1 accepted, 0 rejected, 0 failed, 0 not sent in ") == true, "\(result.stdout)")
        let printed = result.stdout + result.stderr
        #expect(!printed.contains("eyJ") && !printed.contains("PRIVATE KEY"))
        #expect(try objects(served.stdout).map { $0["status"] as? Int } == [200])
    }

    @Test("One token over cleartext h2c is accepted")
    func oneTokenH2C() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--h2c", "--quiet"])
        let result = try CommandRunner.run(
            send(port: server.port, h2c: true) + credentials + ["--topic", bundle, "--token", good, "--payload", alertPayload,
                                                                "--format", "human"]
        )
        _ = server.stop()
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout.contains("200 accepted apns-id="))
    }

    @Test("Credentials and topic come from APNS_* environment variables")
    func environmentCredentials() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        let result = try CommandRunner.run(
            send(port: server.port) + ["--token", good, "--title", "Hello", "--format", "human"],
            environment: ["APNS_KEY_FILE": keyFile, "APNS_KEY_ID": "FORGEKEY01", "APNS_TEAM_ID": "FORGETEAM1", "APNS_TOPIC": bundle]
        )
        _ = server.stop()
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout.contains("sent 1: 1 accepted"))
    }

    @Test("Certificate authentication: --cert with --cert-key, and --p12 with its password from the environment")
    func certificateAuth() throws {
        let server = try ServerProcess([
            "--topic", bundle, "--client-ca", ca, "--register-cert", KeysExample.path("client.pem"), "--quiet",
        ])
        let pem = try CommandRunner.run(
            send(port: server.port) + [
                "--cert", KeysExample.path("client.pem"),
                "--cert-key", KeysExample.path("client.key"),
                "--topic", bundle, "--token", good, "--payload", alertPayload, "--format", "human",
            ]
        )
        let p12 = try CommandRunner.run(
            send(port: server.port) + [
                "--p12", KeysExample.path("client.p12"), "--p12-password-env", "FORGE_TEST_P12_PASSWORD",
                "--topic", bundle, "--token", good, "--payload", alertPayload, "--format", "human",
            ],
            environment: ["FORGE_TEST_P12_PASSWORD": "forgepush-test"]
        )
        _ = server.stop()
        #expect(pem.exitCode == 0 && pem.stdout.contains("200 accepted"), "\(pem.stdout)\(pem.stderr)")
        #expect(p12.exitCode == 0 && p12.stdout.contains("200 accepted"), "\(p12.stdout)\(p12.stderr)")
        #expect(!(p12.stdout + p12.stderr).contains("forgepush-test"))
    }

    @Test("An unregistered token exits 1 and says Unregistered with its timestamp; --json parses back")
    func unregistered() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--unregistered", gone, "--quiet"])
        let arguments = send(port: server.port) + credentials + ["--topic", bundle, "--token", good, "--token", gone,
                                                                 "--payload", alertPayload]
        let human = try CommandRunner.run(arguments + ["--format", "human"])
        let json = try CommandRunner.run(arguments)  // NDJSON: stdout is not a terminal
        _ = server.stop()
        #expect(human.exitCode == 1, "\(human.stderr)")
        let line = try #require(human.stdout.split(separator: "\n").first { $0.hasPrefix(gone) })
        #expect(line.hasPrefix("\(gone) 410 Unregistered since 20"), "\(line)")
        #expect(human.stdout.contains("sent 2: 1 accepted, 1 rejected (Unregistered 1), 0 failed, 0 not sent in "))

        #expect(json.exitCode == 1)
        let parsed = try objects(json.stdout)
        #expect(parsed.count == 3)
        let perToken = parsed.filter { $0["summary"] == nil }
        #expect(Set(perToken.compactMap { $0["token"] as? String }) == [good, gone])
        for object in perToken {
            #expect(object.keys.contains("apns_id") && object.keys.contains("reason") && object.keys.contains("timestamp"))
            #expect(object["attempts"] as? Int == 1)
        }
        let rejected = try #require(perToken.first { $0["token"] as? String == gone })
        #expect(rejected["status"] as? Int == 410 && rejected["reason"] as? String == "Unregistered")
        #expect((rejected["timestamp"] as? String)?.hasPrefix("20") == true)
        let summary = try #require(parsed.last)
        #expect(summary["summary"] as? Bool == true && summary["total"] as? Int == 2)
        #expect(summary["accepted"] as? Int == 1 && summary["rejected"] as? Int == 1)
        #expect((summary["rejected_by_reason"] as? [String: Int]) == ["Unregistered": 1])
    }

    @Test("A tokens file with bad lines: each reported with its line number, the good ones sent; --strict sends nothing (65)")
    func tokensFileWithBadLines() throws {
        let lines = [
            "# two good tokens, one NDJSON line with its own payload, and bad lines",
            good,
            "",
            "xyz",
            #"{"token":"\#(other)"}"#,
            #"{"token":"\#(good)","payload":{"aps":{"alert":"own payload"}}}"#,
            "abc",
            #"{"token":"\#(good)","payload":[1]}"#,
            other,
        ]
        let file = try temporaryFile(lines.joined(separator: "\n") + "\n")
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--json"])
        let sent = try CommandRunner.run(send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", file,
                                                                                  "--payload", alertPayload, "--format", "human"])
        let strict = try CommandRunner.run(send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", file,
                                                                                    "--payload", alertPayload, "--strict"])
        let served = server.stop()
        #expect(sent.stderr.contains("\(file):4: device token must contain only hex digits"), "\(sent.stderr)")
        #expect(sent.stderr.contains("\(file):7: device token must have an even number of hex digits"), "\(sent.stderr)")
        #expect(sent.stderr.contains("\(file):8: \"payload\" must be a JSON object"), "\(sent.stderr)")
        #expect(sent.exitCode == 1)
        #expect(sent.stdout.contains("sent 4: 4 accepted, 0 rejected, 0 failed, 0 not sent in "), "\(sent.stdout)")
        #expect(sent.stdout.contains("3 bad input lines skipped"))
        #expect(strict.exitCode == 65, "\(strict.stderr)")
        #expect(strict.stderr.contains("\(file):4: ") && strict.stderr.contains("3 bad lines; nothing sent (--strict)"))
        #expect(strict.stdout.isEmpty)
        // The server saw the four good lines of the first send only.
        #expect(try objects(served.stdout).filter { $0["status"] as? Int == 200 }.count == 4)
    }

    @Test("Tokens from standard input: plain, --strict, and NDJSON lines that each carry their payload")
    func tokensFromStandardInput() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        let input = Array("\(good)\n\(other)\n".utf8)
        let plain = try CommandRunner.run(
            send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", "-", "--title", "Hi", "--format", "human"], stdin: input
        )
        let strict = try CommandRunner.run(
            send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", "-", "--title", "Hi", "--strict", "--format", "human"],
            stdin: input
        )
        // Every line with its own payload and no shared one: a plain token line has nothing to send.
        let ndjson = #"{"token":"\#(good)","payload":{"aps":{"alert":"one"}}}"# + "\n" + other + "\n"
            + #"{"token":"\#(other)","payload":{"aps":{"alert":"two"},"n":1}}"# + "\n"
        let perLine = try CommandRunner.run(send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", "-", "--json"],
                                            stdin: Array(ndjson.utf8))
        _ = server.stop()
        #expect(plain.exitCode == 0 && plain.stdout.contains("sent 2: 2 accepted"), "\(plain.stdout)\(plain.stderr)")
        #expect(perLine.exitCode == 1 && perLine.stderr.contains("stdin:2: no payload for this token"), "\(perLine.stderr)")
        let results = try objects(perLine.stdout)
        // Two verdicts, a record for the bad line (so a program reading stdout knows which it was), the summary.
        let verdicts = results.filter { $0["token"] != nil }
        #expect(verdicts.count == 2 && verdicts.allSatisfy { $0["status"] as? Int == 200 }, "\(perLine.stdout)")
        let badLine = results.first { $0["outcome"] as? String == "bad_line" }
        #expect(badLine?["line"] as? Int == 2 && (badLine?["error"] as? String)?.hasPrefix("no payload for this token") == true,
                "\(perLine.stdout)")
        #expect(results.count == 4 && results.last?["total"] as? Int == 2 && results.last?["bad_lines"] as? Int == 1)
        #expect(strict.exitCode == 0 && strict.stdout.contains("sent 2: 2 accepted"), "\(strict.stdout)\(strict.stderr)")
    }

    @Test("A payload built from flags is the body --dry-run shows, and the server accepts it")
    func payloadFromFlags() throws {
        let flags = ["--topic", bundle, "--token", good, "--title", "Build finished", "--subtitle", "main", "--body", "all green",
                     "--badge", "2", "--sound", "default", "--thread-id", "ci", "--category", "BUILD", "--mutable-content",
                     "--interruption-level", "time-sensitive", "--relevance-score", "0.5",
                     "--data", #"build={"number":4711,"url":"https://ci.example.com/4711"}"#, "--data", "retry=false"]
        let expected = #"{"aps":{"alert":{"body":"all green","subtitle":"main","title":"Build finished"},"badge":2,"#
            + #""category":"BUILD","interruption-level":"time-sensitive","mutable-content":1,"relevance-score":0.5,"#
            + #""sound":"default","thread-id":"ci"},"build":{"number":4711,"url":"https://ci.example.com/4711"},"retry":false}"#
        let dryRun = try CommandRunner.run(["send", "--dry-run"] + flags)
        #expect(dryRun.exitCode == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout.hasSuffix("\n\n" + expected + "\n"), "\(dryRun.stdout)")

        let server = try ServerProcess(registerKey + ["--topic", bundle, "--json"])
        let result = try CommandRunner.run(send(port: server.port) + credentials + flags)
        let served = server.stop()
        #expect(result.exitCode == 0, "\(result.stderr)")
        let judged = try objects(served.stdout)
        #expect(judged.count == 1 && judged.first?["status"] as? Int == 200 && judged.first?["lint"] == nil, "\(served.stdout)")
        let both = try CommandRunner.run(["send", "--dry-run", "--payload", alertPayload] + flags)
        #expect(both.exitCode == 64 && both.stderr.contains("not both"), "\(both.stderr)")
    }

    static let damagedKey: String =
        (try? temporaryFile("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", name: "AuthKey_BAD.p8")) ?? "/missing"
    static let largePayload: String = {
        let prefix = #"{"aps":{"alert":"x"},"pad":""#
        return (try? temporaryFile(prefix + String(repeating: "x", count: 4097 - prefix.utf8.count - 2) + #""}"#, name: "large.json"))
            ?? "/missing"
    }()

    static let badInputs: [BadInput] = [
        BadInput(name: "missing key file", arguments: ["--key-file", "/nonexistent.p8", "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"],
                 exitCode: 66, message: "--key-file"),
        BadInput(name: "damaged .p8", arguments: ["--key-file", damagedKey, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"],
                 exitCode: 65, message: "--key-file"),
        BadInput(name: "key id of the wrong length", arguments: ["--key-file", keyFile, "--key-id", "SHORT", "--team-id", "FORGETEAM1"],
                 exitCode: 65, message: "--key-id 'SHORT'"),
        BadInput(name: "bad token", arguments: credentials + ["--token", "abc"], exitCode: 65, message: "--token 'abc': device token"),
        BadInput(name: "collapse id over 64 bytes", arguments: credentials + ["--collapse-id", String(repeating: "x", count: 65)],
                 exitCode: 65, message: "--collapse-id: apns-collapse-id must be at most 64 bytes"),
        BadInput(name: "payload over the limit", arguments: credentials + ["--payload", largePayload], exitCode: 65,
                 message: "payload is 4097 bytes; the limit for push type alert is 4096 bytes"),
        BadInput(name: "background with priority 10", arguments: credentials + ["--push-type", "background", "--priority", "10"],
                 exitCode: 65, message: "--priority: apns-priority must be 5 for push type background"),
        BadInput(name: "unknown push type", arguments: credentials + ["--push-type", "notification"], exitCode: 64, message: "--push-type"),
        BadInput(name: "missing tokens file", arguments: credentials + ["--tokens-file", "/nonexistent-tokens.txt"], exitCode: 66,
                 message: "--tokens-file: file '/nonexistent-tokens.txt' does not exist"),
        BadInput(name: "bad --data", arguments: credentials + ["--data", "k=not json"], exitCode: 65, message: "--data 'k=not json'"),
        BadInput(name: "no credentials", arguments: [], exitCode: 64, message: "Sending needs credentials"),
    ]

    @Test("Bad input exits with the right code before anything is sent", arguments: badInputs)
    func badInput(_ input: BadInput) throws {
        // Nothing listens on port 9 of loopback; validation fails before any connection.
        var arguments = ["send", "--url", "https://127.0.0.1:9", "--topic", bundle] + input.arguments
        if !arguments.contains("--token") && !arguments.contains("--tokens-file") { arguments += ["--token", good] }
        if !arguments.contains("--payload") && !arguments.contains("--data") { arguments += ["--payload", alertPayload] }
        if arguments.contains("--data") { arguments += ["--title", "x"] }
        let result = try CommandRunner.run(arguments)
        #expect(result.exitCode == input.exitCode, "\(result.stderr)")
        #expect(result.stderr.contains(input.message), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test("An endpoint that is not listening (a port bound, never listening) or fails TLS exits 69 with a plain message")
    func unreachable() throws {
        let server = try ServerProcess(["--topic", bundle, "--quiet"])
        let port = server.port
        // Without --ca-file the test CA is not trusted: the TLS handshake fails.
        let untrusted = try CommandRunner.run(
            ["send", "--url", "https://127.0.0.1:\(port)"] + credentials + ["--topic", bundle, "--token", good, "--payload", alertPayload]
        )
        _ = server.stop()
        #expect(untrusted.exitCode == 69, "\(untrusted.stdout)\(untrusted.stderr)")
        #expect(untrusted.stderr.contains("error: cannot reach 127.0.0.1:\(port): tlsFailed"), "\(untrusted.stderr)")
        // Not the stopped server's port: a test running beside this one may listen there by now.
        let refusing = try ClosedPort()
        let result = try CommandRunner.run(send(port: refusing.port) + credentials + ["--topic", bundle, "--token", good, "--payload", alertPayload])
        refusing.close()
        #expect(result.exitCode == 69, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("error: cannot reach 127.0.0.1:\(refusing.port)"), "\(result.stderr)")
    }

    @Test("2,000 tokens in bulk: exactly 2,000 result lines, a summary of 2,000, and no progress bar into a pipe")
    func bulk() throws {
        let all = tokens(2000)
        let file = try temporaryFile(all.joined(separator: "\n") + "\n")
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        let human = try CommandRunner.run(send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", file,
                                                                                   "--payload", alertPayload, "--format", "human"], timeout: 120)
        // Into a pipe, results are NDJSON unless a format is asked for.
        let json = try CommandRunner.run(send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", file,
                                                                                  "--payload", alertPayload], timeout: 120)
        _ = server.stop()
        #expect(human.exitCode == 0, "\(human.stderr)")
        let lines = human.stdout.split(separator: "\n")
        #expect(lines.count == 2001)
        #expect(lines.dropLast().allSatisfy { Self.isAccepted($0, in: all) }, "\(lines.prefix(3))")
        #expect(Set(lines.dropLast().map { $0.split(separator: " ")[2] }).count == all.count)
        #expect(lines.last?.hasPrefix("sent 2000: 2000 accepted, 0 rejected, 0 failed, 0 not sent in ") == true)
        #expect(!human.stderr.contains("\r"))
        #expect(json.exitCode == 0)
        let parsed = try objects(json.stdout)
        #expect(parsed.count == 2001)
        #expect(Set(parsed.dropLast().compactMap { $0["token"] as? String }) == Set(all))
        // Each verdict names its line, and the line holds that token.
        #expect(parsed.dropLast().allSatisfy { object in
            (object["line"] as? Int).map { all[$0 - 1] == object["token"] as? String } ?? false
        })
        #expect(parsed.last?["total"] as? Int == 2000 && parsed.last?["accepted"] as? Int == 2000)
        #expect(!json.stderr.contains("\r"))
    }

    @Test("The request the server receives is, byte for byte, the one --dry-run prints for the same flags")
    func dryRunMatchesTheWire() throws {
        let flags = ["--topic", bundle, "--token", good, "--title", "Ünïcode ✓", "--body", "line\nbreak", "--badge", "3",
                     "--sound", "default", "--thread-id", "t-1", "--data", #"order={"id":"A-17","items":[1,2]}"#,
                     "--collapse-id", "order-A-17", "--expiration", "0", "--priority", "5",
                     "--apns-id", "0F2E8C5A-3B1D-4E6F-8A9B-1C2D3E4F5A6B"]
        let dry = try CommandRunner.run(["send", "--dry-run"] + credentials + flags)
        #expect(dry.exitCode == 0, "\(dry.stderr)")
        // The text form: pseudo-headers and headers, a blank line, then the body bytes.
        let parts = dry.stdout.components(separatedBy: "\n\n")
        let dryHeaders = parts[0].split(separator: "\n").filter { !$0.hasPrefix(":") }.map(String.init)
        let dryBody = String(parts.dropFirst().joined(separator: "\n\n").dropLast())  // Output adds one newline
        let server = try ServerProcess(registerKey + ["--json", "--print-requests"])
        let sent = try CommandRunner.run(send(port: server.port) + credentials + flags)
        let served = try objects(server.stop().stdout)
        #expect(sent.exitCode == 0, "\(sent.stderr)")
        let request = try #require(served.first?["request"] as? [String: Any])
        #expect(request["path"] as? String == "/3/device/\(good)")
        #expect(request["body"] as? String == dryBody, "server: \(request["body"] ?? "-")\ndry run: \(dryBody)")
        #expect(request["body_bytes"] as? Int == Array(dryBody.utf8).count)
        let wireHeaders = try #require(request["headers"] as? [String: String])
        for line in dryHeaders {
            let name = String(line[..<line.firstIndex(of: ":")!])
            let value = String(line[line.index(line.firstIndex(of: ":")!, offsetBy: 2)...])
            #expect(wireHeaders[name] == value, "\(name): wire \(wireHeaders[name] ?? "-") vs dry run \(value)")
        }
        #expect(Set(wireHeaders.keys) == Set(dryHeaders.map { String($0[..<$0.firstIndex(of: ":")!]) }))
    }

    @Test("A background push from flags: content-available and the --data keys, priority 5; alert flags refused")
    func backgroundFromFlags() throws {
        let dry = try CommandRunner.run(["send", "--dry-run", "--json", "--topic", bundle, "--token", good, "--push-type", "background",
                                         "--content-available", "--data", #"sync={"since":42}"#])
        #expect(dry.exitCode == 0, "\(dry.stderr)")
        let request = try #require(try objects(dry.stdout).first)
        #expect((request["headers"] as? [String: Any])?["apns-priority"] as? String == "5")
        let body = try #require(request["body"] as? [String: Any])
        #expect((body["aps"] as? [String: Any])?["content-available"] as? Int == 1)
        #expect((body["sync"] as? [String: Any])?["since"] as? Int == 42)
        let withAlert = try CommandRunner.run(["send", "--dry-run", "--topic", bundle, "--token", good, "--push-type", "background", "--title", "x"])
        #expect(withAlert.exitCode == 64 && withAlert.stderr.contains("carries no alert"))
    }

    @Test("Ctrl-C stops sending: pushes on their way still get their answers, the summary says where reading stopped, exit 130")
    func interrupt() throws {
        let all = tokens(200_000)
        let file = try temporaryFile(all.joined(separator: "\n") + "\n")
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        defer { _ = server.stop() }
        let process = try ChildProcess(
            executable: CommandRunner.binary,
            arguments: send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", file, "--payload", alertPayload,
                                                                "--format", "human"],
            environment: CommandRunner.environment()
        )
        // Wait for the first results (real output, not a timer), then interrupt. Bounded: whatever
        // happens, the child is gone within a minute of each wait.
        _ = process.waitForStandardOutput(containing: "\n", timeout: .seconds(60))
        process.signal(SIGINT)
        let finished = process.finish(timeout: .seconds(60))
        let stdout = finished.stdout
        let stderr = finished.stderr
        #expect(finished.exitCode == 130, "\(stderr)")
        let lines = stdout.split(separator: "\n")
        let summary = try #require(lines.last)
        // Reading stops at Ctrl-C, and every push already read is answered: each token read has one
        // accepted line, and the summary names the last line read.
        let read = lines.count - 1
        #expect(read > 0 && read < all.count, "\(read) of \(all.count) tokens read")
        #expect(lines.dropLast().allSatisfy { Self.isAccepted($0, in: all) }, "\(lines.prefix(3))")
        #expect(summary.hasPrefix("sent \(read): \(read) accepted, 0 rejected, 0 failed, 0 not sent in "), "\(summary)")
        #expect(summary.hasSuffix("; input after line \(read) not read"), "\(summary)")
        #expect(stderr.contains("interrupted: \(read) answered, 0 in flight at the stop, 0 not sent; resume with --resume-from \(read + 1) "),
                "\(stderr)")
        // And as a command to paste: the same arguments, --resume-from set (stdout was a pipe: no redirection).
        let resume = try #require(stderr.split(separator: "\n").first { $0.hasPrefix("resume: ") }, "\(stderr)")
        #expect(resume.hasPrefix("resume: \(CommandRunner.binary.path) send ") && resume.hasSuffix(" --format human --resume-from \(read + 1)"),
                "\(resume)")
    }

    @Test("Where a send goes: a URL and an environment both given is a warning saying the URL wins; a terminal gets a first line naming URL, topic and key, and where they came from")
    func destinationLine() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        defer { _ = server.stop() }
        let url = "https://127.0.0.1:\(server.port)"
        let flags = ["--environment", "production", "--ca-file", ca, "--key-file", keyFile, "--team-id", "FORGETEAM1", "--topic", bundle,
                     "--token", good, "--title", "Hi", "--format", "human"]
        let piped = try CommandRunner.run(["send"] + flags, environment: ["APNS_URL": url, "APNS_KEY_ID": "FORGEKEY01"])
        #expect(piped.exitCode == 0, "\(piped.stderr)")
        #expect(piped.stderr.contains("warning: APNS_URL (\(url)) wins over --environment production: the push goes to the URL"), "\(piped.stderr)")
        #expect(!piped.stderr.contains("→ "), "no destination line off a terminal: \(piped.stderr)")
        let command = "APNS_URL=\(url) APNS_KEY_ID=FORGEKEY01 NO_COLOR=1 " + ([CommandRunner.binary.path, "send"] + flags).joined(separator: " ")
        let terminal = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"],
                                            environment: CommandRunner.environment(), timeout: .seconds(60))
        #expect(terminal.stdout.contains("→ \(url) from APNS_URL · topic \(bundle) · key FORGEKEY01 (team FORGETEAM1) from APNS_KEY_ID/APNS_TEAM_ID"),
                "\(terminal.stdout)")
    }

    @Test("Unreachable with verdicts going to a file: the resume command writes to a new file, so pasting it keeps the first run's")
    func resumeCommandToNewFile() throws {
        let folder = try TemporaryFolder("resume-command")
        defer { folder.remove() }
        let file = try folder.file("tokens.txt", contents: tokens(5).joined(separator: "\n") + "\n")
        let output = folder.url.appendingPathComponent("run 1.ndjson").path
        let arguments = [CommandRunner.binary.path, "send", "--url", "https://127.0.0.1:9", "--ca-file", ca] + credentials
            + ["--topic", bundle, "--tokens-file", file, "--title", "Hi", "--resume-from", "2"]
        let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let run = try ChildProcess.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "exec \(quoted) > '\(output)'"],
                                       environment: CommandRunner.environment(), timeout: .seconds(60))
        #expect(run.exitCode == 69, "\(run.stderr)")
        let resume = try #require(run.stderr.split(separator: "\n").first { $0.hasPrefix("resume: ") }, "\(run.stderr)")
        #expect(resume.hasSuffix("--title Hi --resume-from 2 > '\(folder.url.appendingPathComponent("run 1-2.ndjson").path)'"), "\(resume)")
        #expect(resume.components(separatedBy: "--resume-from").count == 2, "one --resume-from: \(resume)")
    }

    @Test("Ctrl-C twice: pushes still waiting for answers are reported as in flight (never as not sent), and the resume line points at the first")
    func interruptTwice() throws {
        let all = tokens(3000)
        let file = try temporaryFile(all.joined(separator: "\n") + "\n")
        // Answers held a minute: every push sent is still in flight when the second Ctrl-C comes.
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--json", "--latency", "60s"])
        let process = try ChildProcess(
            executable: CommandRunner.binary,
            arguments: send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", file, "--payload", alertPayload],
            environment: CommandRunner.environment()
        )
        // The server prints each push as it judges it, before holding the answer.
        #expect(server.child.waitForStandardOutput(containing: "push_type", timeout: .seconds(60)))
        process.signal(SIGINT)
        #expect(process.waitForStandardError(containing: "interrupted: sending no more", timeout: .seconds(60)))
        process.signal(SIGINT)
        let finished = process.finish(timeout: .seconds(60))
        let judged = try objects(server.stop().stdout)
        #expect(finished.exitCode == 130, "\(finished.stderr)")
        let results = try objects(finished.stdout)
        let verdicts = results.dropLast()
        let summary = try #require(results.last)
        #expect(!verdicts.isEmpty && verdicts.allSatisfy { ["in_flight", "not_sent"].contains($0["outcome"] as? String) }, "\(finished.stdout)")
        let inFlight = verdicts.filter { $0["outcome"] as? String == "in_flight" }
        #expect(inFlight.allSatisfy { $0["may_have_been_delivered"] as? Bool == true })
        #expect(summary["in_flight"] as? Int == inFlight.count && summary["total"] as? Int == verdicts.count)
        // Whatever reached the server is reported as in flight: a resend may duplicate it.
        let reported = Set(inFlight.compactMap { $0["token"] as? String })
        #expect(judged.allSatisfy { reported.contains($0["token"] as? String ?? "") }, "\(judged.count) judged, \(reported.count) in flight")
        let first = try #require(verdicts.compactMap { $0["line"] as? Int }.min())
        #expect(finished.stderr.contains("in flight at the stop") && finished.stderr.contains("resume with --resume-from \(first) "),
                "\(finished.stderr)")
    }

    @Test("A mismatched key id: 403 InvalidProviderToken with a hint that points to doctor; a misspelt flag is an unknown option")
    func hintsAndUnknownOptions() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        let mismatched = try CommandRunner.run(send(port: server.port) + [
            "--key-file", keyFile, "--key-id", "OTHERKEY01", "--team-id", "FORGETEAM1", "--topic", bundle, "--token", good, "--title", "Hi",
        ])
        _ = server.stop()
        #expect(mismatched.exitCode == 1, "\(mismatched.stderr)")
        #expect(mismatched.stdout.contains("\"reason\":\"InvalidProviderToken\""), "\(mismatched.stdout)")
        #expect(mismatched.stderr.contains("hint: InvalidProviderToken: the key id, the team id and the .p8 key must belong together")
                && mismatched.stderr.contains("apnsctl doctor"), "\(mismatched.stderr)")
        let misspelt = try CommandRunner.run(["send", "--tokn", good, "--title", "Hi"])
        #expect(misspelt.exitCode == 64)
        #expect(misspelt.stderr.hasPrefix("error: Unknown option '--tokn'. Did you mean '--token'?"), "\(misspelt.stderr)")
        #expect(misspelt.stderr.contains("Usage: apnsctl send"), "\(misspelt.stderr)")
        let missing = try CommandRunner.run(["send", "--title", "Hi"])
        #expect(missing.exitCode == 64 && missing.stderr.hasPrefix("error: Missing --token"), "\(missing.stderr)")
        // Commands whose flags are required too: the misspelt flag is named, not the required one it was meant to be.
        for (arguments, flag) in [(["activity", "update", "--tokn", good], "--tokn"), (["channels", "get", "--chanel", "x"], "--chanel")] {
            let result = try CommandRunner.run(arguments)
            #expect(result.exitCode == 64 && result.stderr.hasPrefix("error: Unknown option '\(flag)'"), "\(result.stderr)")
        }
        let noState = try CommandRunner.run(["activity", "update", "--token", good])
        #expect(noState.exitCode == 64 && noState.stderr.hasPrefix("error: Missing --content-state"), "\(noState.stderr)")
    }

    @Test("--resume-from LINE sends the lines from there on, each verdict naming its line in the file")
    func resumeFrom() throws {
        let some = tokens(4)
        let file = try temporaryFile([some[0], "", some[1], "# a comment", some[2], some[3]].joined(separator: "\n") + "\n")
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--json"])
        let resumed = try CommandRunner.run(send(port: server.port) + credentials + [
            "--topic", bundle, "--tokens-file", file, "--payload", alertPayload, "--resume-from", "3",
        ])
        let bad = try CommandRunner.run(send(port: server.port) + credentials + [
            "--topic", bundle, "--token", good, "--payload", alertPayload, "--resume-from", "3",
        ])
        let judged = try objects(server.stop().stdout)
        #expect(resumed.exitCode == 0, "\(resumed.stderr)")
        let verdicts = try objects(resumed.stdout).dropLast()
        #expect(verdicts.compactMap { $0["line"] as? Int }.sorted() == [3, 5, 6])
        #expect(verdicts.allSatisfy { some[[3: 1, 5: 2, 6: 3][$0["line"] as? Int ?? 0] ?? 0] == $0["token"] as? String })
        #expect(Set(judged.compactMap { $0["token"] as? String }) == Set(some[1...]))
        #expect(bad.exitCode == 64 && bad.stderr.contains("--resume-from applies to --tokens-file"), "\(bad.stderr)")
    }

    @Test("On a terminal: the bar, only the lines that need attention (full token and line), the summary left on screen")
    func terminal() throws {
        var all = tokens(300)
        all[149] = gone
        let file = try temporaryFile(all.joined(separator: "\n") + "\n")
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--unregistered", gone, "--quiet"])
        let command = (send(port: server.port) + credentials + ["--topic", bundle, "--tokens-file", file, "--payload", alertPayload])
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("verdicts-\(UUID().uuidString).ndjson").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        // `script` runs apnsctl on a pseudo-terminal: first both streams on it, then stdout into a file.
        let onTerminal = try Self.onTerminal([CommandRunner.binary.path] + command)
        let redirected = try Self.onTerminal([CommandRunner.binary.path] + command, stdoutTo: output)
        _ = server.stop()
        #expect(onTerminal.contains("\r[") && onTerminal.contains("300/300"), "no progress bar: \(onTerminal)")
        #expect(onTerminal.contains("line 150: \(gone) 410 Unregistered since "), "\(onTerminal)")
        #expect(!onTerminal.contains(" 200 accepted "), "\(onTerminal)")
        #expect(onTerminal.contains("sent 300: 299 accepted, 1 rejected (Unregistered 1), 0 failed, 0 not sent in "), "\(onTerminal)")
        #expect(redirected.contains("\r[") && redirected.contains("sent 300: 299 accepted, 1 rejected"), "\(redirected)")
        let written = try objects(String(contentsOfFile: output, encoding: .utf8))
        #expect(written.count == 301 && written.last?["summary"] as? Bool == true)
    }

    /// Whether `line` is `line N: TOKEN 200 accepted …` with the token on line N of `file`.
    private static func isAccepted(_ line: Substring, in file: [String]) -> Bool {
        let words = line.split(separator: " ")
        guard words.count > 3, words[0] == "line", let number = Int(words[1].dropLast()), (1...file.count).contains(number) else { return false }
        return words[2] == file[number - 1] && words[3] == "200" && words[4] == "accepted"
    }

    /// What a terminal shows while `arguments` run on it (util-linux `script`), stdout optionally
    /// redirected to a file.
    private static func onTerminal(_ arguments: [String], stdoutTo file: String? = nil) throws -> String {
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let command = arguments.map(quoted).joined(separator: " ") + (file.map { " > " + quoted($0) } ?? "")
        let result = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"], environment: CommandRunner.environment(),
            timeout: .seconds(60)
        )
        #expect(result.exitCode == 1, "\(result.stdout)\(result.stderr)")
        return result.stdout
    }
}

/// The journal window these tests give (`--journal-window`): the most tokens one crash can send twice.
private let window = 2048

/// What a process killed with SIGKILL printed, without a last line it had not finished.
private func completeLines(_ text: String) -> String {
    String(text[..<(text.lastIndex(of: "\n").map(text.index(after:)) ?? text.startIndex)])
}

/// A campaign's files in a new temporary folder: `count` distinct tokens, and where its journal goes.
private func campaignFiles(tokens count: Int) throws -> (folder: TemporaryFolder, tokens: [String], tokensFile: String, journal: String) {
    let folder = try TemporaryFolder("send-journal")
    let all = tokens(count)
    let tokensFile = try folder.file("tokens.txt", contents: all.joined(separator: "\n") + "\n")
    return (folder, all, tokensFile, folder.url.appendingPathComponent("campaign.db").path)
}

@Suite("apnsctl send --journal: a campaign killed with SIGKILL and re-run", .serialized, .timeLimit(.minutes(3)))
struct JournalTests {
    @Test("Killed mid-run and re-run: one final verdict per token, every accepted push in the server's record, every duplicate flagged and within the window")
    func killedAndResumed() throws {
        let (folder, all, tokensFile, journal) = try campaignFiles(tokens: 20_000)
        defer { folder.remove() }
        let recordFile = folder.url.appendingPathComponent("accepted.ndjson").path
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet", "--latency", "20ms", "--record", recordFile])
        let command = ["send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca, "--journal-window", String(window)] + credentials
            + ["--topic", bundle, "--tokens-file", tokensFile, "--payload", alertPayload, "--journal", journal, "--json"]

        // The first run is killed once it has printed (so committed) some verdicts: no sleeps.
        let first = try ChildProcess(executable: CommandRunner.binary, arguments: command, environment: CommandRunner.environment())
        #expect(first.waitForStandardOutput(lines: 500, timeout: .seconds(60)))
        first.signal(SIGKILL)
        let killed = first.finish(timeout: .seconds(60))
        let printed = try objects(completeLines(killed.stdout))
        #expect(!printed.isEmpty && printed.count < all.count, "\(printed.count) verdicts printed before SIGKILL")

        // Killed before reading the whole file: the report still has one line per token of the
        // file, those not read yet from the file itself.
        let pending = try objects(CommandRunner.run(["campaign", "report", "--journal", journal, "--json"]).stdout)
        #expect(pending.count == all.count + 1 && pending.last?["total"] as? Int == all.count, "\(pending.last ?? [:])")
        #expect(pending.dropLast().enumerated().allSatisfy { $0.element["index"] as? Int == $0.offset && $0.element["token"] as? String == all[$0.offset] })
        // A token changed among those the killed run had read: refused before anything is sent.
        var altered = all
        altered[10] = String(repeating: "ee", count: 32)
        try (altered.joined(separator: "\n") + "\n").write(toFile: tokensFile, atomically: true, encoding: .utf8)
        let refused = try CommandRunner.run(command)
        #expect(refused.exitCode == 65 && refused.stderr.contains("changed tokens_sha256 (token 10 (line 11)") && refused.stdout.isEmpty,
                "\(refused.stderr)")
        try (all.joined(separator: "\n") + "\n").write(toFile: tokensFile, atomically: true, encoding: .utf8)

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
        let record = try ServerRecord(path: recordFile)
        #expect(record.recordsEvery(verdicts))
        // One apns-id per token, whatever the number of copies: duplicates are visible as such.
        #expect(record.tokenOfID.count == all.count, "\(record.tokenOfID.count) apns-ids for \(all.count) tokens")
        // Every token the server saw more than once is flagged; the duplicates stay within the window.
        let flagged = Set(verdicts.filter { $0["may_have_been_delivered"] as? Bool == true }.compactMap { $0["token"] as? String })
        #expect(record.duplicated.isSubset(of: flagged), "\(record.duplicated.count) duplicated, \(flagged.count) flagged")
        #expect(record.count - all.count <= window, "\(record.count - all.count) duplicates")
        print("journal crash test: \(all.count) tokens, \(verdicts.count) verdicts, \(printed.count) printed before SIGKILL, "
              + "\(record.count - all.count) duplicate copies of \(record.duplicated.count) tokens, \(flagged.count) flagged (window \(window))")
        // The resumed run printed the same flags, once each token's verdict was committed.
        let resumedFlagged = try objects(resumed.stdout).dropLast().filter { $0["may_have_been_delivered"] as? Bool == true }
        #expect(Set(resumedFlagged.compactMap { $0["token"] as? String }) == flagged)
        // A verdict printed before the kill was committed: its token was never sent again.
        #expect(printed.allSatisfy { record.copies[$0["token"] as? String ?? ""] == 1 })
    }

    @Test("An endpoint that fails TLS: exit 69, and every token stays to send (not_sent, not flagged): nothing left marked as sending")
    func unreachable() throws {
        let (folder, all, tokensFile, journal) = try campaignFiles(tokens: 3000)
        defer { folder.remove() }
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        // Without --ca-file the test CA is not trusted: nothing reaches the server.
        let sent = try CommandRunner.run(
            ["send", "--url", "https://127.0.0.1:\(server.port)"] + credentials
                + ["--topic", bundle, "--tokens-file", tokensFile, "--payload", alertPayload, "--journal", journal, "--json"]
        )
        _ = server.stop()
        #expect(sent.exitCode == 69, "\(sent.stderr)")
        // Every token the run took from the journal has one printed verdict, and the summary counts
        // them; the journal says how many have no final verdict for the next run.
        let printed = try objects(sent.stdout)
        let verdicts = printed.dropLast()
        let printedTokens = verdicts.compactMap { $0["token"] as? String }
        #expect(!verdicts.isEmpty && Set(printedTokens).count == verdicts.count && printed.last?["total"] as? Int == verdicts.count,
                "\(verdicts.count) verdicts, summary \(printed.last ?? [:])")
        #expect(sent.stderr.contains("journal: \(all.count) of \(all.count) tokens have no final verdict; run the same command again"), "\(sent.stderr)")
        let report = try CommandRunner.run(["campaign", "report", "--journal", journal, "--json"])
        let lines = try objects(report.stdout)
        #expect(lines.count == all.count + 1)
        #expect(lines.dropLast().allSatisfy { $0["outcome"] as? String == "not_sent" && $0["may_have_been_delivered"] as? Bool == false
            && $0["sends"] as? Int == 0 }, "\(lines.prefix(2))")
        #expect(lines.last?["not_sent"] as? Int == all.count, "\(lines.last ?? [:])")
    }

    @Test("The same journal run twice at once: the second exits 75 naming the first, sends nothing; the first sends every token once")
    func oneProcessPerJournal() throws {
        let (folder, all, tokensFile, journal) = try campaignFiles(tokens: 3000)
        defer { folder.remove() }
        let recordFile = folder.url.appendingPathComponent("accepted.ndjson").path
        // Answers held 200 ms, 128 tokens a window: the first run lasts seconds.
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet", "--latency", "200ms", "--record", recordFile])
        let command = ["send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] + credentials
            + ["--topic", bundle, "--tokens-file", tokensFile, "--payload", alertPayload, "--journal", journal, "--journal-window", "128", "--json"]
        let first = try ChildProcess(executable: CommandRunner.binary, arguments: command, environment: CommandRunner.environment())
        // Its first verdicts are printed once it holds the journal.
        #expect(first.waitForStandardOutput(lines: 10, timeout: .seconds(60)))
        let second = try CommandRunner.run(command)
        let finished = first.finish(timeout: .seconds(120))
        let served = server.stop()
        #expect(second.exitCode == 75, "\(second.stderr)")
        #expect(second.stderr.contains("error: --journal '\(journal)' is in use by process \(first.processIdentifier) (started "),
                "\(second.stderr)")
        #expect(second.stdout.isEmpty)
        #expect(finished.exitCode == 0 && served.exitCode == 0, "\(finished.stderr)")
        let record = try ServerRecord(path: recordFile)
        #expect(record.count == all.count && record.copies.values.allSatisfy { $0 == 1 }, "\(record.count) pushes for \(all.count) tokens")
        // The lock went with the first process: a run now resumes (nothing left to send).
        let again = try CommandRunner.run(command)
        #expect(again.exitCode == 0 && again.stderr.contains("journal: resuming campaign"), "\(again.stderr)")
    }

    @Test("A journal write that fails mid-run (another process holds its lock): exit 74 naming the journal file, no summary, and every verdict printed was committed")
    func failedJournalWrite() throws {
        let (folder, all, tokensFile, journal) = try campaignFiles(tokens: 5000)
        defer { folder.remove() }
        // Answers held 200 ms, 128 tokens a window: the run lasts seconds, so the lock comes mid-run.
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet", "--latency", "200ms"])
        let command = ["send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] + credentials
            + ["--topic", bundle, "--tokens-file", tokensFile, "--payload", alertPayload, "--journal", journal, "--journal-window", "128", "--json"]
        let run = try ChildProcess(executable: CommandRunner.binary, arguments: command, environment: CommandRunner.environment())
        #expect(run.waitForStandardOutput(lines: 100, timeout: .seconds(60)))
        // Python's sqlite3 takes the write lock (waiting out a transaction under way) and holds it until its input ends.
        let locker = try ChildProcess(
            executable: try venvPython(),
            arguments: [
                "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None); "
                    + "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()",
                journal,
            ],
            standardInput: .heldOpen
        )
        #expect(locker.waitForStandardOutput(containing: "locked", timeout: .seconds(30)))
        let failed = run.finish(timeout: .seconds(60))
        locker.closeStandardInput()
        #expect(locker.finish(timeout: .seconds(30)).exitCode == 0)
        _ = server.stop()
        #expect(failed.exitCode == 74, "\(failed.stderr)")
        #expect(failed.stderr.contains("error: --journal '\(journal)'") && failed.stderr.contains("failed"), "\(failed.stderr)")
        let printed = try objects(failed.stdout)
        #expect(!printed.isEmpty && printed.count < all.count, "\(printed.count) printed")
        #expect(printed.allSatisfy { $0["summary"] == nil }, "nothing printed as a summary")

        let report = try CommandRunner.run(["campaign", "report", "--journal", journal, "--json"])
        let rows = try objects(report.stdout).dropLast()
        #expect(rows.count == all.count)
        // Every verdict printed is the journal's, final.
        #expect(printed.allSatisfy { verdict in
            guard let index = all.firstIndex(of: verdict["token"] as? String ?? "") else { return false }
            return rows[index]["outcome"] as? String == "accepted"
        })
    }

    @Test("--journal needs a tokens file (not stdin) and a shared payload, and takes no --resume-from; --journal-window is range-checked")
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
        // --strict reads the file first: a bad line sends nothing and creates no journal.
        let (folder, _, _, journal) = try campaignFiles(tokens: 0)
        defer { folder.remove() }
        let badFile = try folder.file("bad.txt", contents: tokens(2).joined(separator: "\nnot-a-token\n") + "\n")
        let strict = try CommandRunner.run(base + ["--tokens-file", badFile, "--title", "Hi", "--journal", journal, "--strict"])
        #expect(strict.exitCode == 65 && strict.stderr.contains("1 bad line; nothing sent (--strict)"), "\(strict.stderr)")
        #expect(!FileManager.default.fileExists(atPath: journal))
        let window = try CommandRunner.run(base + ["--tokens-file", "t.txt", "--title", "Hi", "--journal", "j.db", "--journal-window", "100"])
        #expect(window.exitCode == 64 && window.stderr.contains("--journal-window must be between 128 and 1000000 (got 100)"), "\(window.stderr)")
        let windowAlone = try CommandRunner.run(base + ["--tokens-file", "t.txt", "--title", "Hi", "--journal-window", "512"])
        #expect(windowAlone.exitCode == 64 && windowAlone.stderr.contains("--journal-window applies to --journal"), "\(windowAlone.stderr)")
        let missing = try CommandRunner.run(["campaign", "report", "--journal", "/nonexistent/campaign.db"])
        #expect(missing.exitCode == 66 && missing.stderr.contains("does not exist"), "\(missing.stderr)")
    }
}
