import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing

private func configuration(
    _ authentication: APNSClient.Authentication, tls: APNSClient.TLS = APNSClient.TLS(caFile: KeysExample.path("ca.pem")),
    host: String = "localhost", port: Int = 1, retry: APNSClient.RetryPolicy = APNSClient.RetryPolicy()
) -> APNSClient.Configuration {
    APNSClient.Configuration(authentication: authentication, environment: .custom(host: host, port: port), tls: tls, retry: retry)
}

@Suite("APNSClient: credentials checked when the client is made; failures that cannot heal are not retried", .timeLimit(.minutes(1)))
struct CredentialCheckTests {
    @Test("A wrong PKCS#12 password, a corrupt or mismatched certificate, a garbage CA file or CA text, or both, fail at init, naming the field")
    func refusedAtInit() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("forge-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let garbage = folder.appendingPathComponent("garbage.pem").path
        try Data("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: garbage))
        let jwt = APNSClient.Authentication.jwt(key: signingKey, keyID: keyID, teamID: teamID)
        let cases: [(APNSClient.Configuration, String)] = [
            (configuration(.certificate(pkcs12Path: KeysExample.path("client.p12"), password: "not-the-password")), "authentication: clientIdentity PKCS#12 password"),
            (configuration(.certificate(certificateFile: garbage, privateKeyFile: KeysExample.path("client.key"))), "authentication: clientIdentity certificate"),
            (configuration(.certificate(certificateFile: KeysExample.path("client.pem"), privateKeyFile: KeysExample.path("server.key"))),
             "must be the private key of the certificate"),
            (configuration(jwt, tls: APNSClient.TLS(caFile: garbage)), "tls.caFile"),
            (configuration(jwt, tls: APNSClient.TLS(caPEM: "not a certificate")), "tls.caPEM"),
            (configuration(jwt, tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem"), caPEM: "-----BEGIN CERTIFICATE-----")),
             "tls.caFile and tls.caPEM: set one of them"),
        ]
        for (configuration, expected) in cases {
            do {
                _ = try APNSClient(configuration: configuration)
                Issue.record("accepted; expected \(expected)")
            } catch let error as APNSError {
                #expect(error.kind == .credentials, "\(error)")
                #expect(error.detail.contains(expected), "\(error)")
                #expect(!error.detail.contains("not-the-password"))
            }
        }
    }

    @Test("insecureLoopbackOnly with a host that is not loopback is refused at init")
    func insecureOffLoopback() throws {
        let insecure = configuration(
            .jwt(key: signingKey, keyID: keyID, teamID: teamID), tls: APNSClient.TLS(insecureLoopbackOnly: true), host: "api.push.apple.com"
        )
        #expect(throws: APNSError.self) { _ = try APNSClient(configuration: insecure) }
        do {
            _ = try APNSClient(configuration: insecure)
        } catch let error as APNSError {
            #expect(error.kind == .invalidNotification && error.detail.contains("insecureLoopbackOnly"), "\(error)")
        }
        // On loopback it stays allowed.
        let loopback = configuration(.jwt(key: signingKey, keyID: keyID, teamID: teamID), tls: APNSClient.TLS(insecureLoopbackOnly: true))
        _ = try APNSClient(configuration: loopback)
    }

    @Test("A server certificate no trust root vouches for is tried once: later sends fail at once with the same error")
    func unknownCAConnectsOnce() async throws {
        let server = try HTTP2Server.start(
            HTTP2ServerConfiguration(tls: HTTP2ServerTLSConfiguration(
                certificateChainFile: KeysExample.path("server.pem"), privateKeyFile: KeysExample.path("server.key")
            ))
        ) { _, _ in HTTP2Response(status: 200) }
        // The system trust store does not know the test CA.
        let untrusting = configuration(
            .jwt(key: signingKey, keyID: keyID, teamID: teamID), tls: APNSClient.TLS(), port: server.port,
            retry: APNSClient.RetryPolicy(attempts: 3, backoffBase: .milliseconds(5), backoffCap: .milliseconds(20))
        )
        try await withAPNSClient(configuration: untrusting) { client in
            for index in 0..<3 {
                do throws(APNSError) {
                    _ = try await client.send(alert(), to: token(index))
                    Issue.record("accepted over an untrusted certificate")
                } catch {
                    #expect(error.kind == .unreachable, "\(error)")
                    #expect(!error.mayHaveBeenDelivered)
                    #expect(error.detail.contains("the certificate chain is not trusted"), "\(error)")
                }
            }
        }
        await server.shutdown()
        var connections = 0
        for await _ in server.connections { connections += 1 }
        #expect(connections == 1, "a rejected certificate was connected to \(connections) times")
    }
}
