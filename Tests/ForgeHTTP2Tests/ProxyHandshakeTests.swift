@testable import ForgeHTTP2
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// The proxy handshake's bytes and verdicts without sockets (RFC 1928, RFC 1929, HTTP CONNECT), the
/// proxy URL rules, and a tunnel that never opens against the connect timeout and cancellation.
@Suite("Proxy handshakes and proxy URLs", .timeLimit(.minutes(1)))
struct ProxyHandshakeTests {
    @Test("HTTP CONNECT asks for host:port with basic credentials and opens on a 2xx answer")
    func httpConnect() throws {
        var handshake = ProxyHandshake(
            proxy: HTTP2Proxy(.httpConnect, host: "proxy", port: 3128, username: "alice", password: "pw:1"),
            targetHost: "api.push.apple.com", targetPort: 443
        )
        let expected = "CONNECT api.push.apple.com:443 HTTP/1.1\r\nHost: api.push.apple.com:443\r\n"
            + "Proxy-Authorization: Basic \(Data("alice:pw:1".utf8).base64EncodedString())\r\n\r\n"
        #expect(try handshake.start() == .send(Array(expected.utf8), then: .httpHead))
        #expect(try handshake.receive(Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)) == .open)
    }

    @Test("HTTP answers: 407 and 401 are refused credentials, 403 a refused target, both permanent; 502 is not")
    func httpRefusals() throws {
        for (status, permanent, words) in [(407, true, "rejected the credentials"), (401, true, "rejected the credentials"),
                                           (403, true, "refused the tunnel"), (502, false, "answered CONNECT")] {
            var handshake = ProxyHandshake(
                proxy: HTTP2Proxy(.httpConnect, host: "10.0.0.1", port: 8080, username: "u", password: "secret"),
                targetHost: "::1", targetPort: 2197
            )
            guard case .send(let request, _) = try handshake.start() else { Issue.record("no request"); continue }
            #expect(String(decoding: request, as: UTF8.self).hasPrefix("CONNECT [::1]:2197 HTTP/1.1\r\n"))
            do throws(ProxyHandshake.Failure) {
                _ = try handshake.receive(Array("HTTP/1.0 \(status) Whatever\r\n\r\n".utf8))
                Issue.record("\(status) opened the tunnel")
            } catch {
                #expect(error.isPermanent == permanent, "\(status)")
                #expect(error.description.hasPrefix("proxy 10.0.0.1:8080 (HTTP CONNECT): \(words)"), "\(error)")
                #expect(!error.description.contains("secret"))
            }
        }
    }

    @Test("SOCKS5 with user and password: greeting, RFC 1929 sub-negotiation, a domain CONNECT, the reply read exactly")
    func socks5WithPassword() throws {
        var handshake = ProxyHandshake(
            proxy: HTTP2Proxy(.socks5, host: "proxy", port: 1080, username: "bob", password: "pass"),
            targetHost: "api.push.apple.com", targetPort: 2197
        )
        #expect(try handshake.start() == .send([5, 2, 0, 2], then: .exactly(2)))
        #expect(try handshake.receive([5, 2]) == .send([1, 3] + Array("bob".utf8) + [4] + Array("pass".utf8), then: .exactly(2)))
        let name = Array("api.push.apple.com".utf8)
        #expect(try handshake.receive([1, 0]) == .send([5, 1, 0, 3, UInt8(name.count)] + name + [0x08, 0x95], then: .exactly(4)))
        #expect(try handshake.receive([5, 0, 0, 3]) == .read(.exactly(1)))
        #expect(try handshake.receive([4]) == .read(.exactly(6)))
        #expect(try handshake.receive([1, 2, 3, 4, 0, 80]) == .open)
    }

    @Test("SOCKS5 without credentials: an IPv4 CONNECT; refusals name the reason and whether it is permanent")
    func socks5Refusals() throws {
        var open = ProxyHandshake(proxy: HTTP2Proxy(.socks5, host: "proxy", port: 1080), targetHost: "127.0.0.1", targetPort: 443)
        #expect(try open.start() == .send([5, 1, 0], then: .exactly(2)))
        #expect(try open.receive([5, 0]) == .send([5, 1, 0, 1, 127, 0, 0, 1, 1, 0xBB], then: .exactly(4)))
        #expect(try open.receive([5, 0, 0, 1]) == .read(.exactly(6)))

        var needsPassword = ProxyHandshake(proxy: HTTP2Proxy(.socks5, host: "proxy", port: 1080), targetHost: "h", targetPort: 443)
        _ = try needsPassword.start()
        #expect(throws: ProxyHandshake.Failure.self) { try needsPassword.receive([5, 0xFF]) }

        var badPassword = ProxyHandshake(
            proxy: HTTP2Proxy(.socks5, host: "proxy", port: 1080, username: "u", password: "p"), targetHost: "h", targetPort: 443
        )
        _ = try badPassword.start()
        _ = try badPassword.receive([5, 2])
        do throws(ProxyHandshake.Failure) {
            _ = try badPassword.receive([1, 1])
            Issue.record("a refused password opened the tunnel")
        } catch {
            #expect(error.isPermanent)
            #expect(error.description == "proxy proxy:1080 (SOCKS5): rejected the user name and password (check the credentials in the proxy URL)")
        }

        var refused = ProxyHandshake(proxy: HTTP2Proxy(.socks5, host: "proxy", port: 1080), targetHost: "h", targetPort: 443)
        _ = try refused.start()
        _ = try refused.receive([5, 0])
        do throws(ProxyHandshake.Failure) {
            _ = try refused.receive([5, 5, 0, 1])
            Issue.record("a refused CONNECT opened the tunnel")
        } catch {
            #expect(!error.isPermanent)
            #expect(error.reason == "refused the tunnel to h:443: connection refused")
        }
    }

