import ForgeAPNsCore
import ForgeCrypto
import ForgeTestSupport
import Foundation
import Testing

private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let publicKeyFile = KeysExample.path("AuthKey_FORGEKEY01.pub.pem")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let token = String(repeating: "0123456789abcdef", count: 4)
private let payloads = KeysExample.directory.appendingPathComponent("payloads")

private func payload(_ name: String) -> String { payloads.appendingPathComponent(name).path }

/// Writes `bytes` to a new temporary file and returns its path.
private func temporaryFile(_ bytes: [UInt8], name: String = "file") throws -> String {
    let directory = try TemporaryFolder.inProcess("apnsctl-tests")
    let url = directory.appendingPathComponent(name)
    try Data(bytes).write(to: url)
    return url.path
}

@Suite("apnsctl: help and usage")
struct APNSCtlHelpTests {
    @Test("Colour: on a terminal unless NO_COLOR is set, with --color always on a pipe, never with --color never; an unknown value is 64")
    func colour() throws {
        let red = "\u{1B}[31merror:\u{1B}[0m unknown command 'sned'"
        func onTerminal(_ command: String) throws -> String {
            // script(1) gives the command a pseudo-terminal, as a person's shell would; NO_COLOR is
            // taken out of the test runner's environment (set there, it would decide the case).
            try ChildProcess.run(
                URL(fileURLWithPath: "/usr/bin/script"), ["-qec", command, "/dev/null"],
                environment: CommandRunner.environment().filter { $0.key != "NO_COLOR" },
                timeout: .seconds(30)
            ).stdout
        }
        let binary = CommandRunner.binary.path
        let terminal = try onTerminal("\(binary) sned")
        #expect(terminal.contains(red), "\(Array(terminal.unicodeScalars.prefix(80)))")
        #expect(!(try onTerminal("NO_COLOR=1 \(binary) sned").contains("\u{1B}[")))
        #expect(!(try onTerminal("\(binary) --color never sned").contains("\u{1B}[")))
        let piped = try CommandRunner.run(["sned"])
        #expect(!piped.stderr.contains("\u{1B}[") && piped.stderr.hasPrefix("error: unknown command 'sned'"))
        let always = try CommandRunner.run(["--color=always", "sned"])
        #expect(always.stderr.hasPrefix(red), "\(always.stderr)")
        // Verdicts: accepted in green, a rejection's reason in red.
        let server = try ServerProcess(["--quiet", "--topic", "com.example.forgepush", "--unregistered", String(repeating: "0f", count: 32)])
        let sent = try CommandRunner.run([
            "send", "--color", "always", "--format", "human", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", KeysExample.path("ca.pem"),
            "--key-file", KeysExample.path("AuthKey_FORGEKEY01.p8"), "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1",
            "--topic", "com.example.forgepush", "--token", String(repeating: "ab", count: 32), "--token", String(repeating: "0f", count: 32),
            "--title", "Hi",
        ])
        server.stop()
        #expect(sent.stdout.contains("200 \u{1B}[32maccepted\u{1B}[0m") && sent.stdout.contains("410 \u{1B}[31mUnregistered\u{1B}[0m"),
                "\(sent.stdout)")
        let bad = try CommandRunner.run(["--color", "sometimes", "send"])
        #expect(bad.exitCode == 64 && bad.stderr.contains("--color must be auto, always or never (got 'sometimes')"))
    }

    @Test("A mistyped command or environment gets a did-you-mean, exit 64", arguments: [
        (["sned", "--token", "ab"], "error: unknown command 'sned'; did you mean 'send'?"),
        (["dcotor"], "error: unknown command 'dcotor'; did you mean 'doctor'?"),
        (["xyzzy"], "error: unknown command 'xyzzy'\n"),
        (["send", "--environment", "prod", "--token", "ab"], "did you mean 'production'? (production, sandbox or development)"),
    ])
    func didYouMean(arguments: [String], message: String) throws {
        let result = try CommandRunner.run(arguments)
        #expect(result.exitCode == 64 && result.stderr.contains(message), "\(result.stderr)")
        let variable = try CommandRunner.run(["send", "--dry-run", "--topic", "com.example.forgepush", "--token", String(repeating: "ab", count: 32),
                                              "--title", "Hi"], environment: ["APNS_ENVIRONMENT": "sandbx"])
        #expect(variable.exitCode == 64 && variable.stderr.contains("(got 'sandbx'); did you mean 'sandbox'?"), "\(variable.stderr)")
    }

    @Test("Every command has --help", arguments: [[], ["send"], ["jwt"]])
    func help(_ command: [String]) throws {
        let result = try CommandRunner.run(command + ["--help"])
        #expect(result.exitCode == 0)
        #expect(result.stdout.contains("USAGE: apnsctl"))
        #expect(result.stdout.contains("OPTIONS:"))
    }

    @Test("The root help lists the subcommands and the exit codes")
    func rootHelp() throws {
        let result = try CommandRunner.run(["--help"])
        #expect(result.stdout.contains("send"))
        #expect(result.stdout.contains("jwt"))
        #expect(result.stdout.contains("65 bad data"))
    }

    @Test("send --help lists every push type")
    func pushTypesListed() throws {
        let result = try CommandRunner.run(["send", "--help"])
        for pushType in APNSPushType.allCases {
            #expect(result.stdout.contains(pushType.rawValue))
        }
    }

    @Test("An unknown push type is a usage error (64)")
    func unknownPushType() throws {
        let result = try CommandRunner.run(
            ["send", "--dry-run", "--token", token, "--topic", "com.example.forgepush", "--push-type", "notification",
             "--payload", payload("alert.json")]
        )
        #expect(result.exitCode == 64)
        #expect(result.stderr.contains("--push-type"))
    }

    @Test("A missing --token is a usage error (64)")
    func missingToken() throws {
        let result = try CommandRunner.run(["send", "--dry-run", "--topic", "com.example.forgepush", "--payload", payload("alert.json")])
        #expect(result.exitCode == 64)
        #expect(result.stderr.contains("--token"))
    }

    @Test("Sending without --dry-run says what is missing (64)")
    func notYetSending() throws {
        let result = try CommandRunner.run(["send", "--token", token, "--topic", "com.example.forgepush", "--payload", payload("alert.json")])
        #expect(result.exitCode == 64)
        #expect(result.stderr.contains("--dry-run"))
    }
}

