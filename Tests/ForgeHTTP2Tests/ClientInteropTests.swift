@testable import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing

/// A document root with one file at /3/device/<token>, which nghttpd serves with 200 to a POST.
private func documentRoot() throws -> String {
    let root = try TemporaryFolder.inProcess("forge-docroot")
    let device = root.appendingPathComponent("3/device")
    try FileManager.default.createDirectory(at: device, withIntermediateDirectories: true)
    try Data("accepted".utf8).write(to: device.appendingPathComponent("abc"))
    return root.path
}

@Suite("Client against nghttpd", .timeLimit(.minutes(1)))
struct ClientInteropTests {
    @Test("h2c with prior knowledge")
    func h2c() async throws {
        let server = try ChildProcess("/usr/sbin/nghttpd", ["-a", "127.0.0.1", "-d", try documentRoot(), "--no-tls", "0"])
        let port = try await server.listeningPort()
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: nil))
        let response = try await connection.send(HTTP2Request(scheme: "http", authority: "127.0.0.1", path: "/3/device/abc", body: Array("{}".utf8)))
        #expect(response.status == 200)
        #expect(response.body == Array("accepted".utf8))
        let missing = try await connection.send(HTTP2Request(scheme: "http", authority: "127.0.0.1", path: "/3/device/none"))
        #expect(missing.status == 404)
        await connection.shutdown(gracePeriod: .seconds(5))
        guard case .closed = connection.state else { Issue.record("not closed"); return }
    }

    @Test("TLS with the test CA, by name and by IPv4 and IPv6 address", arguments: ["localhost", "127.0.0.1", "::1"])
    func tls(_ host: String) async throws {
        let address = host == "::1" ? "::1" : "127.0.0.1"
        let server = try ChildProcess(
            "/usr/sbin/nghttpd", ["-a", address, "-d", try documentRoot(), "0", KeysExample.path("server.key"), KeysExample.path("server.pem")]
        )
        let port = try await server.listeningPort()
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: host, port: port, tls: KeysExample.clientTLS))
        let response = try await connection.send(HTTP2Request(authority: host, path: "/3/device/abc", body: Array("{}".utf8)))
        #expect(response.status == 200)
        await connection.close()
    }

    @Test("The system trust store refuses the test CA with a clear error")
    func untrusted() async throws {
        let server = try ChildProcess(
            "/usr/sbin/nghttpd", ["-a", "127.0.0.1", "-d", try documentRoot(), "0", KeysExample.path("server.key"), KeysExample.path("server.pem")]
        )
        let port = try await server.listeningPort()
        do {
            _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "localhost", port: port))
            Issue.record("connected")
        } catch let error as HTTP2ClientError {
            #expect(error.code == .tlsFailed)
            #expect(error.detail.contains("unable to get local issuer certificate"))
        }
    }

    @Test("insecureLoopbackOnly connects to loopback and refuses anything else before connecting")
    func insecureLoopback() async throws {
        let server = try ChildProcess(
            "/usr/sbin/nghttpd", ["-a", "127.0.0.1", "-d", try documentRoot(), "0", KeysExample.path("server.key"), KeysExample.path("server.pem")]
        )
        let port = try await server.listeningPort()
        let insecure = HTTP2TLSConfiguration(verification: .insecureLoopbackOnly)
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: insecure))
        #expect(try await connection.send(HTTP2Request(authority: "x", path: "/3/device/abc")).status == 200)
        await connection.close()
        do {
            _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "192.0.2.1", port: port, tls: insecure))
            Issue.record("connected to a non-loopback address")
        } catch let error as HTTP2ClientError {
            #expect(error.code == .tlsFailed && error.detail.contains("insecureLoopbackOnly"))
        }
    }

    @Test("Many requests over nghttpd's limit of 100 streams: every one answered, by send and by batch")
    func manyInFlight() async throws {
        let server = try ChildProcess("/usr/sbin/nghttpd", ["-a", "127.0.0.1", "-d", try documentRoot(), "--no-tls", "0"])
        let port = try await server.listeningPort()
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: nil))
        let request = HTTP2Request(scheme: "http", authority: "127.0.0.1", path: "/3/device/abc", body: Array("{}".utf8))
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<300 { group.addTask { try await connection.send(request).status } }
            var statuses: [Int] = []
            for try await status in group { statuses.append(status) }
            return statuses
        }
        #expect(statuses.count == 300 && statuses.allSatisfy { $0 == 200 })
        #expect(connection.peerMaxConcurrentStreams == 100)
        let batch = await connection.sendBatch(Array(repeating: request, count: 1000))
        #expect(batch.count == 1000)
        #expect(batch.allSatisfy { (try? $0.get().status) == 200 })
        await connection.close()
    }

    @Test("A TLS server that does not select h2 is a clear alpnMismatch error")
    func noH2() async throws {
        // openssl s_server with no -alpn option negotiates no application protocol.
        let server = try ChildProcess(
            "/usr/bin/openssl", ["s_server", "-accept", "127.0.0.1:0", "-cert", KeysExample.path("server.pem"),
                                 "-key", KeysExample.path("server.key"), "-quiet", "-naccept", "1"]
        )
        let port = try await server.listeningPort()
        do {
            _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "localhost", port: port, tls: KeysExample.clientTLS))
            Issue.record("connected without h2")
        } catch let error as HTTP2ClientError {
            #expect(error.code == .alpnMismatch, "\(error)")
            #expect(error.detail.contains("did not negotiate HTTP/2"))
        }
    }

    @Test("A refused TCP connection is connectFailed")
    func refused() async throws {
        let closed = try ClosedPort()
        do {
            _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "127.0.0.1", port: closed.port, tls: nil))
            Issue.record("connected to a closed port")
        } catch let error as HTTP2ClientError {
            #expect(error.code == .connectFailed)
            #expect(error.detail.contains("Connection refused"), "\(error)")
        }
        closed.close()
    }

    @Test("A name that does not resolve is connectFailed")
    func unresolvable() async throws {
        do {
            _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(host: "no-such-host.invalid", port: 443))
            Issue.record("connected")
        } catch let error as HTTP2ClientError {
            #expect(error.code == .connectFailed)
        }
    }
}
