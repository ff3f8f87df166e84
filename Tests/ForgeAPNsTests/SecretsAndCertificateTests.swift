import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import Foundation
import Logging
import Testing

/// Keeps every log line (message and metadata) in memory.
final class CapturedLogs: @unchecked Sendable {
    // @unchecked Sendable: `lines` is only touched under `lock`.
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { self.lock.withLock { self.lines.append(line) } }
    var all: [String] { self.lock.withLock { self.lines } }
}

struct CapturingLogHandler: LogHandler {
    let sink: CapturedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        var all = self.metadata
        all.merge(event.metadata ?? [:]) { $1 }
        self.sink.append("\(event.level) \(event.message) \(all) \(event.source) \(event.file) \(event.function)")
    }
}

@Suite("APNSClient: secrets stay out of logs; certificate authentication", .timeLimit(.minutes(1)))
struct SecretsAndCertificateTests {
    @Test("A failing bulk send logs at trace level, and no line holds the key or any provider token")
    func noSecretsInLogs() async throws {
        let logs = CapturedLogs()
        let logger = Logger(label: "test.secrets") { _ in CapturingLogHandler(sink: logs) }
        var registry: [String: LocalAPNsTokenRecord] = [:]
        registry[token(3).hexString] = LocalAPNsTokenRecord(bundleID: bundle, environment: .sandbox, state: .unregistered(Date()))
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
        let lines = logs.all
        #expect(!lines.isEmpty)
        let jwts = Set(loopback.server.accepted.compactMap { $0[header: "authorization"]?.dropFirst("bearer ".count) }.map(String.init))
        #expect(!jwts.isEmpty)
        let pem = try String(contentsOfFile: keysExamplePath("AuthKey_FORGEKEY01.p8"), encoding: .utf8)
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
        let info = try APNSCertificateInfo(pemFile: keysExamplePath("client.pem"))
        let tls = HTTP2ServerTLSConfiguration(
            certificateChainFile: keysExamplePath("server.pem"), privateKeyFile: keysExamplePath("server.key"),
            requestsClientCertificate: true, clientCertificateTrustRoots: keysExamplePath("ca.pem")
        )
        let server = try LocalAPNsServer.start(
            http2: HTTP2ServerConfiguration(tls: tls),
            certificates: [LocalAPNsCertificate(sha256Fingerprint: info.sha256Fingerprint, bundleID: bundle)],
            authenticator: TokenAuthenticator(keys: [], environment: .sandbox)
        )
        for authentication in [
            APNSClient.Authentication.certificate(certificateFile: keysExamplePath("client.pem"), privateKeyFile: keysExamplePath("client.key")),
            .certificate(pkcs12Path: keysExamplePath("client.p12"), password: "forgepush-test"),
        ] {
            let configuration = APNSClient.Configuration(
                authentication: authentication, environment: .custom(host: "localhost", port: server.port),
                tls: APNSClient.TLS(caFile: keysExamplePath("ca.pem"))
            )
            try await withAPNSClient(configuration: configuration) { client in
                let result = try await client.send(alert(), to: token(1))
                #expect(result.attempts == 1)
                #expect(client.providerTokenSignings == 0)
            }
        }
        #expect(server.accepted.count == 2 && server.accepted.allSatisfy { $0[header: "authorization"] == nil })
        // Revoked: 403 BadCertificate, not retried.
        server.register(certificate: LocalAPNsCertificate(sha256Fingerprint: info.sha256Fingerprint, bundleID: bundle, revoked: true))
        let configuration = APNSClient.Configuration(
            authentication: .certificate(certificateFile: keysExamplePath("client.pem"), privateKeyFile: keysExamplePath("client.key")),
            environment: .custom(host: "localhost", port: server.port), tls: APNSClient.TLS(caFile: keysExamplePath("ca.pem"))
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
}
