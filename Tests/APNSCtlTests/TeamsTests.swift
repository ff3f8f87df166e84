import ForgeTestSupport
import Foundation
import Testing

private let keyA = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let keyB = KeysExample.path("AuthKey_FORGEKEY02.p8")
private let appA = "com.teama.app"
private let otherA = "com.teama.other"
private let appB = "com.teamb.app"
/// Each key registered for its own team's bundle ids only: a push with the other team's token is
/// refused, and so is a second team's token on a connection that carried the first's.
private let registerKeys = [
    "--register-key", "\(keyA):FORGEKEY01:FORGETEAM1:\(appA),\(otherA)",
    "--register-key", "\(keyB):FORGEKEY02:FORGETEAM2:\(appB)",
]
private let credentialA = "\(appA),\(otherA)=\(keyA):FORGEKEY01:FORGETEAM1"
private let credentialB = "\(appB)=\(keyB):FORGEKEY02:FORGETEAM2"

private func token(_ index: Int) -> String { String(format: "%064x", index + 1) }

private func send(port: Int) -> [String] {
    ["send", "--url", "https://127.0.0.1:\(port)", "--ca-file", KeysExample.path("ca.pem")]
}

/// The server's `--json` lines: one object per judged request.
private func statuses(_ text: String) throws -> [Int] {
    try text.split(separator: "\n").map { line in
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        return try #require(object["status"] as? Int)
    }
}

