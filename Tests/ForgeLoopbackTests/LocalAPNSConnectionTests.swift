import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Testing

@Suite("Local APNs server: connection rows C2-C7, faults S1", .timeLimit(.minutes(1)))
struct LocalAPNSConnectionTests {
    @Test("C2: APNs' SETTINGS with one stream until the first accepted push, then N; rejections do not open it")
    func oneStreamThenN() async throws {
        let server = try LocalAPNSServer.start(LocalAPNSConfiguration(maxConcurrentStreams: 250))
        let connection = try await h2cClient(server)
        let rejected = try await push(connection, token: "abcd")
        #expect(rejected.status == 400 && reason(rejected) == .badDeviceToken)
        #expect(connection.peerMaxConcurrentStreams == 1)
        #expect(try await push(connection).status == 200)
        // The SETTINGS follow the first success; any later answer comes after them.
        #expect(try await push(connection).status == 200)
        #expect(connection.peerMaxConcurrentStreams == 250)
        await connection.close()
        await server.shutdown()
    }

    @Test("C3 (optional): a rejection other than 410 narrows to one stream until the next success")
    func narrowAfterRejection() async throws {
        let gone = hexToken("0f")
        let server = try LocalAPNSServer.start(
            LocalAPNSConfiguration(maxConcurrentStreams: 100, oneStreamAfterRejection: true),
            tokens: [gone: LocalAPNSTokenRecord(bundleID: exampleBundle, environment: .sandbox, state: .unregistered(Date()))]
        )
        let connection = try await h2cClient(server)
        #expect(try await push(connection).status == 200)
        #expect(try await push(connection, token: gone).status == 410)  // 410 is not an error condition
        #expect(connection.peerMaxConcurrentStreams == 100)
        #expect(try await push(connection, headers: [("apns-priority", "3")]).status == 400)
        #expect(try await push(connection, token: gone).status == 410)
        #expect(connection.peerMaxConcurrentStreams == 1)
        #expect(try await push(connection).status == 200)
        #expect(try await push(connection).status == 200)
        #expect(connection.peerMaxConcurrentStreams == 100)
        await connection.close()
        await server.shutdown()
    }

    @Test("C6: shutdown sends GOAWAY {\"reason\":\"Shutdown\"}")
    func shutdownGoAway() async throws {
        let server = try LocalAPNSServer.start()
        let connection = try await h2cClient(server)
        #expect(try await push(connection).status == 200)
        await server.shutdown()
        #expect(try await awaitGoAway(connection) == #"{"reason":"Shutdown"}"#)
        await connection.close()
    }

    @Test("C6: an idle connection gets GOAWAY {\"reason\":\"IdleTimeout\"}; the timeout is configurable")
    func idleTimeout() async throws {
        let server = try LocalAPNSServer.start(LocalAPNSConfiguration(idleTimeout: .milliseconds(100)))
        let connection = try await h2cClient(server)
        #expect(try await push(connection).status == 200)
        #expect(try await awaitGoAway(connection) == #"{"reason":"IdleTimeout"}"#)
        await connection.close()
        await server.shutdown()
    }

    @Test("S1 and the fault plan: server errors, then normal judging; nothing injected is recorded",
          arguments: [(500, APNSErrorReason.internalServerError), (503, .serviceUnavailable), (503, .shutdown), (429, .tooManyRequests)])
    func serverErrors(_ status: Int, _ expected: APNSErrorReason) async throws {
        let server = try LocalAPNSServer.start()
        server.schedule(.respond(status: status, reason: expected), afterRequests: 1, count: 2)
        let connection = try await h2cClient(server)
        #expect(try await push(connection).status == 200)
        let id = "123E4567-E89B-12D3-A456-426614174000"
        for _ in 0..<2 {
            let failed = try await push(connection, headers: [("apns-id", id)])
            #expect(failed.status == status && reason(failed) == expected && failed[header: "apns-id"] == id)
        }
        #expect(try await push(connection).status == 200)
        #expect(server.acceptedCount == 2)
        await connection.close()
        await server.shutdown()
    }

    @Test("Faults: a reset stream is not processed; a dropped connection after processing is recorded")
    func resetAndDrop() async throws {
        let server = try LocalAPNSServer.start()
        server.schedule(.reset(.refusedStream))
        let connection = try await h2cClient(server)
        do {
            _ = try await push(connection)
            Issue.record("a reset stream answered")
        } catch let error as HTTP2ClientError {
            #expect(error.code == .refusedStream && !error.mayHaveBeenProcessed)
        }
        #expect(server.acceptedCount == 0)
        server.schedule(.dropConnection(processed: true))
        do {
            _ = try await push(connection)
            Issue.record("a dropped connection answered")
        } catch let error as HTTP2ClientError {
            #expect(error.mayHaveBeenProcessed)
        }
        #expect(server.acceptedCount == 1)
        await connection.close()
        await server.shutdown()
    }

