import ForgeAPNsCore
import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing

// Issue 14, items 1, 3, 6 and 10: what apnsctl prints and sends is valid JSON, and input it cannot
// send is refused before anything is sent, with a message naming the flag and the rule.

private let bundle = "com.example.forgepush"
private let token = String(repeating: "ab", count: 32)
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ca = KeysExample.path("ca.pem")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]

/// A new temporary folder for this test run, removed as the test process exits.
private let scratch: URL = {
    guard let url = try? TemporaryFolder.inProcess("apnsctl-input") else { fatalError("cannot create the input tests' folder") }
    return url
}()

/// Writes `bytes` to a file named `name` in the scratch folder and returns its path.
private func file(_ name: String, _ bytes: [UInt8]) -> String {
    let url = scratch.appendingPathComponent(name)
    try? Data(bytes).write(to: url)
    return url.path
}

private func file(_ name: String, _ text: String) -> String { file(name, Array(text.utf8)) }

/// The body of a text dry run: what follows the blank line, without Output's newline.
private func dryRunBody(_ stdout: String) -> String {
    String(stdout.components(separatedBy: "\n\n").dropFirst().joined(separator: "\n\n").dropLast())
}

@Suite("apnsctl input validation: valid JSON out, clear errors in", .timeLimit(.minutes(2)))
struct InputValidationTests {
    @Test(
        "A payload built from flags without --data is valid JSON in --dry-run (text and --json)",
        arguments: [
            (["--title", "Hi"], #"{"aps":{"alert":{"title":"Hi"}}}"#),
            (["--badge", "0"], #"{"aps":{"badge":0}}"#),
            (["--push-type", "background", "--content-available"], #"{"aps":{"content-available":1}}"#),
        ]
    )
    func dryRunFromFlags(_ flags: [String], _ expected: String) throws {
        let base = ["send", "--dry-run", "--topic", bundle, "--token", token] + flags
        let text = try CommandRunner.run(base)
        #expect(text.exitCode == 0, "\(text.stderr)")
        let body = dryRunBody(text.stdout)
        #expect(body == expected)
        #expect(try JSONSerialization.jsonObject(with: Data(body.utf8)) is [String: Any])
        let json = try CommandRunner.run(base + ["--json"])
        #expect(json.exitCode == 0, "\(json.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(object?["body"] is [String: Any], "\(json.stdout)")
    }

    static let directory = scratch.path
    static let badInputs: [BadInput] = [
        // Item 6: --url ports, payload bytes and numbers.
        BadInput(name: "a --url port above 65535", arguments: ["--url", "https://localhost:99999"], exitCode: 64,
                 message: "--url: the port must be 1-65535 (got '99999' in 'https://localhost:99999')"),
        BadInput(name: "a --url port of 0", arguments: ["--url", "https://127.0.0.1:0"], exitCode: 64, message: "--url: the port must be 1-65535"),
        BadInput(name: "a --url port too large for an Int", arguments: ["--url", "https://localhost:99999999999999999999"], exitCode: 64,
                 message: "--url: the port must be 1-65535"),
        BadInput(name: "a --url IPv6 port above 65535", arguments: ["--url", "http://[::1]:70000"], exitCode: 64,
                 message: "--url: the port must be 1-65535"),
        BadInput(name: "a --payload file that is not UTF-8",
                 arguments: ["--payload", file("latin1.json", Array(#"{"aps":{"alert":"caf"#.utf8) + [0xE9] + Array(#""}}"#.utf8))],
                 exitCode: 65, message: "latin1.json': payload must be UTF-8 (bytes 0xe9 0x22 at column 21 are not UTF-8)"),
        BadInput(name: "a --payload badge of 1e999", arguments: ["--payload", file("inf.json", #"{"aps":{"alert":"x","badge":1e999}}"#)],
                 exitCode: 65, message: "inf.json': payload must hold only numbers that fit a 64-bit double (the number 1e999"),
        BadInput(name: "a --payload number of -1e400", arguments: ["--payload", file("minf.json", #"{"aps":{"alert":"x"},"v":-1e400}"#)],
                 exitCode: 65, message: "too large for a 64-bit double"),
        BadInput(name: "a --payload lone surrogate", arguments: ["--payload", file("surrogate.json", #"{"aps":{"alert":"\ud800"}}"#)],
                 exitCode: 65, message: "half a surrogate pair"),
        BadInput(name: "a --data value of 1e999", arguments: ["--title", "x", "--data", "k=1e999"], exitCode: 65,
                 message: "--data 'k=1e999': the value must be JSON: the number 1e999 at column 1 is too large for a 64-bit double"),
        // Item 10: the flag and the rule, not "Missing value" or another flag.
        BadInput(name: "a negative --badge", arguments: ["--title", "x", "--badge", "-1"], exitCode: 65,
                 message: "--badge: aps.badge must be 0 or more (got -1)"),
        BadInput(name: "a negative --expiration", arguments: ["--title", "x", "--expiration", "-5"], exitCode: 65,
                 message: "--expiration: apns-expiration must be"),
        BadInput(name: "a --relevance-score above 1", arguments: ["--title", "x", "--relevance-score", "2"], exitCode: 65,
                 message: "--relevance-score: aps.relevance-score must be between 0 and 1"),
        BadInput(name: "a negative --relevance-score", arguments: ["--title", "x", "--relevance-score", "-0.5"], exitCode: 65,
                 message: "--relevance-score: aps.relevance-score must be between 0 and 1 for notifications (got -0.5)"),
        BadInput(name: "a directory as --payload", arguments: ["--payload", directory], exitCode: 66,
                 message: "--payload: '\(directory)' is a directory, not a file"),
        BadInput(name: "a directory as --tokens-file", arguments: ["--title", "x", "--tokens-file", directory], exitCode: 66,
                 message: "--tokens-file: '\(directory)' is a directory, not a file"),
        BadInput(name: "a directory as --ca-file", arguments: ["--title", "x", "--ca-file", directory], exitCode: 66,
                 message: "--ca-file: '\(directory)' is a directory, not a file"),
        BadInput(name: "a directory as --cert", arguments: ["--title", "x", "--cert", directory, "--cert-key", directory], exitCode: 66,
                 message: "--cert: '\(directory)' is a directory, not a file"),
        BadInput(name: "a directory as --cert-key", arguments: ["--title", "x", "--cert", ca, "--cert-key", directory], exitCode: 66,
                 message: "--cert-key: '\(directory)' is a directory, not a file"),
        BadInput(name: "a directory as --p12", arguments: ["--title", "x", "--p12", directory, "--p12-password-env", "HOME"], exitCode: 66,
                 message: "--p12: '\(directory)' is a directory, not a file"),
        BadInput(name: "a directory as --key-file", arguments: ["--title", "x", "--key-file", directory, "--key-id", "FORGEKEY01",
                                                                 "--team-id", "FORGETEAM1"], exitCode: 65,
                 message: "--key-file: key file '\(directory)': is a directory"),
        BadInput(name: "a --ca-file that is not PEM", arguments: ["--title", "x", "--ca-file", file("garbage.pem", "not a certificate\n")],
                 exitCode: 65, message: "--ca-file '\(scratch.path)/garbage.pem': must be a readable PEM file of CA certificates"),
    ]

    @Test("Bad input is refused before anything is sent, naming the flag and the rule", arguments: badInputs)
    func badInput(_ input: BadInput) throws {
        // Nothing listens on port 9 of loopback: a connection attempt would fail with 69, not these codes.
        var arguments = ["send", "--topic", bundle] + input.arguments
        if !arguments.contains("--url") { arguments += ["--url", "https://127.0.0.1:9"] }
        if !arguments.contains("--tokens-file") { arguments += ["--token", token] }
        let usesCertificate = arguments.contains("--cert") || arguments.contains("--p12") || arguments.contains("--key-file")
        if !usesCertificate { arguments += credentials }
        let result = try CommandRunner.run(arguments)
        #expect(result.exitCode == input.exitCode, "\(result.stderr)")
        #expect(result.stderr.contains(input.message), "\(result.stderr)")
        #expect(result.stdout.isEmpty, "\(result.stdout)")
    }

    @Test("A UTF-8 byte order mark at the start of a tokens file or a payload file is skipped, as editors on Windows write one")
    func byteOrderMark() throws {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let payload = file("bom-payload.json", bom + Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        let dry = try CommandRunner.run(["send", "--dry-run", "--topic", bundle, "--token", token, "--payload", payload])
        #expect(dry.exitCode == 0 && dryRunBody(dry.stdout) == #"{"aps":{"alert":"hi"}}"#, "\(dry.stderr)")
        let tokens = file("bom-tokens.txt", bom + Array("\(token)\n\(String(repeating: "cd", count: 32))\n".utf8))
        let server = try ServerProcess(["--quiet", "--topic", bundle])
        let sent = try CommandRunner.run(["send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca] + credentials
            + ["--topic", bundle, "--tokens-file", tokens, "--payload", payload, "--json"])
        server.stop()
        #expect(sent.exitCode == 0, "\(sent.stderr)")
        #expect(sent.stdout.components(separatedBy: "\"outcome\":\"accepted\"").count - 1 == 2, "\(sent.stdout)")
    }

    @Test("A payload built from flags that is too large blames the flag that holds the most of it")
    func tooLargeBlamesTheFlag() throws {
        let big = String(repeating: "x", count: 5_000)
        let body = try CommandRunner.run(["send", "--dry-run", "--topic", bundle, "--token", token, "--title", "Hi", "--body", big])
        #expect(body.exitCode == 65 && body.stderr.contains("--body: payload is"), "\(body.stderr)")
        let data = try CommandRunner.run(["send", "--dry-run", "--topic", bundle, "--token", token, "--title", "Hi", "--data", "blob=\"\(big)\""])
        #expect(data.exitCode == 65 && data.stderr.contains("--data: payload is"), "\(data.stderr)")
    }

    @Test("A Live Activity relevance score may be negative; the flag parses it")
    func negativeActivityRelevance() throws {
        let result = try CommandRunner.run([
            "activity", "update", "--dry-run", "--topic", bundle, "--token", token, "--content-state", #"{"eta":3}"#,
            "--relevance-score", "-1", "--timestamp", "1700000000",
        ])
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""relevance-score":-1"#), "\(result.stdout)")
    }

    @Test("NDJSON lines follow the --payload rules: each bad line reported as FILE:LINE and skipped (--strict: nothing sent)")
    func ndjsonLines() throws {
        let lines: [[UInt8]] = [
            Array(#"{"token":"\#(token)","payload":{"aps":{"alert":"x","badge":1e999}}}"#.utf8),
            Array(#"{"token":"\#(token)","payload":{"aps":{"alert":""#.utf8) + [0xFF] + Array(#""}}}"#.utf8),
            Array(#"{"token":"\#(token)","payload":{"aps":{"alert":"\udc00"}}}"#.utf8),
            Array(#"{"token":"\#(token)","payload":{"aps":{"alert":"ok"},"n":18446744073709551615}}"#.utf8),
        ]
        let path = file("lines.ndjson", Array(lines.joined(separator: [0x0A])) + [0x0A])
        let result = try CommandRunner.run(["send", "--url", "https://127.0.0.1:9", "--topic", bundle, "--tokens-file", path, "--strict"]
                                           + credentials)
        #expect(result.exitCode == 65, "\(result.stderr)")
        let reported = result.stderr.split(separator: "\n").map(String.init)
        #expect(reported.contains("\(path):1: not valid JSON: the number 1e999 at column 115 is too large for a 64-bit double"), "\(result.stderr)")
        #expect(reported.contains("\(path):2: not UTF-8: byte 0xff at column 104 is not UTF-8"), "\(result.stderr)")
        #expect(reported.contains { $0.hasPrefix("\(path):3: not valid JSON: \\uDC00 at column") }, "\(result.stderr)")
        #expect(!reported.contains { $0.hasPrefix("\(path):4:") }, "an integer above Int64.max is kept, not refused: \(result.stderr)")
        #expect(result.stderr.contains("3 bad lines; nothing sent (--strict)"))
    }

    @Test("apnsctl serve answers 200 for a body a device cannot read (P3) and warns, in text and in --json")
    func serveWarns() async throws {
        let broken = Array(#"{"aps":{"alert":{"title":"Hi"}}{"#.utf8)
        let expected = "body is not valid JSON: unexpected '{' at column 32 (expected ',' or '}')"
        for json in [false, true] {
            let server = try ServerProcess(["--topic", bundle] + (json ? ["--json"] : []))
            let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(
                host: "localhost", port: server.port, tls: HTTP2TLSConfiguration(trustRoots: .file(ca))
            ))
            let headers = [HTTP2HeaderField("apns-topic", bundle), HTTP2HeaderField("apns-push-type", "alert")]
            let brokenResponse = try await connection.send(
                HTTP2Request(authority: "localhost", path: "/3/device/" + token, headers: headers, body: broken)
            )
            let fine = try await connection.send(
                HTTP2Request(authority: "localhost", path: "/3/device/" + token, headers: headers, body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
            )
            await connection.close()
            let served = server.stop()
            #expect(brokenResponse.status == 200 && fine.status == 200)
            let lines = served.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 2, "\(served.stdout)")
            if json {
                let objects = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                #expect(objects.first??["warning"] as? String == expected, "\(served.stdout)")
                #expect(objects.last??["warning"] == nil, "\(served.stdout)")
            } else {
                #expect(lines.first?.hasSuffix(" (warning: \(expected))") == true, "\(served.stdout)")
                #expect(lines.last?.contains("warning") == false, "\(served.stdout)")
            }
        }
    }
}
