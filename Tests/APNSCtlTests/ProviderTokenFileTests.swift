import ForgeAPNsCore
import ForgeCrypto
import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ca = KeysExample.path("ca.pem")
private let ids = ["--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let registerKey = ["--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1"]
private let device = String(repeating: "ab", count: 32)

/// A provider token for FORGEKEY01 issued `age` seconds ago, signed by `key` (FORGEKEY01's by default).
private func signed(age: TimeInterval, kid: String = "FORGEKEY01", key: APNSSigningKey? = nil) throws -> String {
    try APNSProviderToken.sign(
        keyID: try APNSKeyID(kid), teamID: try APNSTeamID("FORGETEAM1"), issuedAt: Date() - age,
        key: try key ?? APNSSigningKey(contentsOfFile: keyFile)
    ).jwt
}

/// `send` of one push to the server on `port` with the token in `file`.
private func send(port: Int, file: String, extra: [String] = []) -> [String] {
    ["send", "--url", "https://127.0.0.1:\(port)", "--ca-file", ca, "--topic", bundle, "--token", device, "--title", "Hi",
     "--provider-token-file", file, "--json"] + ids + extra
}

@Suite("A provider token kept in a file: jwt --write [--refresh], send --provider-token-file, serve --token-update-limit",
       .serialized, .timeLimit(.minutes(2)))
struct ProviderTokenFileTests {
    @Test("jwt --write writes a token only its owner can read, and says its key id and iat, never the token")
    func write() throws {
        let folder = try TemporaryFolder.inProcess("apnsctl-jwt")
        let path = folder.appendingPathComponent("token").path
        let result = try CommandRunner.run(["jwt", "--key-file", keyFile, "--write", path] + ids)
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout.isEmpty && result.stderr.contains("wrote \(path): key FORGEKEY01, iat "))
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines)
        _ = try APNSProviderToken(
            verifying: text, keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1"),
            key: try APNSSigningKey(contentsOfFile: keyFile).publicKey, now: Date()
        )
        #expect(!result.stderr.contains(text))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("jwt --refresh without --write is a usage error (64)")
    func refreshNeedsWrite() throws {
        let result = try CommandRunner.run(["jwt", "--key-file", keyFile, "--refresh"] + ids)
        #expect(result.exitCode == 64 && result.stderr.contains("--refresh keeps a token file fresh: give --write FILE."), "\(result.stderr)")
    }

    /// The loop a shell pipeline relies on: the file is replaced with a newer token on schedule,
    /// never left empty or half written. Waits for the replacement, bounded; it comes after the
    /// interval the command was given (1 s, under APNs' 20 minutes, so it warns).
    @Test("jwt --write --refresh --refresh-interval 1s replaces the file with a newer valid token, and warns that APNs wants 20 minutes")
    func refreshReplacesTheFile() throws {
        let folder = try TemporaryFolder("apnsctl-jwt-refresh")
        defer { folder.remove() }
        let path = folder.url.appendingPathComponent("token").path
        let refresher = try ChildProcess(
            executable: CommandRunner.binary, arguments: ["jwt", "--key-file", keyFile, "--write", path, "--refresh", "--refresh-interval", "1s"] + ids,
            environment: CommandRunner.environment()
        )
        defer { refresher.terminate() }
        #expect(refresher.waitForStandardError(containing: "wrote \(path)", timeout: .seconds(30)), "\(refresher.standardErrorSoFar)")
        let first = try String(contentsOfFile: path, encoding: .utf8)
        #expect(refresher.waitForStandardError(lines: 3, timeout: .seconds(30)), "\(refresher.standardErrorSoFar)")
        let second = try String(contentsOfFile: path, encoding: .utf8)
        let result = refresher.finish(timeout: .zero)
        let key = try APNSSigningKey(contentsOfFile: keyFile).publicKey
        let tokens = try [first, second].map {
            try APNSProviderToken(
                verifying: $0.trimmingCharacters(in: .newlines), keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1"),
                key: key, now: Date()
            )
        }
        #expect(tokens[1].issuedAt > tokens[0].issuedAt, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("warning: --refresh-interval under 20m: APNs answers TooManyProviderTokenUpdates"), "\(result.stderr)")
        #expect(!result.stderr.contains(first.trimmingCharacters(in: .newlines)), "the token is never printed")
    }

    @Test("--refresh-interval outside 1s…55m, or without --refresh, is a usage error (64)", arguments: [
        (["--refresh", "--refresh-interval", "56m"], "--refresh-interval '56m': expected whole minutes or seconds"),
        (["--refresh", "--refresh-interval", "0s"], "--refresh-interval '0s': expected whole minutes or seconds"),
        (["--refresh-interval", "30m"], "--refresh-interval needs --refresh."),
    ])
    func refreshIntervalRules(_ flags: [String], _ message: String) throws {
        let result = try CommandRunner.run(["jwt", "--key-file", keyFile, "--write", "/nonexistent/token"] + flags + ids)
        #expect(result.exitCode == 64 && result.stderr.contains(message), "\(result.stderr)")
    }

    @Test("send --provider-token-file sends with the file's token; against --token-update-limit 20m, a process signing its own token a minute later is refused TooManyProviderTokenUpdates")
    func sendWithFile() throws {
        let folder = try TemporaryFolder.inProcess("apnsctl-token-file")
        let path = folder.appendingPathComponent("token").path
        try Data((try signed(age: 60) + "\n").utf8).write(to: URL(fileURLWithPath: path))
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--token-update-limit", "20m", "--json"])
        let shared = try CommandRunner.run(send(port: server.port, file: path))
        let again = try CommandRunner.run(send(port: server.port, file: path, extra: ["--key-file", keyFile]))
        let own = try CommandRunner.run(
            ["send", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", ca, "--topic", bundle, "--token", device, "--title", "Hi",
             "--key-file", keyFile, "--json"] + ids
        )
        _ = server.stop()
        #expect(shared.exitCode == 0, "\(shared.stderr)")
        #expect(again.exitCode == 0, "\(again.stderr)")
        #expect(own.exitCode == 1 && own.stdout.contains(#""reason":"TooManyProviderTokenUpdates""#), "\(own.stdout)")
    }

    @Test("A token file that is missing, empty, too old, not a JWT, or not for the key and team: exit 65 naming the file and the rule, nothing sent",
          arguments: [
            ("missing", nil, "no such file"),
            ("empty", "", "is empty"),
            ("old", "old", "the token is too old"),
            ("garbage", "not.a.jwt", "not an ES256 provider token for key FORGEKEY01 of team FORGETEAM1"),
            ("other kid", "kid", "the token is not for key FORGEKEY01 of team FORGETEAM1"),
            ("other key", "forged", "the signature does not verify with key FORGEKEY01"),
          ] as [(String, String?, String)])
    func badFile(name: String, content: String?, rule: String) throws {
        let folder = try TemporaryFolder.inProcess("apnsctl-token-file")
        let path = folder.appendingPathComponent("token").path
        if let content {
            let text: String
            switch content {
            case "old": text = try signed(age: 61 * 60)
            case "kid": text = try signed(age: 0, kid: "FORGEKEY02")
            case "forged": text = try signed(age: 0, key: try APNSSigningKey.generate())
            default: text = content
            }
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        }
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--json"])
        let result = try CommandRunner.run(send(port: server.port, file: path, extra: ["--key-file", keyFile]))
        let served = server.stop()
        #expect(result.exitCode == 65, "\(result.stderr)")
        #expect(result.stderr.contains("--provider-token-file '\(path)': ") && result.stderr.contains(rule), "\(result.stderr)")
        #expect(served.stdout.isEmpty, "nothing sent: \(served.stdout)")
    }

    @Test("serve --token-update-limit takes whole minutes or seconds; anything else is a usage error (64)", arguments: ["20", "20h", "0m", "61m", "1.5m"])
    func badLimit(value: String) throws {
        let result = try CommandRunner.run(["serve", "--h2c", "--port", "0", "--token-update-limit", value])
        #expect(result.exitCode == 64 && result.stderr.contains("--token-update-limit"), "\(result.stderr)")
    }
}