    @Test("Proxy URLs as curl takes them; bad ones name the rule and hide the password")
    func urls() throws {
        let http = try HTTP2Proxy(url: "http://us%40er:p%3Ass@proxy.example:3128")
        #expect(http == HTTP2Proxy(.httpConnect, host: "proxy.example", port: 3128, username: "us@er", password: "p:ss"))
        #expect(http.description == "http://us%40er:***@proxy.example:3128")
        #expect(try HTTP2Proxy(url: "proxy.example") == HTTP2Proxy(.httpConnect, host: "proxy.example", port: 1080))
        #expect(try HTTP2Proxy(url: "socks5h://[::1]:9050") == HTTP2Proxy(.socks5, host: "::1", port: 9050))
        #expect(try HTTP2Proxy(url: "SOCKS5://h") == HTTP2Proxy(.socks5, host: "h", port: 1080))
        for (text, rule) in [("https://u:topsecret@h:1", "https:// (TLS to the proxy itself) is not supported"),
                             ("socks4://u:topsecret@h", "has the scheme 'socks4'"),
                             ("http://u:topsecret@h:70000", "has a port outside 1-65535"),
                             ("http://u:topsecret@h:8080/path", "names the proxy only")] {
            do throws(HTTP2ProxyURLError) {
                _ = try HTTP2Proxy(url: text)
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.rule.hasPrefix(rule), "\(error)")
                #expect(!error.description.contains("topsecret"), "\(error)")
                #expect(error.description.contains("u:***@h"), "\(error)")
            }
        }
    }

    /// A "proxy" whose listen backlog accepts TCP and which never answers, and a configuration through it.
    /// Whether `descriptor` becomes readable in time, waited for on a thread of its own: a `poll`
    /// on this task's thread would hold one of the cooperative pool's few threads (two on two
    /// cores), which the connect under test needs to run at all.
    private static func readable(_ descriptor: Int32, withinMilliseconds timeout: Int32) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread {
                var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                continuation.resume(returning: poll(&ready, 1, timeout) == 1)
            }.start()
        }
    }

    private static func silentProxy(_ kind: HTTP2Proxy.Kind, connectTimeout: Duration) throws -> (Socket, Int, HTTP2ClientConfiguration) {
        let (listener, port) = try Socket.listen(host: "127.0.0.1", port: 0)
        let configuration = HTTP2ClientConfiguration(
            host: "api.push.apple.com", connectTimeout: connectTimeout, proxy: HTTP2Proxy(kind, host: "127.0.0.1", port: port)
        )
        return (listener, port, configuration)
    }

    @Test("A proxy that accepts and never answers: the tunnel gives up at the connect timeout, naming the proxy")
    func silentProxyTimesOut() async throws {
        let (listener, port, configuration) = try Self.silentProxy(.httpConnect, connectTimeout: .milliseconds(300))
        defer { withExtendedLifetime(listener) {} }
        let started = ContinuousClock.now
        do {
            _ = try await HTTP2Connection.connect(configuration)
            Issue.record("connected through a proxy that never answered")
        } catch let error as HTTP2ClientError {
            #expect(error.code == .connectFailed)
            #expect(error.detail == "proxy 127.0.0.1:\(port) (HTTP CONNECT): no tunnel within the connect timeout", "\(error)")
            #expect(!error.isPermanent)
        }
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    @Test("Cancelling a connect that waits for the proxy's answer ends it at once as cancelled")
    func cancelWhileTunnelling() async throws {
        // The connect timeout is past the suite's time limit: only the cancellation ends this.
        let (listener, _, configuration) = try Self.silentProxy(.socks5, connectTimeout: .seconds(120))
        defer { withExtendedLifetime(listener) {} }
        let connect = Task { () -> (any Error)? in
            do {
                _ = try await HTTP2Connection.connect(configuration)
                return nil
            } catch {
                return error
            }
        }
        // Once the proxy side has the connection, the client is in the tunnel handshake: cancel then.
        #expect(await Self.readable(listener.descriptor, withinMilliseconds: 10_000))
        let accepted = try #require(try listener.accept())
        connect.cancel()
        let error = try #require(await connect.value as? HTTP2ClientError)
        #expect(error.code == .cancelled, "\(error)")
        withExtendedLifetime(accepted) {}
    }
}
