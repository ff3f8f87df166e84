import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ca = KeysExample.path("ca.pem")
private let registerKey = ["--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1"]

private func doctor(_ port: Int, keyFile: String = keyFile, keyID: String = "FORGEKEY01", caFile: String? = ca) throws -> CommandRunner.Result {
    try CommandRunner.run(
        ["doctor", "--url", "https://127.0.0.1:\(port)", "--key-file", keyFile, "--key-id", keyID, "--team-id", "FORGETEAM1",
         "--topic", bundle] + (caFile.map { ["--ca-file", $0] } ?? [])
    )
}

/// The check lines: `ok|warn|FAIL  <check>: …` keyed by check name.
private func checks(_ output: String) -> [String: String] {
    var result: [String: String] = [:]
    for line in output.split(separator: "\n") {
        let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, ["ok", "warn", "FAIL"].contains(String(parts[0])), let colon = parts[1].firstIndex(of: ":") else { continue }
        result[String(parts[1][..<colon]).trimmingCharacters(in: .whitespaces)] = String(parts[0])
    }
    return result
}

@Suite("apnsctl doctor", .serialized, .timeLimit(.minutes(2)))
struct DoctorTests {
    @Test("Against a healthy local server every check passes, the clock included; nothing secret is printed")
    func healthy() throws {
        let server = try ServerProcess(registerKey + ["--quiet"])
        let result = try doctor(server.port)
        _ = server.stop()
        #expect(result.exitCode == 0, "\(result.stdout)\(result.stderr)")
        let found = checks(result.stdout)
        for check in ["key file", "key and team ids", "provider token", "name resolution", "TCP", "TLS", "ALPN", "authenticated request", "clock"] {
            #expect(found[check] == "ok", "\(check): \(result.stdout)")
        }
        #expect(result.stdout.hasSuffix("all checks passed\n"))
        #expect(!(result.stdout + result.stderr).contains("eyJ") && !(result.stdout + result.stderr).contains("PRIVATE KEY"))
    }

    @Test("A key id the server does not know: the provider token is refused, and the fix names the ids (65)")
    func wrongKeyID() throws {
        let server = try ServerProcess(registerKey + ["--quiet"])
        let result = try doctor(server.port, keyID: "FORGEKEY02")
        _ = server.stop()
        #expect(result.exitCode == 65, "\(result.stdout)")
        #expect(checks(result.stdout)["authenticated request"] == "FAIL")
        #expect(result.stdout.contains("403 InvalidProviderToken") && result.stdout.contains("--key-id and --team-id do not belong together"))
        #expect(checks(result.stdout)["TLS"] == "ok")
        // The file's name names FORGEKEY01: one line for the check, a warning, not an ok besides.
        let idLines = result.stdout.split(separator: "\n").filter { $0.contains("key and team ids:") }
        #expect(idLines.count == 1 && idLines.first?.hasPrefix("warn") == true, "\(idLines)")
        #expect(result.stdout.contains("the key file is AuthKey_FORGEKEY01.p8 but the key id is FORGEKEY02"))
        // send makes the same check before its first push, as a warning.
        let sent = try CommandRunner.run([
            "send", "--url", "https://127.0.0.1:9", "--ca-file", ca, "--key-file", keyFile, "--key-id", "FORGEKEY02", "--team-id", "FORGETEAM1",
            "--topic", bundle, "--token", String(repeating: "ab", count: 32), "--title", "Hi",
        ])
        #expect(sent.stderr.contains("warning: the key file is AuthKey_FORGEKEY01.p8 but the key id is FORGEKEY02"), "\(sent.stderr)")
    }

    @Test("A damaged key file fails first, before any network check (65)")
    func damagedKey() throws {
        let file = try TemporaryFolder.inProcess("doctor").appendingPathComponent("AuthKey_FORGEKEY01.p8")
        try Data("-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n".utf8).write(to: file)
        let result = try doctor(1, keyFile: file.path)
        #expect(result.exitCode == 65, "\(result.stdout)")
        #expect(checks(result.stdout)["key file"] == "FAIL" && checks(result.stdout)["TCP"] == nil)
    }

    @Test("A closed port fails at TCP (69); an untrusted certificate fails at TLS (69)")
    func network() throws {
        let server = try ServerProcess(["--quiet"] + registerKey)
        let untrusted = try doctor(server.port, caFile: nil)
        _ = server.stop()
        // Not the stopped server's port: a test running beside this one may listen there by now.
        let refusing = try ClosedPort()
        let closed = try doctor(refusing.port)
        refusing.close()
        #expect(closed.exitCode == 69 && checks(closed.stdout)["TCP"] == "FAIL", "\(closed.stdout)")
        #expect(untrusted.exitCode == 69 && checks(untrusted.stdout)["TLS"] == "FAIL", "\(untrusted.stdout)")
        #expect(untrusted.stdout.contains("--ca-file"))
        // The fixes fit the case: a refused local port is no firewall; a --ca-file that does not
        // verify the server is no missing ca-certificates.
        #expect(closed.stdout.contains("is the local server (apnsctl serve) running") && !closed.stdout.contains("firewall"), "\(closed.stdout)")
        let otherCA = KeysExample.path("client.pem")
        let server2 = try ServerProcess(["--quiet"] + registerKey)
        let wrongCA = try doctor(server2.port, caFile: otherCA)
        _ = server2.stop()
        #expect(checks(wrongCA.stdout)["TLS"] == "FAIL" && wrongCA.stdout.contains("did not verify against \(otherCA)")
                && !wrongCA.stdout.contains("install ca-certificates"), "\(wrongCA.stdout)")
    }

    @Test("--help explains the checks and exit codes")
    func help() throws {
        let result = try CommandRunner.run(["doctor", "--help"])
        #expect(result.exitCode == 0 && result.stdout.contains("ALPN") && result.stdout.contains("69"))
    }
}
