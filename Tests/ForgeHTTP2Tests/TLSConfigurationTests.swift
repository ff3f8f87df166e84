@testable import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A file of `contents` in a fresh temporary folder, removed by the caller.
private func temporaryFile(_ contents: String) throws -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("forge-tls-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let file = folder.appendingPathComponent("file.pem")
    try Data(contents.utf8).write(to: file)
    return file.path
}

@Suite("TLS configuration: checked once, up front; failures that cannot heal say so")
struct TLSConfigurationTests {
    @Test("Bad trust roots, certificates, keys and PKCS#12 files are refused by prepared(), naming the field and the rule")
    func refused() throws {
        let garbage = try temporaryFile("not a certificate\n")
        defer { try? FileManager.default.removeItem(atPath: (garbage as NSString).deletingLastPathComponent) }
        let cases: [(HTTP2TLSConfiguration, HTTP2TLSConfigurationError.Field, String)] = [
            (HTTP2TLSConfiguration(trustRoots: .file(garbage)), .trustRoots, "PEM file of CA certificates"),
            (HTTP2TLSConfiguration(trustRoots: .file("/nonexistent/ca.pem")), .trustRoots, "PEM file of CA certificates"),
            (HTTP2TLSConfiguration(clientIdentity: .pem(certificateFile: garbage, privateKeyFile: KeysExample.path("client.key"))),
             .clientCertificate, "PEM certificate"),
            (HTTP2TLSConfiguration(clientIdentity: .pem(certificateFile: KeysExample.path("client.pem"), privateKeyFile: garbage)),
             .clientPrivateKey, "PEM private key"),
            (HTTP2TLSConfiguration(clientIdentity: .pem(certificateFile: KeysExample.path("client.pem"),
                                                        privateKeyFile: KeysExample.path("server.key"))),
             .clientPrivateKey, "must be the private key of the certificate"),
            (HTTP2TLSConfiguration(clientIdentity: .pkcs12(path: KeysExample.path("client.p12"), password: "not-the-password")),
             .pkcs12Password, "password"),
            (HTTP2TLSConfiguration(clientIdentity: .pkcs12(path: garbage, password: "forgepush-test")), .pkcs12, "PKCS#12"),
        ]
        for (configuration, field, rule) in cases {
            do {
                _ = try configuration.prepared()
                Issue.record("accepted: expected \(field)")
            } catch {
                #expect(error.field == field, "\(error)")
                #expect(error.rule.contains(rule), "\(error)")
                #expect(!error.description.contains("forgepush-test") && !error.description.contains("not-the-password"), "a password leaked: \(error)")
            }
        }
    }

    @Test("Good identities and roots are prepared once; every connection reuses the context until a setting changes")
    func prepared() throws {
        for identity in [
            HTTP2TLSConfiguration.ClientIdentity.pem(certificateFile: KeysExample.path("client.pem"), privateKeyFile: KeysExample.path("client.key")),
            .pkcs12(path: KeysExample.path("client.p12"), password: "forgepush-test"),
        ] {
            var configuration = try HTTP2TLSConfiguration(trustRoots: .file(KeysExample.path("ca.pem")), clientIdentity: identity).prepared()
            #expect(configuration.isPrepared)
            #expect(try TLSContext.client(configuration) === TLSContext.client(configuration))
            configuration.serverName = "localhost"  // per connection: the context stays
            #expect(configuration.isPrepared)
            configuration.trustRoots = .system
            #expect(!configuration.isPrepared)
            #expect(try TLSContext.client(configuration) !== TLSContext.client(configuration))
        }
    }

    @Test("A name that does not resolve is permanent; a resolver that is down is not; neither message ends in errno 0")
    func resolution() {
        let notFound = SocketError.resolution(host: "push.invalid", status: EAI_NONAME)
        #expect(notFound.isNameNotFound)
        #expect(notFound.description == "cannot resolve push.invalid: Name or service not known")
        // The connection's thread passes the classification on; a copy that left is never permanent.
        #expect(HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "\(notFound)", permanent: notFound.isNameNotFound).isPermanent)
        #expect(!HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: true, permanent: true).isPermanent)

        let down = SocketError.resolution(host: "push.invalid", status: EAI_AGAIN)
        #expect(!down.isNameNotFound)
        #expect(!down.description.contains("errno"))

        let refused = SocketError(operation: "connecting to 127.0.0.1:1", code: ECONNREFUSED)
        #expect(refused.description.hasSuffix("(errno \(ECONNREFUSED))"))
        #expect(SocketError(operation: "nothing to add", code: 0).description == "nothing to add")
    }

    @Test("Connecting to a name that does not resolve fails without 'Success (errno 0)'")
    func unresolvable() async throws {
        do {
            _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "forgepush-test.invalid", port: 443))
            Issue.record("forgepush-test.invalid resolved")
        } catch let error as HTTP2ClientError {
            #expect(!error.detail.contains("errno 0") && !error.detail.contains("Success"), "\(error)")
            // RFC 6761: .invalid never resolves. Offline, the resolver may answer "try again" instead.
            #expect(error.isPermanent || error.detail.contains("resolving forgepush-test.invalid"), "\(error)")
        }
    }

    @Test("A server certificate from an unknown CA is rejected for good, with the chain called untrusted")
    func unknownCA() async throws {
        let server = try HTTP2Server.start(HTTP2ServerConfiguration(tls: KeysExample.serverTLS)) { _, _ in HTTP2Response(status: 200) }
        do {
            _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "localhost", port: server.port, tls: HTTP2TLSConfiguration()))
            Issue.record("the system trust store trusted the test CA")
        } catch let error as HTTP2ClientError {
            #expect(error.code == .tlsFailed)
            #expect(error.isPermanent, "\(error)")
            #expect(error.detail.contains("the certificate chain is not trusted"), "\(error)")
        }
        // A host name mismatch is permanent too, but not an untrusted chain.
        do {
            var tls = KeysExample.clientTLS
            tls.serverName = "push.example.com"
            _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: tls))
            Issue.record("a certificate for localhost passed for push.example.com")
        } catch let error as HTTP2ClientError {
            #expect(error.isPermanent, "\(error)")
            #expect(!error.detail.contains("not trusted"), "\(error)")
        }
        await server.shutdown()
    }
}
