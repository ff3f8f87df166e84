import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1", "--topic", bundle]
private let token = String(repeating: "ab", count: 32)

/// Without --ca-file, apnsctl trusts the system store as OpenSSL finds it, which is what real APNs
/// needs (its chain ends at a public root). The test CA reaches the client only through OpenSSL's
/// own variables, `SSL_CERT_FILE` (a PEM bundle) or `SSL_CERT_DIR` (a hashed folder); with both
/// pointing nowhere the same send fails, so the variables are what made it trusted.
@Suite("The system trust store: SSL_CERT_FILE and SSL_CERT_DIR, and doctor naming the store", .timeLimit(.minutes(2)))
struct SystemTrustTests {
    private func send(_ port: Int, _ environment: [String: String]) throws -> CommandRunner.Result {
        try CommandRunner.run(
            ["send", "--url", "https://localhost:\(port)", "--token", token, "--title", "Hi", "--json"] + credentials,
            environment: environment
        )
    }

    @Test("A CA only in SSL_CERT_FILE, or only in SSL_CERT_DIR, is trusted without --ca-file; with neither the send fails as untrusted")
    func systemStore() throws {
        let folder = try TemporaryFolder("system-trust")
        defer { folder.remove() }
        let hashed = folder.url.appendingPathComponent("certs")
        try FileManager.default.createDirectory(at: hashed, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: KeysExample.path("ca.pem"), toPath: hashed.appendingPathComponent("forge-test-ca.pem").path)
        let rehash = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/openssl"), ["rehash", hashed.path], timeout: .seconds(30))
        #expect(rehash.exitCode == 0, "openssl rehash: \(rehash.stderr)")
        let nowhere = folder.url.appendingPathComponent("nowhere").path

        let server = try ServerProcess(["--topic", bundle, "--quiet"])
        let byFile = try self.send(server.port, ["SSL_CERT_FILE": KeysExample.path("ca.pem"), "SSL_CERT_DIR": nowhere])
        let byDirectory = try self.send(server.port, ["SSL_CERT_FILE": nowhere, "SSL_CERT_DIR": hashed.path])
        let neither = try self.send(server.port, ["SSL_CERT_FILE": nowhere, "SSL_CERT_DIR": nowhere])
        let doctor = try CommandRunner.run(
            ["doctor", "--url", "https://localhost:\(server.port)"] + credentials,
            environment: ["SSL_CERT_FILE": KeysExample.path("ca.pem"), "SSL_CERT_DIR": nowhere]
        )
        let untrustedDoctor = try CommandRunner.run(
            ["doctor", "--url", "https://localhost:\(server.port)"] + credentials, environment: ["SSL_CERT_FILE": nowhere, "SSL_CERT_DIR": nowhere]
        )
        _ = server.stop()

        #expect(byFile.exitCode == 0 && byFile.stdout.contains(#""outcome":"accepted""#), "\(byFile.stdout)\(byFile.stderr)")
        #expect(byDirectory.exitCode == 0 && byDirectory.stdout.contains(#""outcome":"accepted""#), "\(byDirectory.stdout)\(byDirectory.stderr)")
        #expect(neither.exitCode == 69 && neither.stderr.contains("certificate chain is not trusted"), "\(neither.stdout)\(neither.stderr)")
        #expect(doctor.stdout.contains("certificate verified against the system store (SSL_CERT_FILE=\(KeysExample.path("ca.pem"))"),
                "\(doctor.stdout)\(doctor.stderr)")
        #expect(untrustedDoctor.exitCode == 69, "\(untrustedDoctor.stdout)\(untrustedDoctor.stderr)")
        #expect((untrustedDoctor.stdout + untrustedDoctor.stderr).contains("did not verify against the system store (SSL_CERT_FILE=\(nowhere)"),
                "\(untrustedDoctor.stdout)\(untrustedDoctor.stderr)")
    }
}
