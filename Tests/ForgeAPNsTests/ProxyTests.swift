import ForgeAPNs
import ForgeAPNsCore
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Logging
import Testing

/// The client through real proxies (tinyproxy for HTTP CONNECT, microsocks for SOCKS5) to the
/// local APNs server over TLS: the push arrives, refused credentials fail once and clearly, and the
/// password shows up nowhere.
@Suite("Pushes through real outbound proxies", .timeLimit(.minutes(1)))
struct ProxyTests {
    static let password = "s3cret-Proxy-pw"

    /// A loopback server and a proxy in front of it; the client's configuration goes through the proxy.
    private static func start(
        _ kind: ProxyProcess.Kind, credentials: Bool, target: String = "127.0.0.1", logger: Logger = Logger(label: "test.apns")
    ) async throws -> (Loopback, ProxyProcess, APNSClient.Configuration) {
        let loopback = try Loopback.start(logger: logger)
        let proxy = try await ProxyProcess.start(
            kind, targetPort: loopback.server.port, credentials: credentials ? ("pushuser", Self.password) : nil
        )
        var configuration = loopback.configuration
        configuration.environment = .custom(host: target, port: loopback.server.port)
        return (loopback, proxy, configuration)
    }

    /// Sends `count` pushes through a new client, each of which must fail as unreachable; their errors' texts.
    private static func unreachable(_ configuration: APNSClient.Configuration, count: Int = 1) async throws -> [String] {
        try await withAPNSClient(configuration: configuration) { client in
            var details: [String] = []
            for index in 0..<count {
                do throws(APNSError) {
                    _ = try await client.send(alert(), to: token(index))
                    Issue.record("accepted through a proxy that should have failed it")
                } catch {
                    #expect(error.kind == .unreachable, "\(error)")
                    details.append("\(error) \(error.detail)")
                }
            }
            return details
        }
    }

    @Test(
        "A push through the proxy reaches the server and is accepted; TLS is end to end",
        arguments: [(ProxyProcess.Kind.httpConnect, false), (.httpConnect, true), (.socks5, false), (.socks5, true)]
    )
    func pushThroughProxy(kind: ProxyProcess.Kind, credentials: Bool) async throws {
        // tinyproxy tries every address of a name; the SOCKS test sends an IPv4 address (microsocks tries only the first).
        let (loopback, proxy, base) = try await Self.start(kind, credentials: credentials, target: kind == .httpConnect ? "localhost" : "127.0.0.1")
        var configuration = base
        configuration.proxy = try APNSClient.Proxy(url: proxy.url())
        try await withAPNSClient(configuration: configuration) { client in
            let result = try await client.send(alert("Through the proxy"), to: token(1))
            #expect(result.attempts == 1)
        }
        #expect(loopback.server.accepted.map(\.token) == [String(format: "%064x", 2)])
        if kind == .httpConnect {
            #expect(proxy.connectRequests == 1, "one tunnel: \(proxy.log)")
            // The proxy relayed ciphertext only: it never saw the request or its provider token.
            #expect(!proxy.log.contains("bearer") && !proxy.log.contains("/3/device"))
        }
        proxy.stop()
        await loopback.server.shutdown()
    }

