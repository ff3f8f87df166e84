import ForgeHTTP2
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Testing

/// Runs `openssl s_client` against the server with extra flags; returns exit status and output.
private func sClient(port: Int, _ flags: [String]) throws -> (status: Int32, output: String) {
    // Say nothing (empty input) so s_client quits once the handshake is done (or failed).
    let result = try ChildProcess.run(
        URL(fileURLWithPath: "/usr/bin/env"),
        ["openssl", "s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost", "-CAfile", KeysExample.path("ca.pem")] + flags,
        standardInput: .bytes([]), mergesStandardError: true
    )
    return (result.exitCode, result.stdout)
}

@Suite("Local APNs server: TLS admission C1", .timeLimit(.minutes(1)))
struct TLSAdmissionTests {
    @Test("C1: TLS 1.2+ with ALPN h2 is admitted; only-http/1.1 and TLS 1.1 are refused in the handshake")
    func admission() async throws {
        let tls = HTTP2ServerTLSConfiguration(certificateChainFile: KeysExample.path("server.pem"), privateKeyFile: KeysExample.path("server.key"))
        let server = try LocalAPNSServer.start(http2: HTTP2ServerConfiguration(tls: tls))
        let h2 = try sClient(port: server.port, ["-alpn", "h2"])
        #expect(h2.output.contains("ALPN protocol: h2"), "\(h2.output)")
        let http11 = try sClient(port: server.port, ["-alpn", "http/1.1"])
        #expect(!http11.output.contains("ALPN protocol"))
        #expect(http11.output.lowercased().contains("no application protocol") || http11.status != 0, "\(http11.output)")
        let old = try sClient(port: server.port, ["-tls1_1"])
        #expect(old.status != 0 && !old.output.contains("ALPN protocol: h2"), "\(old.output)")
        await server.shutdown()
    }
}