@Suite("apnsctl jwt")
struct APNSCtlJWTTests {
    @Test("Prints a provider token that verifies with the public key")
    func verifies() throws {
        let result = try CommandRunner.run(["jwt"] + credentials)
        #expect(result.exitCode == 0, "\(result.stderr)")
        let jwt = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(jwt.split(separator: ".").count == 3)
        let verifier = APNSProviderTokenVerifier(
            keys: [try APNSKeyID("FORGEKEY01"): try APNSVerificationKey(contentsOfFile: publicKeyFile)]
        )
        let verified = try verifier.verify(jwt, now: Date())
        #expect(verified.teamID == "FORGETEAM1")
    }

    @Test("Credentials come from the environment too")
    func environment() throws {
        let result = try CommandRunner.run(
            ["jwt"], environment: ["APNS_KEY_FILE": keyFile, "APNS_KEY_ID": "FORGEKEY01", "APNS_TEAM_ID": "FORGETEAM1"]
        )
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: ".").count == 3)
    }

    @Test("A missing key file exits 66 and names the flag")
    func missingKeyFile() throws {
        let result = try CommandRunner.run(["jwt", "--key-file", "/nonexistent/AuthKey.p8", "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"])
        #expect(result.exitCode == 66)
        #expect(result.stderr.contains("--key-file"))
    }

    @Test("A damaged .p8 exits 65")
    func damagedKey() throws {
        var pem = Array(try String(contentsOfFile: keyFile, encoding: .utf8).utf8)
        pem.removeSubrange(40..<60)
        let path = try temporaryFile(pem, name: "damaged.p8")
        let result = try CommandRunner.run(["jwt", "--key-file", path, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"])
        #expect(result.exitCode == 65)
        #expect(result.stderr.contains("--key-file"))
        #expect(!result.stderr.contains("MIG"))  // no key material in the message
    }

    @Test("A key id of the wrong length exits 65 and names the flag and the rule")
    func wrongKeyIDLength() throws {
        let result = try CommandRunner.run(["jwt", "--key-file", keyFile, "--key-id", "FORGEKEY1", "--team-id", "FORGETEAM1"])
        #expect(result.exitCode == 65)
        #expect(result.stderr.contains("--key-id 'FORGEKEY1': key id must be exactly 10 characters (got 9)"))
    }

    @Test("A missing --team-id is a usage error (64)")
    func missingTeamID() throws {
        let result = try CommandRunner.run(["jwt", "--key-file", keyFile, "--key-id", "FORGEKEY01"])
        #expect(result.exitCode == 64)
        #expect(result.stderr.contains("--team-id"))
    }
}

@Suite("apnsctl send --dry-run")
struct APNSCtlDryRunTests {
    @Test("Prints the exact request, with the authorization redacted")
    func exactRequest() throws {
        let body = #"{"aps":{"alert":{"body":"Hello"}}}"#
        let path = try temporaryFile(Array(body.utf8), name: "p.json")
        let result = try CommandRunner.run(
            ["send", "--dry-run", "--token", token.uppercased(), "--topic", "com.example.forgepush", "--priority", "5",
             "--expiration", "0", "--collapse-id", "c1", "--apns-id", "123E4567-E89B-12D3-A456-426614174000",
             "--payload", path] + credentials
        )
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(
            result.stdout == """
                :method: POST
                :scheme: https
                :authority: api.push.apple.com
                :path: /3/device/\(token)
                authorization: bearer <redacted>
                apns-push-type: alert
                apns-topic: com.example.forgepush
                apns-priority: 5
                apns-expiration: 0
                apns-collapse-id: c1
                apns-id: 123e4567-e89b-12d3-a456-426614174000

                \(body)

                """
        )
        #expect(!result.stdout.contains("eyJ"))  // no JWT
    }

    @Test("--json prints one object that parses back")
    func json() throws {
        let result = try CommandRunner.run(
            ["send", "--dry-run", "--json", "--environment", "sandbox", "--token", token, "--topic", "com.example.forgepush",
             "--push-type", "liveactivity", "--priority", "10", "--payload", payload("liveactivity-update.json")] + credentials
        )
        #expect(result.exitCode == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(object["method"] as? String == "POST")
        #expect(object["authority"] as? String == "api.sandbox.push.apple.com")
        #expect(object["path"] as? String == "/3/device/\(token)")
        let headers = try #require(object["headers"] as? [String: String])
        #expect(headers["authorization"] == "bearer <redacted>")
        #expect(headers["apns-topic"] == "com.example.forgepush.push-type.liveactivity")
        #expect(headers["apns-push-type"] == "liveactivity")
        #expect(headers["apns-priority"] == "10")
        let sent = try #require(object["body"] as? [String: Any])
        let expected = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: payload("liveactivity-update.json"))))
        #expect(NSDictionary(dictionary: sent).isEqual(expected))
    }

    @Test("Several tokens give one request each")
    func severalTokens() throws {
        let other = String(repeating: "fe", count: 32)
        let result = try CommandRunner.run(
            ["send", "--dry-run", "--json", "--token", token, "--token", other, "--topic", "com.example.forgepush",
             "--payload", payload("alert.json")]
        )
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == 2)
        #expect(result.stderr.contains("no --key-file"))
    }

    @Test("The payload can come from standard input")
    func stdinPayload() throws {
        let result = try CommandRunner.run(
            ["send", "--dry-run", "--token", token, "--topic", "com.example.forgepush", "--push-type", "background", "--payload", "-"],
            stdin: Array(#"{"aps":{"content-available":1}}"#.utf8)
        )
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout.contains("apns-priority: 5"))
    }

    @Test("A broadcast renders /4/broadcasts with the channel header")
    func broadcast() throws {
        let result = try CommandRunner.run(
            ["send", "--dry-run", "--channel-id", "dHJhY2tpbmc=", "--topic", "com.example.forgepush",
             "--payload", payload("broadcast-update.json")] + credentials
        )
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout.contains(":path: /4/broadcasts/apps/com.example.forgepush"))
        #expect(result.stdout.contains("apns-channel-id: dHJhY2tpbmc="))
        #expect(result.stdout.contains("apns-expiration: 0"))
        #expect(!result.stdout.contains("apns-topic"))
    }

    static let badInputs: [BadInput] = [
        BadInput(name: "bad token", arguments: ["--token", "abc"], exitCode: 65,
                 message: "--token 'abc': device token must have an even number of hex digits (got 3)"),
        BadInput(name: "collapse id over 64 bytes", arguments: ["--token", token, "--collapse-id", String(repeating: "x", count: 65)],
                 exitCode: 65, message: "--collapse-id: apns-collapse-id must be at most 64 bytes of UTF-8 (got 65)"),
        BadInput(name: "background with priority 10", arguments: ["--token", token, "--push-type", "background", "--priority", "10"],
                 exitCode: 65, message: "--priority: apns-priority must be 5 for push type background (got 10)"),
        BadInput(name: "topic with another type's suffix", arguments: ["--token", token, "--topic", "com.example.forgepush.voip"],
                 exitCode: 65, message: "--topic 'com.example.forgepush.voip': apns-topic 'com.example.forgepush.voip' ends in '.voip'"),
        BadInput(name: "bad apns-id", arguments: ["--token", token, "--apns-id", "42"], exitCode: 65, message: "--apns-id '42': apns-id must be a UUID"),
        BadInput(name: "bad expiration", arguments: ["--token", token, "--expiration", "soon"], exitCode: 65,
                 message: "--expiration: apns-expiration must be a non-negative whole number"),
        BadInput(name: "missing payload file", arguments: ["--token", token, "--payload", "/nonexistent.json"], exitCode: 66,
                 message: "--payload: file '/nonexistent.json' does not exist"),
        BadInput(name: "missing key file", arguments: ["--token", token, "--key-file", "/nonexistent.p8", "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"],
                 exitCode: 66, message: "--key-file"),
        BadInput(name: "unknown priority", arguments: ["--token", token, "--priority", "7"], exitCode: 64, message: "--priority"),
    ]

    @Test("Bad input exits with the right code and names the flag and the rule", arguments: badInputs)
    func badInput(_ input: BadInput) throws {
        var arguments = ["send", "--dry-run", "--topic", "com.example.forgepush"] + input.arguments
        if !arguments.contains("--payload") { arguments += ["--payload", payload("alert.json")] }
        if let index = arguments.firstIndex(of: "--topic"), arguments.filter({ $0 == "--topic" }).count > 1 {
            arguments.removeSubrange(index...(index + 1))
        }
        let result = try CommandRunner.run(arguments)
        #expect(result.exitCode == input.exitCode, "\(result.stderr)")
        #expect(result.stderr.contains(input.message), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test("A payload over the limit exits 65 with the size and the limit")
    func payloadTooLarge() throws {
        let prefix = #"{"aps":{"alert":"x"},"pad":""#
        let body = prefix + String(repeating: "x", count: 4097 - prefix.utf8.count - 2) + #""}"#
        #expect(body.utf8.count == 4097)
        let path = try temporaryFile(Array(body.utf8))
        let result = try CommandRunner.run(["send", "--dry-run", "--token", token, "--topic", "com.example.forgepush", "--payload", path])
        #expect(result.exitCode == 65)
        #expect(result.stderr.contains("--payload '\(path)': payload is 4097 bytes; the limit for push type alert is 4096 bytes"))
    }

    @Test("Malformed JSON exits 65 and says where")
    func malformedJSON() throws {
        let path = try temporaryFile(Array(#"{"aps":{"alert":"x"}"#.utf8))
        let result = try CommandRunner.run(["send", "--dry-run", "--token", token, "--topic", "com.example.forgepush", "--payload", path])
        #expect(result.exitCode == 65)
        #expect(result.stderr.contains("must be one JSON object"))
    }
}

@Suite("keys-example samples")
struct SampleRenderingTests {
    struct Sample: Sendable, CustomTestStringConvertible {
        var file: String
        var pushType: String
        var priority: String
        var topic: String
        var destination: String
        var testDescription: String { self.file }
    }

    static let samples: [Sample] = {
        let text = (try? String(contentsOf: payloads.appendingPathComponent("manifest.tsv"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").dropFirst().map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return Sample(file: fields[0], pushType: fields[1], priority: fields[2], topic: fields[3], destination: fields[4])
        }
    }()

    @Test("The manifest lists every push type and both broadcast events")
    func coverage() {
        let types = Set(Self.samples.map(\.pushType))
        #expect(types == Set(APNSPushType.allCases.map(\.rawValue)))
        #expect(Self.samples.filter { $0.destination == "broadcast" }.count >= 2)
    }

    @Test("Every sample renders with apnsctl send --dry-run", arguments: samples)
    func renders(_ sample: Sample) throws {
        var arguments = ["send", "--dry-run", "--json", "--topic", sample.topic, "--push-type", sample.pushType,
                         "--payload", payload(sample.file)] + credentials
        if sample.destination == "broadcast" {
            arguments += ["--channel-id", "dHJhY2tpbmc="]
        } else {
            arguments += ["--token", token]
        }
        if sample.priority != "-" { arguments += ["--priority", sample.priority] }
        let result = try CommandRunner.run(arguments)
        #expect(result.exitCode == 0, "\(sample.file): \(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let headers = object?["headers"] as? [String: String]
        #expect(headers?["apns-push-type"] == sample.pushType)
    }
}