    @Test("Wrong proxy credentials fail once, clearly, naming the proxy and never its password", arguments: [ProxyProcess.Kind.httpConnect, .socks5])
    func wrongCredentials(kind: ProxyProcess.Kind) async throws {
        let logs = LogCapture()
        let (loopback, proxy, base) = try await Self.start(kind, credentials: true, logger: logs.logger(label: "test.apns"))
        var configuration = base
        configuration.proxy = try APNSClient.Proxy(url: proxy.url(password: "wrong-password"))
        let details = try await Self.unreachable(configuration, count: 3)
        #expect(details.count == 3)
        for detail in details {
            #expect(detail.contains("proxy 127.0.0.1:\(proxy.port)") && detail.contains("rejected"), "\(detail)")
            #expect(!detail.contains("wrong-password"))
        }
        // Permanent: three sends, one connect attempt, no retries or reconnects.
        let failedConnects = logs.lines.filter { $0.contains("connect failed") }
        #expect(failedConnects.count == 1, "\(logs.lines)")
        if kind == .httpConnect { #expect(proxy.connectRequests == 1, "\(proxy.log)") }
        #expect(!logs.lines.contains { $0.contains("wrong-password") || $0.contains(Self.password) })
        #expect(loopback.server.acceptedConnections == 0)
        proxy.stop()
        await loopback.server.shutdown()
    }

    @Test("A proxy that asks for credentials none were given for fails as requiring authentication", arguments: [ProxyProcess.Kind.httpConnect, .socks5])
    func missingCredentials(kind: ProxyProcess.Kind) async throws {
        let (loopback, proxy, base) = try await Self.start(kind, credentials: true)
        var configuration = base
        configuration.proxy = kind == .httpConnect
            ? .httpConnect(host: "127.0.0.1", port: proxy.port) : .socks5(host: "127.0.0.1", port: proxy.port)
        let details = try await Self.unreachable(configuration)
        #expect(details.first?.contains("requires authentication") == true, "\(details)")
        proxy.stop()
        await loopback.server.shutdown()
    }

    @Test("tinyproxy refusing the target's port (403) fails at once, permanently; a target it cannot reach fails naming the proxy")
    func proxyRefusesOrFails() async throws {
        let loopback = try Loopback.start()
        let dead = try ClosedPort()
        let deadPort = dead.port
        // ConnectPort allows only the dead port: CONNECT to the server's port is forbidden.
        let proxy = try await ProxyProcess.start(.httpConnect, targetPort: deadPort)
        var configuration = loopback.configuration
        configuration.environment = .custom(host: "127.0.0.1", port: loopback.server.port)
        configuration.proxy = .httpConnect(host: "127.0.0.1", port: proxy.port)
        let refused = try await Self.unreachable(configuration)
        #expect(refused.first?.contains(
            "proxy 127.0.0.1:\(proxy.port) (HTTP CONNECT): refused the tunnel to 127.0.0.1:\(loopback.server.port) (403") == true, "\(refused)")
        #expect(proxy.connectRequests == 1, "permanent: no second CONNECT\n\(proxy.log)")
        configuration.environment = .custom(host: "127.0.0.1", port: deadPort)
        let failed = try await Self.unreachable(configuration)
        #expect(failed.first?.contains("proxy 127.0.0.1:\(proxy.port) (HTTP CONNECT): answered CONNECT 127.0.0.1:\(deadPort) with 5") == true,
                "\(failed)")
        #expect(loopback.server.acceptedConnections == 0)
        proxy.stop()
        dead.close()
        await loopback.server.shutdown()
    }

    @Test("A proxy port with nothing listening fails with an error that names the proxy")
    func nothingListening() async throws {
        let loopback = try Loopback.start()
        let closed = try ClosedPort()
        let port = closed.port
        var configuration = loopback.configuration
        configuration.retry = APNSClient.RetryPolicy(attempts: 1)
        configuration.proxy = try APNSClient.Proxy(url: "http://user:\(Self.password)@127.0.0.1:\(port)")
        let details = try await Self.unreachable(configuration)
        #expect(details.first?.contains("cannot reach the proxy 127.0.0.1:\(port)") == true, "\(details)")
        #expect(!details.joined().contains(Self.password))
        closed.close()
        await loopback.server.shutdown()
    }

    @Test("A proxy's description, debug text and reflection hide its password")
    func redaction() throws {
        let proxy = try APNSClient.Proxy(url: "socks5h://alice:\(Self.password)@proxy.internal:1080")
        #expect("\(proxy)" == "socks5://alice:***@proxy.internal:1080")
        #expect(String(reflecting: proxy) == "socks5://alice:***@proxy.internal:1080")
        var dumped = ""
        dump(proxy, to: &dumped)
        #expect(!dumped.contains(Self.password), "\(dumped)")
        let configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), environment: .production, proxy: proxy
        )
        #expect(!"\(configuration)".contains(Self.password))
        #expect(!String(reflecting: configuration).contains(Self.password))
        do throws(APNSError) {
            _ = try APNSClient.Proxy(url: "ftp://alice:\(Self.password)@proxy.internal")
            Issue.record("an ftp:// proxy was accepted")
        } catch {
            #expect(error.detail.contains("ftp://alice:***@proxy.internal"), "\(error.detail)")
            #expect(!error.detail.contains(Self.password))
        }
    }
}
