import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let credentials = [
    "--key-file", KeysExample.path("AuthKey_FORGEKEY01.p8"), "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1",
    "--topic", bundle, "--title", "Hi", "--json",
]
private let tokens = (0..<50).map { String(repeating: "0", count: 56) + String(format: "%08x", $0) }

/// A URL with the wrong scheme for its port, against `apnsctl serve` and against nghttpd (a server
/// that is not ForgePush's code): no HTTP/2 preface was ever exchanged, so nothing was processed.
/// Every token is `not_sent` without the may-have-been-delivered flag, the run exits 69, and
/// stderr says which scheme to use when the server's answer tells.
@Suite("The wrong scheme: not sent, exit 69, and which scheme to use", .timeLimit(.minutes(2)))
struct WrongSchemeTests {
    /// Sends the tokens to `url` and checks what every protocol mismatch must give.
    private func sendExpectingMismatch(_ url: String, insecure: Bool, sourceLocation: SourceLocation = #_sourceLocation) throws -> CommandRunner.Result {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("wrong-scheme-\(UUID().uuidString).txt")
        try Data((tokens.joined(separator: "\n") + "\n").utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try CommandRunner.run(
            ["send", "--url", url, "--tokens-file", file.path] + (insecure ? ["--insecure-loopback"] : []) + credentials, timeout: 60
        )
        #expect(result.exitCode == 69, "exit \(result.exitCode): \(result.stderr)", sourceLocation: sourceLocation)
        let lines = result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let verdicts = lines.filter { $0["summary"] == nil }
        #expect(!verdicts.isEmpty, "no verdict: \(result.stdout)", sourceLocation: sourceLocation)
        let untruthful = verdicts.filter { $0["outcome"] as? String != "not_sent" || $0["may_have_been_delivered"] as? Bool != false }
        #expect(untruthful.isEmpty, "\(untruthful.count) verdicts other than not_sent, e.g. \(untruthful.first ?? [:])", sourceLocation: sourceLocation)
        return result
    }

    @Test("http:// to apnsctl serve's TLS port: the server answers with a TLS alert, the client says use https://")
    func cleartextToServeTLS() throws {
        let server = try ServerProcess(["--topic", bundle])
        let result = try self.sendExpectingMismatch("http://127.0.0.1:\(server.port)", insecure: false)
        let served = server.stop()
        #expect(result.stderr.contains("the server answered with TLS, not cleartext HTTP/2: use https://"), "\(result.stderr)")
        #expect(served.stderr.contains("sent cleartext HTTP/2 (h2c) to this TLS port: use https://"), "\(served.stderr)")
        #expect(served.stdout.isEmpty, "no request was judged: \(served.stdout)")
    }

    @Test("https:// to apnsctl serve --h2c: the server answers with SETTINGS and GOAWAY, the client says use http://")
    func tlsToServeCleartext() throws {
        let server = try ServerProcess(["--h2c", "--topic", bundle])
        let result = try self.sendExpectingMismatch("https://127.0.0.1:\(server.port)", insecure: true)
        let served = server.stop()
        #expect(result.stderr.contains("the server speaks cleartext HTTP/2 (h2c), not TLS: use http://"), "\(result.stderr)")
        #expect(served.stderr.contains("sent TLS to this cleartext (h2c) port"), "\(served.stderr)")
        #expect(served.stdout.isEmpty, "no request was judged: \(served.stdout)")
    }

    @Test("http:// to nghttpd's TLS port: closed before any HTTP/2, not sent, with the hint to try https://")
    func cleartextToNghttpdTLS() async throws {
        let server = try ChildProcess(
            "/usr/sbin/nghttpd", ["-a", "127.0.0.1", "0", KeysExample.path("server.key"), KeysExample.path("server.pem")]
        )
        let port = try await server.listeningPort()
        let result = try self.sendExpectingMismatch("http://127.0.0.1:\(port)", insecure: false)
        #expect(result.stderr.contains("a TLS port reached with http:// (use https://)"), "\(result.stderr)")
    }

    @Test("https:// to nghttpd --no-tls: its SETTINGS and GOAWAY in cleartext, the client says use http://")
    func tlsToNghttpdCleartext() async throws {
        let server = try ChildProcess("/usr/sbin/nghttpd", ["-a", "127.0.0.1", "--no-tls", "0"])
        let port = try await server.listeningPort()
        let result = try self.sendExpectingMismatch("https://127.0.0.1:\(port)", insecure: true)
        #expect(result.stderr.contains("the server speaks cleartext HTTP/2 (h2c), not TLS: use http://"), "\(result.stderr)")
        // One connect: a mismatch cannot heal by trying again.
        #expect(!result.stderr.contains("connections in a row"), "\(result.stderr)")
    }
}
