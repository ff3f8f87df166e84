import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing

/// `openssl` with `arguments`; its exit code and output (stderr merged).
private func openssl(_ arguments: [String]) throws -> ChildProcess.Result {
    try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), ["openssl"] + arguments, mergesStandardError: true, timeout: .seconds(30))
}

@Suite("LoopbackTLSIdentity: a CA and a server certificate made in memory", .timeLimit(.minutes(1)))
struct LoopbackTLSIdentityTests {
    @Test("openssl reads a CA (CA:TRUE) and a server certificate for localhost, 127.0.0.1 and ::1 that the CA verifies")
    func opensslAgrees() throws {
        let identity = try LoopbackTLSIdentity()
        let folder = try TemporaryFolder("forge-identity")
        defer { folder.remove() }
        let ca = try folder.file("ca.pem", contents: identity.caCertificatePEM)
        let server = try folder.file("server.pem", contents: identity.certificatePEM)

        let caText = try openssl(["x509", "-in", ca, "-noout", "-text"])
        #expect(caText.exitCode == 0, "\(caText.stdout)")
        #expect(caText.stdout.contains("CA:TRUE"), "\(caText.stdout)")
        #expect(caText.stdout.contains("Certificate Sign"), "\(caText.stdout)")

        let serverText = try openssl(["x509", "-in", server, "-noout", "-text"])
        #expect(serverText.exitCode == 0)
        #expect(serverText.stdout.contains("CA:FALSE"))
        #expect(serverText.stdout.contains("TLS Web Server Authentication"))
        #expect(serverText.stdout.contains("DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1"), "\(serverText.stdout)")

        let verified = try openssl(["verify", "-CAfile", ca, "-x509_strict", server])
        #expect(verified.exitCode == 0 && verified.stdout.contains("OK"), "\(verified.stdout)")
        // No private key is in what it hands out or prints.
        #expect(!(identity.caCertificatePEM + identity.certificatePEM + "\(identity)").contains("PRIVATE KEY"))
    }

    @Test("A server with the identity is trusted by a client holding its CA as PEM text, on every loopback name; another run's CA is not")
    func handshake() async throws {
        let identity = try LoopbackTLSIdentity()
        let server = try HTTP2Server.start(HTTP2ServerConfiguration(tls: HTTP2ServerTLSConfiguration(identity: identity))) { _, _ in
            HTTP2Response(status: 200)
        }
        for host in ["localhost", "127.0.0.1"] {
            let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(
                host: host, port: server.port, tls: try HTTP2TLSConfiguration(trustRoots: .pem(identity.caCertificatePEM)).prepared()
            ))
            let response = try await connection.send(HTTP2Request(authority: host, path: "/"))
            #expect(response.status == 200)
            await connection.close()
        }
        do {
            let other = try LoopbackTLSIdentity()
            _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(
                host: "localhost", port: server.port, tls: HTTP2TLSConfiguration(trustRoots: .pem(other.caCertificatePEM))
            ))
            Issue.record("another identity's CA was trusted")
        } catch let error as HTTP2ClientError {
            #expect(error.code == .tlsFailed && error.detail.contains("not trusted"), "\(error)")
        }
        await server.shutdown()
    }

    @Test("PEM text that holds no certificate is refused by prepared(), naming trustRoots")
    func badPEM() {
        #expect(throws: HTTP2TLSConfigurationError(field: .trustRoots, path: "", rule: "")) {
            _ = try HTTP2TLSConfiguration(trustRoots: .pem("not a certificate")).prepared()
        }
    }
}
