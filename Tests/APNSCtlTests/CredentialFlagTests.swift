import ForgeTestSupport
import Foundation
import Testing

private let token = String(repeating: "ab", count: 32)
private func keys(_ name: String) -> String { KeysExample.directory.appendingPathComponent(name).path }
private let push = ["--token", token, "--topic", "com.example.forgepush", "--payload", keys("payloads/alert.json")]
private let keyAuth = ["--key-file", keys("AuthKey_FORGEKEY01.p8"), "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]

@Suite("apnsctl: certificate and TLS flags checked before connecting", .timeLimit(.minutes(2)))
struct CredentialFlagTests {
    @Test("A wrong --p12 password is 65 naming --p12, with --dry-run and without, before any connect")
    func wrongPassword() throws {
        let p12 = ["--p12", keys("client.p12"), "--p12-password-env", "FORGE_TEST_P12_PASSWORD"]
        for dryRun in [true, false] {
            let result = try CommandRunner.run(
                ["send"] + (dryRun ? ["--dry-run"] : ["--url", "https://127.0.0.1:1"]) + push + p12,
                environment: ["FORGE_TEST_P12_PASSWORD": "not-the-password"]
            )
            #expect(result.exitCode == 65, "\(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains("--p12") && result.stderr.contains("wrong password"), "\(result.stderr)")
            #expect(!result.stderr.contains("cannot reach") && !result.stderr.contains("not-the-password"), "\(result.stderr)")
        }
    }

    @Test("A corrupt --cert, a --cert-key of another certificate and a garbage --ca-file are 65 naming the flag")
    func corruptFiles() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apnsctl-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let garbage = folder.appendingPathComponent("garbage.pem").path
        try Data("garbage\n".utf8).write(to: URL(fileURLWithPath: garbage))
        let cases: [([String], String)] = [
            (["--cert", garbage, "--cert-key", keys("client.key")], "--cert '"),
            (["--cert", keys("client.pem"), "--cert-key", keys("server.key")], "--cert-key '"),
            (keyAuth + ["--ca-file", garbage], "--ca-file '"),
        ]
        for (flags, named) in cases {
            for dryRun in [true, false] {
                let result = try CommandRunner.run(["send"] + (dryRun ? ["--dry-run"] : ["--url", "https://127.0.0.1:1"]) + push + flags)
                #expect(result.exitCode == 65, "\(flags) dry-run \(dryRun): \(result.stdout)\(result.stderr)")
                #expect(result.stderr.contains(named) && !result.stderr.contains("cannot reach"), "\(result.stderr)")
            }
        }
    }

    @Test("--insecure-loopback with a host that is not loopback is a usage error (64) naming the flag")
    func insecureOffLoopback() throws {
        for dryRun in [true, false] {
            let result = try CommandRunner.run(
                ["send"] + (dryRun ? ["--dry-run"] : []) + ["--url", "https://push.example.com", "--insecure-loopback"] + push + keyAuth
            )
            #expect(result.exitCode == 64, "\(result.stdout)\(result.stderr)")
            #expect(result.stderr.contains("--insecure-loopback") && result.stderr.contains("push.example.com"), "\(result.stderr)")
        }
    }

    @Test("A server whose CA is not trusted: the error says the chain is not trusted and hints at --ca-file")
    func untrustedHint() throws {
        let server = try ServerProcess(["--quiet"])
        let result = try CommandRunner.run(["activity", "end", "--url", "https://127.0.0.1:\(server.port)"] + keyAuth + [
            "--topic", "com.example.forgepush", "--token", token, "--content-state", "{}",
        ])
        _ = server.stop()
        #expect(result.exitCode == 69, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("the certificate chain is not trusted"), "\(result.stderr)")
        #expect(result.stderr.contains("hint: the server's certificate is signed by a CA this machine does not trust: pass it with --ca-file"), "\(result.stderr)")
        #expect(result.stderr.contains("apnsctl doctor"), "\(result.stderr)")
    }
}