/// apnsctl sending for two teams' apps at once: `--credential` per team, NDJSON lines with their own `topic`.
@Suite("apnsctl send: several teams' credentials, NDJSON lines with their own topic", .serialized, .timeLimit(.minutes(2)))
struct TeamsTests {
    @Test("Two --credential flags and a tokens file mixing both teams' topics: every good line accepted; an unserved topic is a bad line")
    func twoCredentialsMixedFile() throws {
        let folder = try TemporaryFolder("apnsctl-teams")
        defer { folder.remove() }
        let lines = [
            token(0),  // --topic's app, the shared payload
            #"{"token":"\#(token(1))","topic":"\#(appB)"}"#,  // the shared payload, team B's app
            #"{"token":"\#(token(2))","topic":"\#(otherA)","payload":{"aps":{"alert":"other A"}}}"#,
            #"{"token":"\#(token(3))","topic":"\#(appB)","payload":{"aps":{"alert":"B"}}}"#,
            #"{"token":"\#(token(4))","topic":"com.teamc.app"}"#,
            #"{"token":"\#(token(5))","topic":"com.teamb.app.voip"}"#,
            #"{"token":"\#(token(6))","topic":7}"#,
            #"{"token":"\#(token(7))","topic":"\#(appB)"}"#,
        ]
        let file = try folder.file("tokens.ndjson", contents: lines.joined(separator: "\n") + "\n")
        let server = try ServerProcess(registerKeys + ["--json"])
        let sent = try CommandRunner.run(
            send(port: server.port) + ["--credential", credentialA, "--credential", credentialB, "--topic", appA,
                                       "--tokens-file", file, "--title", "Hi", "--format", "human"]
        )
        let strict = try CommandRunner.run(
            send(port: server.port) + ["--credential", credentialA, "--credential", credentialB, "--topic", appA,
                                       "--tokens-file", file, "--title", "Hi", "--strict"]
        )
        let served = server.stop()
        #expect(sent.stdout.contains("sent 5: 5 accepted, 0 rejected, 0 failed, 0 not sent in "), "\(sent.stdout)\(sent.stderr)")
        #expect(sent.stdout.contains("3 bad input lines skipped"), "\(sent.stdout)")
        #expect(sent.stderr.contains(
            "\(file):5: \"topic\" 'com.teamc.app': no credential serves bundle id 'com.teamc.app' "
                + "(--credential serves com.teama.app, com.teama.other, com.teamb.app)"
        ), "\(sent.stderr)")
        #expect(sent.stderr.contains("\(file):6: \"topic\" 'com.teamb.app.voip': 'com.teamb.app.voip' ends in '.voip'"), "\(sent.stderr)")
        #expect(sent.stderr.contains("\(file):7: \"topic\" must be a string"), "\(sent.stderr)")
        #expect(sent.exitCode == 1, "bad lines make the exit code 1")
        #expect(strict.exitCode == 65 && strict.stderr.contains("3 bad lines; nothing sent (--strict)"), "\(strict.stderr)")
        // The server accepted each good line once, with the right team's key (anything else is refused there).
        #expect(try statuses(served.stdout) == [200, 200, 200, 200, 200], "\(served.stdout)")
    }

    @Test("The key flags serve every topic no --credential names; a credential swapped between teams is refused by the server")
    func fallbackAndSwapped() throws {
        let folder = try TemporaryFolder("apnsctl-teams")
        defer { folder.remove() }
        let file = try folder.file("tokens.ndjson", contents: [
            #"{"token":"\#(token(0))","topic":"\#(otherA)"}"#,
            #"{"token":"\#(token(1))","topic":"\#(appB)"}"#,
            #"{"token":"\#(token(2))","topic":"\#(appA)"}"#,
        ].joined(separator: "\n") + "\n")
        let server = try ServerProcess(registerKeys + ["--json"])
        let mixed = try CommandRunner.run(
            send(port: server.port) + ["--key-file", keyA, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1",
                                       "--credential", credentialB, "--topic", appA, "--tokens-file", file, "--title", "Hi", "--json"]
        )
        let swapped = try CommandRunner.run(
            send(port: server.port) + ["--credential", "\(appB)=\(keyA):FORGEKEY01:FORGETEAM1", "--topic", appB,
                                       "--token", token(3), "--title", "Hi", "--json"]
        )
        let served = server.stop()
        #expect(mixed.exitCode == 0, "\(mixed.stdout)\(mixed.stderr)")
        #expect(mixed.stdout.components(separatedBy: "\"outcome\":\"accepted\"").count == 4, "\(mixed.stdout)")
        #expect(swapped.exitCode == 1, "\(swapped.stdout)\(swapped.stderr)")
        #expect(swapped.stdout.contains("InvalidProviderToken"), "\(swapped.stdout)")
        #expect(try statuses(served.stdout) == [200, 200, 200, 403], "\(served.stdout)")
    }

    @Test("A --credential that cannot be used: 64 for its shape (and in doctor), 65 for a bad id, 66 for a missing key file, before anything is sent")
    func badCredentialFlags() throws {
        let base = ["send", "--url", "https://127.0.0.1:9", "--topic", appA, "--token", token(0), "--title", "Hi"]
        let shape = try CommandRunner.run(base + ["--credential", "\(keyA):FORGEKEY01:FORGETEAM1"])
        #expect(shape.exitCode == 64 && shape.stderr.contains("must be bundle ids (comma-separated) = .p8 file : key id : team id"),
                "\(shape.stderr)")
        let badID = try CommandRunner.run(base + ["--credential", "\(appA)=\(keyA):FORGEKEY1:FORGETEAM1"])
        #expect(badID.exitCode == 65 && badID.stderr.contains("--credential 'FORGEKEY1:FORGETEAM1'"), "\(badID.stderr)")
        let badBundle = try CommandRunner.run(base + ["--credential", "com.a_b=\(keyA):FORGEKEY01:FORGETEAM1"])
        #expect(badBundle.exitCode == 65 && badBundle.stderr.contains("--credential 'com.a_b'"), "\(badBundle.stderr)")
        let missing = try CommandRunner.run(base + ["--credential", "\(appA)=/nonexistent/AuthKey.p8:FORGEKEY01:FORGETEAM1"])
        #expect(missing.exitCode == 66 && missing.stderr.contains("--credential"), "exit \(missing.exitCode): \(missing.stderr)")
        let twice = try CommandRunner.run(base + ["--credential", credentialA, "--credential", "\(appA)=\(keyB):FORGEKEY02:FORGETEAM2"])
        #expect(twice.exitCode == 65 && twice.stderr.contains("'com.teama.app' is already served by credentials[0]"), "\(twice.stderr)")
        let doctor = try CommandRunner.run(["doctor", "--credential", credentialA, "--topic", appA])
        #expect(doctor.exitCode == 64 && doctor.stderr.contains("doctor checks one credential"), "\(doctor.stderr)")
    }
}
