import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Logging
import Testing

@Suite("APNSClient: secrets stay out of logs; certificate authentication", .timeLimit(.minutes(1)))
struct SecretsAndCertificateTests {
    @Test("A failing bulk send logs at trace level, and no line holds the key or any provider token")
    func noSecretsInLogs() async throws {
        let logs = LogCapture(level: .trace)
        let logger = logs.logger(label: "test.secrets")
        var registry: [String: LocalAPNSTokenRecord] = [:]
        registry[token(3).hexString] = LocalAPNSTokenRecord(bundleID: bundle, environment: .sandbox, state: .unregistered(Date()))
        let loopback = try Loopback.start(tokens: registry, logger: logger)
        loopback.server.schedule(.respond(status: 503, reason: .serviceUnavailable), afterRequests: 5, count: 30)
        loopback.server.schedule(.respond(status: 403, reason: .expiredProviderToken), afterRequests: 2)
        loopback.server.schedule(.dropConnection(processed: false), afterRequests: 40)
        let list = (0..<100).map { token($0).hexString } + ["not-a-token"]
        try await withAPNSClient(configuration: loopback.configuration) { client in
            let bulk = try client.sendBulk(alert(), to: list.async)
            _ = await collect(bulk, expected: list.count)
            do {
                _ = try await client.send(alert(), to: token(3))
            } catch {}
        }
        let lines = logs.lines
        #expect(!lines.isEmpty)
        let jwts = Set(loopback.server.accepted.compactMap { $0[header: "authorization"]?.dropFirst("bearer ".count) }.map(String.init))
        #expect(!jwts.isEmpty)
        let pem = try String(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"), encoding: .utf8)
        let keyBody = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }
        for line in lines {
            for jwt in jwts {
                #expect(!line.contains(jwt), "a provider token was logged: \(line)")
                // Not even its signature part.
                if let signature = jwt.split(separator: ".").last { #expect(!line.contains(signature)) }
            }
            for part in keyBody { #expect(!line.contains(part), "key material was logged: \(line)") }
            #expect(!line.contains("PRIVATE KEY"))
        }
        // The configuration's description names the key id only.
        #expect("\(loopback.configuration.authentication)" == "jwt(keyID: FORGEKEY01, teamID: FORGETEAM1)")
        await loopback.server.shutdown()
    }

    @Test("Certificate authentication against the server in certificate mode")
    func certificateAuth() async throws {
        let info = try APNSCertificateInfo(pemFile: KeysExample.path("client.pem"))
        let tls = HTTP2ServerTLSConfiguration(
            certificateChainFile: KeysExample.path("server.pem"), privateKeyFile: KeysExample.path("server.key"),
            requestsClientCertificate: true, clientCertificateTrustRoots: KeysExample.path("ca.pem")
        )
        let server = try LocalAPNSServer.start(
            http2: HTTP2ServerConfiguration(tls: tls),
            certificates: [LocalAPNSCertificate(sha256Fingerprint: info.sha256Fingerprint, bundleID: bundle)],
            authenticator: TokenAuthenticator(keys: [], environment: .sandbox)
        )
        for authentication in [
            APNSClient.Authentication.certificate(certificateFile: KeysExample.path("client.pem"), privateKeyFile: KeysExample.path("client.key")),
            .certificate(pkcs12Path: KeysExample.path("client.p12"), password: "forgepush-test"),
            // The same identities from memory, as a secret store hands them over.
            .certificate(certificatePEM: try Data(contentsOf: URL(fileURLWithPath: KeysExample.path("client.pem"))),
                         privateKeyPEM: try Data(contentsOf: URL(fileURLWithPath: KeysExample.path("client.key")))),
            .certificate(pkcs12: try Data(contentsOf: URL(fileURLWithPath: KeysExample.path("client.p12"))), password: "forgepush-test"),
        ] {
            let configuration = APNSClient.Configuration(
                authentication: authentication, environment: .custom(host: "localhost", port: server.port),
                tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem"))
            )
            try await withAPNSClient(configuration: configuration) { client in
                let result = try await client.send(alert(), to: token(1))
                #expect(result.attempts == 1)
                #expect(client.providerTokenSignings == 0)
            }
        }
        #expect(server.accepted.count == 4 && server.accepted.allSatisfy { $0[header: "authorization"] == nil })
        // Revoked: 403 BadCertificate, not retried.
        server.register(certificate: LocalAPNSCertificate(sha256Fingerprint: info.sha256Fingerprint, bundleID: bundle, revoked: true))
        let configuration = APNSClient.Configuration(
            authentication: .certificate(certificateFile: KeysExample.path("client.pem"), privateKeyFile: KeysExample.path("client.key")),
            environment: .custom(host: "localhost", port: server.port), tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem"))
        )
        try await withAPNSClient(configuration: configuration) { client in
            do {
                _ = try await client.send(alert(), to: token(1))
                Issue.record("a revoked certificate was accepted")
            } catch let error as APNSError {
                #expect(error.status == 403 && error.reason == .badCertificate && error.attempts == 1)
            }
        }
        await server.shutdown()
    }

    @Test("In-memory identities that cannot be used fail when the client is made, naming the field, never the bytes")
    func badInMemoryIdentity() throws {
        let key = try Data(contentsOf: URL(fileURLWithPath: KeysExample.path("client.key")))
        let p12 = try Data(contentsOf: URL(fileURLWithPath: KeysExample.path("client.p12")))
        let cases: [(APNSClient.Authentication, String)] = [
            (.certificate(certificatePEM: Data("not a certificate".utf8), privateKeyPEM: key), "clientIdentity certificate '(in memory)'"),
            (.certificate(certificatePEM: try Data(contentsOf: URL(fileURLWithPath: KeysExample.path("client.pem"))),
                          privateKeyPEM: Data("-----BEGIN PRIVATE KEY-----\nQUJD\n-----END PRIVATE KEY-----\n".utf8)),
             "clientIdentity private key '(in memory)'"),
            (.certificate(pkcs12: p12, password: "wrong-password"), "clientIdentity PKCS#12 password '(in memory)'"),
        ]
        for (authentication, field) in cases {
            #expect("\(authentication)".hasPrefix("certificate(") && !"\(authentication)".contains("wrong-password"))
            let configuration = APNSClient.Configuration(
                authentication: authentication, environment: .custom(host: "localhost", port: 1),
                tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem"))
            )
            do {
                _ = try APNSClient(configuration: configuration)
                Issue.record("an unusable in-memory identity made a client")
            } catch let error as APNSError {
                #expect(error.kind == .credentials)
                #expect(error.detail.contains(field), "\(error.detail)")
                #expect(!error.detail.contains("QUJD") && !error.detail.contains("wrong-password"), "\(error.detail)")
            }
        }
    }
}