    @Test("Faults: GOAWAY after a push carries the reason; a later stream limit and a delay apply")
    func goAwayAndSettings() async throws {
        let server = try LocalAPNSServer.start()
        let connection = try await h2cClient(server)
        server.schedule(.maxConcurrentStreams(7))
        #expect(try await push(connection).status == 200)
        #expect(try await push(connection).status == 200)
        #expect(connection.peerMaxConcurrentStreams == 7)
        server.schedule(.delay(.milliseconds(20)))
        #expect(try await push(connection).status == 200)
        server.schedule(.goAway(errorCode: .noError, reason: .shutdown))
        #expect(try await push(connection).status == 200)
        #expect(try await awaitGoAway(connection) == #"{"reason":"Shutdown"}"#)
        #expect(server.acceptedCount == 4)
        await connection.close()
        await server.shutdown()
    }
}

@Suite("Local APNs server: certificate authentication C7", .timeLimit(.minutes(1)))
struct LocalAPNSCertificateTests {
    let info = try! APNSCertificateInfo(pemFile: KeysExample.path("client.pem"))

    func start(_ certificates: [LocalAPNSCertificate]) throws -> LocalAPNSServer {
        let tls = HTTP2ServerTLSConfiguration(
            certificateChainFile: KeysExample.path("server.pem"), privateKeyFile: KeysExample.path("server.key"),
            requestsClientCertificate: true, clientCertificateTrustRoots: KeysExample.path("ca.pem")
        )
        return try LocalAPNSServer.start(http2: HTTP2ServerConfiguration(tls: tls), certificates: certificates)
    }

    func connect(_ server: LocalAPNSServer, certificate: String = KeysExample.path("client.pem"),
                 key: String = KeysExample.path("client.key")) async throws -> HTTP2Connection {
        try await HTTP2Connection.connect(HTTP2ClientConfiguration(
            host: "localhost", port: server.port,
            tls: HTTP2TLSConfiguration(trustRoots: .file(KeysExample.path("ca.pem")),
                                       clientIdentity: .pem(certificateFile: certificate, privateKeyFile: key))
        ))
    }

    @Test("The certificate's subject names the bundle id")
    func subject() {
        #expect(self.info.bundleID == exampleBundle && self.info.sha256Fingerprint.count == 64)
    }

    @Test("A registered certificate pushes without a token; the topic may be omitted; other topics are refused")
    func accepted() async throws {
        let server = try self.start([LocalAPNSCertificate(sha256Fingerprint: self.info.sha256Fingerprint, bundleID: exampleBundle)])
        let connection = try await self.connect(server)
        #expect(try await push(connection).status == 200)
        #expect(try await push(connection, topic: exampleBundle + ".voip", pushType: "voip").status == 200)
        let untopiced = try await connection.send(HTTP2Request(authority: "localhost", path: "/3/device/" + hexToken("ab"), body: alertBody))
        #expect(untopiced.status == 200)
        let other = try await push(connection, topic: "com.other.app")
        #expect(other.status == 400 && reason(other) == .topicDisallowed)
        await connection.close()
        await server.shutdown()
    }

    @Test("Unknown, revoked -> 403 BadCertificate; other environment -> 403 BadCertificateEnvironment")
    func rejected() async throws {
        let server = try self.start([])
        let connection = try await self.connect(server)
        let unknown = try await push(connection)
        #expect(unknown.status == 403 && reason(unknown) == .badCertificate)
        server.register(certificate: LocalAPNSCertificate(sha256Fingerprint: self.info.sha256Fingerprint, bundleID: exampleBundle,
                                                          environment: .production))
        let environment = try await push(connection)
        #expect(environment.status == 403 && reason(environment) == .badCertificateEnvironment)
        server.register(certificate: LocalAPNSCertificate(sha256Fingerprint: self.info.sha256Fingerprint, bundleID: exampleBundle))
        #expect(try await push(connection).status == 200)
        server.register(certificate: LocalAPNSCertificate(sha256Fingerprint: self.info.sha256Fingerprint, bundleID: exampleBundle,
                                                          revoked: true))
        let revoked = try await push(connection)
        #expect(revoked.status == 403 && reason(revoked) == .badCertificate)
        await connection.close()
        await server.shutdown()
    }

    @Test("A certificate not issued by the trusted CA -> 403 BadCertificate")
    func untrusted() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("forge-c7-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificate = directory.appendingPathComponent("self.pem").path, key = directory.appendingPathComponent("self.key").path
        let openssl = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", certificate, "-days", "1", "-subj", "/UID=\(exampleBundle)/CN=self-signed"]
        )
        #expect(openssl.exitCode == 0)
        let selfSigned = try APNSCertificateInfo(pemFile: certificate)
        let server = try self.start([LocalAPNSCertificate(sha256Fingerprint: selfSigned.sha256Fingerprint, bundleID: exampleBundle)])
        let connection = try await self.connect(server, certificate: certificate, key: key)
        let response = try await push(connection)
        #expect(response.status == 403 && reason(response) == .badCertificate)
        await connection.close()
        await server.shutdown()
    }
}
