@testable import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing

extension KeysExample {
    static var serverTLS: HTTP2ServerTLSConfiguration {
        HTTP2ServerTLSConfiguration(certificateChainFile: path("server.pem"), privateKeyFile: path("server.key"))
    }

    static var clientTLS: HTTP2TLSConfiguration { HTTP2TLSConfiguration(trustRoots: .file(path("ca.pem"))) }
}

/// Runs a TLS handshake between two memory-BIO sessions.
private func handshake(client: TLSConnection, server: TLSConnection) throws {
    var rounds = 0
    var clientDone = false
    var serverDone = false
    while !(clientDone && serverDone) {
        rounds += 1
        precondition(rounds < 100, "the handshake never completes")
        if !clientDone { clientDone = try client.handshake() == .complete }
        var toServer: [UInt8] = []
        client.drainCiphertext(into: &toServer)
        toServer.withUnsafeBytes { server.receiveCiphertext($0) }
        if !serverDone { serverDone = try server.handshake() == .complete }
        var toClient: [UInt8] = []
        server.drainCiphertext(into: &toClient)
        toClient.withUnsafeBytes { client.receiveCiphertext($0) }
    }
}

@Suite("TLS over memory BIOs")
struct TLSTests {
    @Test("The test CA's server certificate verifies for localhost, 127.0.0.1 and ::1; ALPN is h2", arguments: ["localhost", "127.0.0.1", "::1"])
    func verifies(_ host: String) throws {
        let client = try TLSConnection(client: try TLSContext.client(KeysExample.clientTLS), host: host, verifyPeer: true)
        let server = try TLSConnection(server: try TLSContext.server(KeysExample.serverTLS))
        try handshake(client: client, server: server)
        #expect(client.negotiatedProtocol == "h2")
        #expect(server.negotiatedProtocol == "h2")

        // Application data both ways.
        try Array("ping".utf8).withUnsafeBytes { try client.writePlaintext($0) }
        var wire: [UInt8] = []
        client.drainCiphertext(into: &wire)
        #expect(!wire.isEmpty && !wire.starts(with: Array("ping".utf8)))
        wire.withUnsafeBytes { server.receiveCiphertext($0) }
        var plain: [UInt8] = []
        #expect(try server.readPlaintext(into: &plain))
        #expect(plain == Array("ping".utf8))
    }

    @Test("The system trust store does not trust the test CA")
    func untrusted() throws {
        let client = try TLSConnection(client: try TLSContext.client(HTTP2TLSConfiguration()), host: "localhost", verifyPeer: true)
        let server = try TLSConnection(server: try TLSContext.server(KeysExample.serverTLS))
        do {
            try handshake(client: client, server: server)
            Issue.record("the system trust store trusted the test CA")
        } catch let error as TLSError {
            #expect(error.description.contains("unable to get local issuer certificate"))
        }
    }

    @Test("A host name that is not in the certificate fails", arguments: ["example.com", "127.0.0.2"])
    func hostMismatch(_ host: String) throws {
        let client = try TLSConnection(client: try TLSContext.client(KeysExample.clientTLS), host: host, verifyPeer: true)
        let server = try TLSConnection(server: try TLSContext.server(KeysExample.serverTLS))
        do {
            try handshake(client: client, server: server)
            Issue.record("handshake succeeded for \(host)")
        } catch let error as TLSError {
            #expect(error.description.contains("mismatch"), "\(error)")
        }
    }

    @Test("A client certificate (PEM or PKCS#12) reaches the server and verifies against the CA")
    func clientCertificate() throws {
        let identities: [HTTP2TLSConfiguration.ClientIdentity] = [
            .pem(certificateFile: KeysExample.path("client.pem"), privateKeyFile: KeysExample.path("client.key")),
            .pkcs12(path: KeysExample.path("client.p12"), password: "forgepush-test"),
        ]
        for identity in identities {
            var configuration = KeysExample.clientTLS
            configuration.clientIdentity = identity
            var serverConfiguration = KeysExample.serverTLS
            serverConfiguration.requestsClientCertificate = true
            serverConfiguration.clientCertificateTrustRoots = KeysExample.path("ca.pem")
            let client = try TLSConnection(client: try TLSContext.client(configuration), host: "localhost", verifyPeer: true)
            let server = try TLSConnection(server: try TLSContext.server(serverConfiguration))
            try handshake(client: client, server: server)
            let der = try #require(server.peerCertificate)
            #expect(der.count > 100)
            #expect(server.peerCertificateVerified)
        }
    }

    @Test("A wrong PKCS#12 password is a clear error")
    func wrongPassword() {
        var configuration = KeysExample.clientTLS
        configuration.clientIdentity = .pkcs12(path: KeysExample.path("client.p12"), password: "nope")
        do {
            _ = try TLSContext.client(configuration)
            Issue.record("accepted")
        } catch {
            #expect("\(error)".contains("wrong password"))
        }
    }

    @Test("Loopback addresses are recognised", arguments: [("localhost", true), ("127.0.0.1", true), ("127.1.2.3", true), ("::1", true),
                                                        ("128.0.0.1", false), ("example.com", false), ("::2", false), ("10.0.0.1", false)])
    func loopback(_ host: String, _ expected: Bool) {
        #expect(isLoopbackHost(host) == expected)
    }
}
