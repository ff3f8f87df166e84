import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.forgepush"
private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let ids = ["--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
private let registerKey = ["--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1"]
private let good = String(repeating: "ab", count: 32)
private let password = "Pr0xy-pa55word"

/// `send` over TLS to an `apnsctl serve` on `port`, with the key file.
private func send(port: Int) -> [String] {
    ["send", "--url", "https://127.0.0.1:\(port)", "--ca-file", KeysExample.path("ca.pem"), "--key-file", keyFile] + ids
        + ["--topic", bundle, "--token", good, "--title", "Hello"]
}

/// The `:authority` line `send --dry-run` prints for `arguments`.
private func dryRunAuthority(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
    let result = try CommandRunner.run(
        ["send", "--dry-run", "--topic", bundle, "--token", good, "--title", "Hi"] + arguments, environment: environment
    )
    let line = result.stdout.split(separator: "\n").first { $0.hasPrefix(":authority: ") }
    return (result.exitCode, line.map { String($0.dropFirst(12)) } ?? result.stderr)
}

/// apnsctl behind proxies (`--proxy`, HTTPS_PROXY and its relatives as curl reads them, NO_PROXY),
/// with the key from APNS_KEY, and with endpoints as users name them.
@Suite("apnsctl deployment: proxies, APNS_KEY, endpoint names", .serialized, .timeLimit(.minutes(3)))
struct DeploymentTests {
    @Test("--proxy through tinyproxy with credentials: accepted; the password never printed, even with --verbose")
    func proxyFlag() async throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        let proxy = try await ProxyProcess.start(.httpConnect, targetPort: server.port, credentials: ("pushuser", password))
        let result = try CommandRunner.run(send(port: server.port) + ["--proxy", proxy.url(), "--verbose"])
        _ = server.stop()
        #expect(result.exitCode == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("\"outcome\":\"accepted\""))
        #expect(proxy.connectRequests == 1, "\(proxy.log)")
        #expect(!(result.stdout + result.stderr).contains(password))
        proxy.stop()
    }

    @Test("doctor through the proxy: every check passes through the tunnel; the proxy shown without its password")
    func doctorThroughProxy() async throws {
        let server = try ServerProcess(registerKey + ["--quiet"])
        let proxy = try await ProxyProcess.start(.httpConnect, targetPort: server.port, credentials: ("pushuser", password))
        let result = try CommandRunner.run(
            ["doctor", "--url", "https://127.0.0.1:\(server.port)", "--ca-file", KeysExample.path("ca.pem"), "--key-file", keyFile] + ids
                + ["--topic", bundle],
            environment: ["HTTPS_PROXY": proxy.url()]
        )
        _ = server.stop()
        #expect(result.exitCode == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("ok    proxy: tunnelling through http://pushuser:***@127.0.0.1:\(proxy.port)"), "\(result.stdout)")
        #expect(result.stdout.hasSuffix("all checks passed\n"), "\(result.stdout)")
        #expect(proxy.connectRequests == 1, "\(proxy.log)")
        #expect(!(result.stdout + result.stderr).contains(password))
        proxy.stop()
    }

    @Test("HTTPS_PROXY with SOCKS5 credentials; https_proxy wins over HTTPS_PROXY; ALL_PROXY when neither is set")
    func proxyVariables() async throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        let proxy = try await ProxyProcess.start(.socks5, targetPort: server.port, credentials: ("pushuser", password))
        let closed = try ClosedPort()
        let dead = "http://127.0.0.1:\(closed.port)"
        let upper = try CommandRunner.run(send(port: server.port), environment: ["HTTPS_PROXY": proxy.url()])
        let lowerFirst = try CommandRunner.run(send(port: server.port), environment: ["https_proxy": proxy.url(), "HTTPS_PROXY": dead])
        let all = try CommandRunner.run(send(port: server.port), environment: ["ALL_PROXY": proxy.url()])
        let wrong = try CommandRunner.run(send(port: server.port) + ["--verbose"], environment: ["HTTPS_PROXY": proxy.url(password: "not-it")])
        _ = server.stop()
        for result in [upper, lowerFirst, all] {
            #expect(result.exitCode == 0 && result.stdout.contains("\"outcome\":\"accepted\""), "\(result.stdout)\(result.stderr)")
        }
        #expect(wrong.exitCode == 69, "\(wrong.stdout)\(wrong.stderr)")
        #expect(wrong.stderr.contains("proxy 127.0.0.1:\(proxy.port) (SOCKS5): rejected the user name and password"), "\(wrong.stderr)")
        #expect(!(wrong.stdout + wrong.stderr).contains("not-it"))
        proxy.stop()
        closed.close()
    }

    @Test("Wrong credentials at tinyproxy: exit 69, the proxy named, one CONNECT (no retry storm), no password shown")
    func wrongCredentials() async throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        let proxy = try await ProxyProcess.start(.httpConnect, targetPort: server.port, credentials: ("pushuser", password))
        let result = try CommandRunner.run(send(port: server.port) + ["--proxy", proxy.url(password: "wrong-one"), "--verbose"])
        _ = server.stop()
        #expect(result.exitCode == 69, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("proxy 127.0.0.1:\(proxy.port) (HTTP CONNECT): rejected the credentials"), "\(result.stderr)")
        #expect(proxy.connectRequests == 1, "\(proxy.log)")
        #expect(!(result.stdout + result.stderr).contains("wrong-one"))
        proxy.stop()
    }

    @Test("NO_PROXY bypasses the proxy for listed hosts (and *); without it, a dead proxy is named (69)")
    func noProxy() throws {
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        let closed = try ClosedPort()
        let deadPort = closed.port
        let dead = "http://user:\(password)@127.0.0.1:\(deadPort)"
        let listed = try CommandRunner.run(send(port: server.port), environment: ["HTTPS_PROXY": dead, "NO_PROXY": "example.com, 127.0.0.1"])
        let star = try CommandRunner.run(send(port: server.port), environment: ["https_proxy": dead, "no_proxy": "*"])
        let notListed = try CommandRunner.run(send(port: server.port) + ["--verbose"], environment: ["HTTPS_PROXY": dead, "NO_PROXY": "example.com"])
        _ = server.stop()
        #expect(listed.exitCode == 0, "\(listed.stdout)\(listed.stderr)")
        #expect(star.exitCode == 0, "\(star.stdout)\(star.stderr)")
        #expect(notListed.exitCode == 69, "\(notListed.stdout)\(notListed.stderr)")
        #expect(notListed.stderr.contains("cannot reach the proxy 127.0.0.1:\(deadPort)"), "\(notListed.stderr)")
        #expect(!(notListed.stdout + notListed.stderr).contains(password))
        closed.close()
    }

    @Test("A proxy URL that cannot be used is a usage error naming its source, with the password hidden")
    func badProxyURL() throws {
        let flag = try CommandRunner.run(send(port: 1) + ["--proxy", "https://u:\(password)@proxy:3128"])
        #expect(flag.exitCode == 64, "\(flag.stderr)")
        #expect(flag.stderr.contains("--proxy: the proxy URL 'https://u:***@proxy:3128'"), "\(flag.stderr)")
        let variable = try CommandRunner.run(send(port: 1), environment: ["ALL_PROXY": "gopher://u:\(password)@proxy"])
        #expect(variable.exitCode == 64, "\(variable.stderr)")
        #expect(variable.stderr.contains("ALL_PROXY: the proxy URL 'gopher://u:***@proxy'"), "\(variable.stderr)")
        #expect(!(flag.stderr + variable.stderr).contains(password))
    }

    @Test("APNS_KEY holds the .p8 as PEM text or as base64 of it; --key-file and APNS_KEY_FILE win")
    func keyFromEnvironment() throws {
        let pem = try String(contentsOfFile: keyFile, encoding: .utf8)
        let server = try ServerProcess(registerKey + ["--topic", bundle, "--quiet"])
        let withoutFile = send(port: server.port).filter { $0 != "--key-file" && $0 != keyFile }
        let text = try CommandRunner.run(withoutFile, environment: ["APNS_KEY": pem])
        let base64 = try CommandRunner.run(withoutFile, environment: ["APNS_KEY": Data(pem.utf8).base64EncodedString()])
        let fileWins = try CommandRunner.run(send(port: server.port), environment: ["APNS_KEY": "not a key"])
        let variableWins = try CommandRunner.run(withoutFile, environment: ["APNS_KEY_FILE": keyFile, "APNS_KEY": "not a key"])
        _ = server.stop()
        #expect(text.exitCode == 0 && text.stdout.contains("\"outcome\":\"accepted\""), "\(text.stdout)\(text.stderr)")
        #expect(base64.exitCode == 0 && base64.stdout.contains("\"outcome\":\"accepted\""), "\(base64.stdout)\(base64.stderr)")
        #expect(fileWins.exitCode == 0, "\(fileWins.stderr)")
        #expect(variableWins.exitCode == 0, "\(variableWins.stderr)")
    }

    @Test("A bad APNS_KEY exits 65 naming the variable and the rule, never printing its content")
    func badKeyVariable() throws {
        let secret = "c2VjcmV0LWJ1dC1ub3QtYS1rZXk="  // base64 of text that is no PEM
        let result = try CommandRunner.run(["send", "--dry-run", "--topic", bundle, "--token", good, "--title", "Hi"] + ids,
                                           environment: ["APNS_KEY": secret])
        #expect(result.exitCode == 65, "\(result.stderr)")
        #expect(result.stderr.contains("APNS_KEY: must hold the .p8 key as PEM text"), "\(result.stderr)")
        let damaged = try CommandRunner.run(["send", "--dry-run", "--topic", bundle, "--token", good, "--title", "Hi"] + ids,
                                            environment: ["APNS_KEY": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"])
        #expect(damaged.exitCode == 65, "\(damaged.stderr)")
        #expect(damaged.stderr.contains("APNS_KEY: "), "\(damaged.stderr)")
        #expect(!(result.stdout + result.stderr + damaged.stdout + damaged.stderr).contains(secret))
        #expect(!damaged.stderr.contains("AAAA"))
    }

    @Test("--environment development is the sandbox; --port 2197 is Apple's other port; other ports are refused")
    func endpointNames() throws {
        #expect(try dryRunAuthority(["--environment", "development"]) == (0, "api.sandbox.push.apple.com"))
        #expect(try dryRunAuthority([], environment: ["APNS_ENVIRONMENT": "development"]) == (0, "api.sandbox.push.apple.com"))
        #expect(try dryRunAuthority(["--environment", "production", "--port", "2197"]) == (0, "api.push.apple.com:2197"))
        #expect(try dryRunAuthority([], environment: ["APNS_PORT": "2197"]) == (0, "api.push.apple.com:2197"))
        let (code, message) = try dryRunAuthority(["--port", "8443"])
        #expect(code == 64)
        #expect(message.contains("--port must be 443 or 2197"), "\(message)")
        let (urlCode, urlMessage) = try dryRunAuthority(["--url", "https://127.0.0.1:9", "--port", "2197"])
        #expect(urlCode == 64)
        #expect(urlMessage.contains("with --url, put the port in the URL"), "\(urlMessage)")
    }
}
