import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.shop"

/// `apnsctl serve --ui-port`: the inbox as people and other languages meet it. Its API is driven by
/// Python's standard library (Tests/InboxClients/inbox_api.py) and by the local server article's curl example,
/// programs that are not ForgePush's code; its page by a real browser (inbox_browser.py).
@Suite("apnsctl serve --ui-port: the inbox's API from Python and curl, the page in Chromium", .serialized, .timeLimit(.minutes(3)))
struct InboxCLITests {
    let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
    let ca = KeysExample.path("ca.pem")

    /// A server with the inbox; its second stdout line is `ui http://127.0.0.1:PORT`.
    func serve(_ extra: [String] = []) throws -> (server: ServerProcess, ui: String) {
        let server = try ServerProcess(["--ui-port", "0", "--topic", bundle] + extra)
        #expect(server.child.waitForStandardOutput(lines: 2, timeout: .seconds(30)), "no ui line: \(server.child.standardOutputSoFar)")
        let lines = server.child.standardOutputSoFar.split(separator: "\n")
        let ui = try #require(lines.dropFirst().first.flatMap { $0.hasPrefix("ui http://127.0.0.1:") ? String($0.dropFirst(3)) : nil },
                              "second line: \(lines)")
        return (server, ui)
    }

    /// `apnsctl send` to the server, as the clients' send command prefix.
    func sendCommand(port: Int) -> [String] {
        [CommandRunner.binary.path, "send", "--url", "https://127.0.0.1:\(port)", "--ca-file", self.ca, "--key-file", self.keyFile,
         "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
    }

    @Test("Python's urllib: list, filters, get, wait (arrives; 408), the event stream, the phone, bad input named, clear")
    func python() throws {
        let (server, ui) = try self.serve()
        let run = try ChildProcess.run(
            try venvPython(),
            [PackageRoot.path("Tests/InboxClients/inbox_api.py"), "--ui", ui, "--send", self.sendCommand(port: server.port).joined(separator: " ")],
            mergesStandardError: true, timeout: .seconds(120)
        )
        let stopped = server.stop()
        #expect(run.exitCode == 0 && run.stdout.contains(" passed, 0 failed"), "\(run.stdout)")
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
    }

    @Test("--activity-type: a content-state contract on the phones, from Python: bad updates discarded as decoding_failed naming the field; bad contracts refused naming the file and the path")
    func contracts() throws {
        let folder = try TemporaryFolder("contracts")
        let contract = folder.url.appendingPathComponent("score.json")
        try Data(#"""
            {"attributes_type": "ScoreAttributes", "version": 1,
             "content_state": {"home": {"type": "int"}, "away": {"type": "int"}, "scorer": {"type": "string", "optional": true}},
             "attributes": {"match": {"type": "string"}}}
            """#.utf8).write(to: contract)
        let (server, ui) = try self.serve(["--activity-type", "ScoreAttributes=\(contract.path)"])
        let run = try ChildProcess.run(
            try venvPython(),
            [PackageRoot.path("Tests/InboxClients/contracts.py"), "--ui", ui, "--send", self.sendCommand(port: server.port).joined(separator: " ")],
            mergesStandardError: true, timeout: .seconds(120)
        )
        let stopped = server.stop()
        #expect(run.exitCode == 0 && run.stdout.contains("9 passed, 0 failed"), "\(run.stdout)")
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")

        let invalid = folder.url.appendingPathComponent("invalid.json")
        try Data(#"{"attributes_type": "ScoreAttributes", "content_state": {"home": {"type": "integer"}}}"#.utf8).write(to: invalid)
        let refused = try CommandRunner.run(["serve", "--port", "0", "--ui-port", "0", "--activity-type", "ScoreAttributes=\(invalid.path)"])
        #expect(refused.exitCode == 65 && refused.stderr.contains(invalid.path) && refused.stderr.contains("content_state.home.type"), "\(refused.stderr)")
        let renamed = try CommandRunner.run(["serve", "--port", "0", "--ui-port", "0", "--activity-type", "OtherAttributes=\(contract.path)"])
        #expect(renamed.exitCode == 65 && renamed.stderr.contains("attributes_type is ScoreAttributes"), "\(renamed.stderr)")
        let missing = try CommandRunner.run(["serve", "--port", "0", "--ui-port", "0", "--activity-type", "ScoreAttributes=/nonexistent/c.json"])
        #expect(missing.exitCode == 66 && missing.stderr.contains("/nonexistent/c.json"), "\(missing.stderr)")
    }

    @Test("Python's urllib: a phone's actions (offline, online, a rotated push-to-start token, the clock 8 hours ahead)")
    func deviceActions() throws {
        let (server, ui) = try self.serve()
        let run = try ChildProcess.run(
            try venvPython(),
            [PackageRoot.path("Tests/InboxClients/device_actions.py"), "--ui", ui, "--send", self.sendCommand(port: server.port).joined(separator: " ")],
            mergesStandardError: true, timeout: .seconds(120)
        )
        let stopped = server.stop()
        #expect(run.exitCode == 0 && run.stdout.contains(" passed, 0 failed"), "\(run.stdout)")
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
    }

    @Test("Chromium, headless: a push appears live, a Live Activity ends as one card, the filter, hostile text stays text, clear; screenshots")
    func browser() throws {
        let (server, ui) = try self.serve()
        // The screenshots are the run's artefacts: in FORGE_INBOX_DIR when set (CI keeps it), else a temporary folder.
        let folder = try TemporaryFolder("inbox-browser")
        defer { folder.remove() }
        let artefacts = ProcessInfo.processInfo.environment["FORGE_INBOX_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? folder.url.path
        try FileManager.default.createDirectory(atPath: artefacts, withIntermediateDirectories: true)
        let send = self.sendCommand(port: server.port)
        let run = try ChildProcess.run(
            try venvPython(),
            [PackageRoot.path("Tests/InboxClients/inbox_browser.py"), "--ui", ui, "--out", artefacts, "--bundle", bundle,
             "--send", send.prefix(6).joined(separator: " "), "--"] + send.dropFirst(6),
            mergesStandardError: true, timeout: .seconds(150)
        )
        // The page as served is one self-contained document: nothing fetched from elsewhere.
        let page = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-fsS", ui + "/"], timeout: .seconds(30))
        #expect(page.stdout.hasPrefix("<!doctype html>") || page.stdout.hasPrefix("<!DOCTYPE html>"))
        #expect(!page.stdout.contains(try Regex(#"(src|href|action)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import"#)),
                "the page fetches something from elsewhere")
        let stopped = server.stop()
        #expect(run.exitCode == 0 && run.stdout.contains(" passed, 0 failed"), "\(run.stdout)")
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
        for name in ["inbox.png", "inbox-phone.png", "inbox-activity.png"] {
            let png = try Data(contentsOf: URL(fileURLWithPath: artefacts).appendingPathComponent(name))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 20_000, "\(name): \(png.count) bytes")
        }
    }

    @Test("The local server article's curl example runs as printed")
    func articleExample() throws {
        let (server, ui) = try self.serve()
        let run = try ChildProcess.run(
            URL(fileURLWithPath: "/bin/sh"), [PackageRoot.path("Examples/inbox-wait.sh"), ui] + self.sendCommand(port: server.port),
            mergesStandardError: true, timeout: .seconds(60)
        )
        server.stop()
        #expect(run.exitCode == 0 && run.stdout.hasSuffix("ok: the push arrived and the phone shows it\n"), "\(run.stdout)")
        let article = try String(contentsOfFile: PackageRoot.path("Sources/ForgeLoopback/ForgeLoopback.docc/LocalServer.md"), encoding: .utf8)
        let script = try String(contentsOfFile: PackageRoot.path("Examples/inbox-wait.sh"), encoding: .utf8)
        // The article shows the script's lines after its comment header, as they are.
        let lines = script.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(lines.count >= 5, "\(script)")
        for line in lines {
            #expect(article.contains(line), "LocalServer.md lacks: \(line)")
        }
    }

    @Test("The default output says why; --print-requests prints the request and its verdict as one block")
    func output() throws {
        let server = try ServerProcess(["--topic", bundle, "--print-requests"])
        let token = String(repeating: "5e", count: 32)
        let sent = try ChildProcess.run(
            URL(fileURLWithPath: self.sendCommand(port: server.port)[0]),
            Array(self.sendCommand(port: server.port).dropFirst()) + ["--token", token, "--topic", "com.other.app", "--title", "Hi"],
            timeout: .seconds(30)
        )
        let stopped = server.stop()
        #expect(sent.exitCode == 1)
        #expect(stopped.stdout.contains("POST /3/device/\(token) HTTP/2\n"), "\(stopped.stdout)")
        #expect(stopped.stdout.contains("authorization: bearer <redacted>\n"))
        #expect(stopped.stdout.contains("\"title\" : \"Hi\""), "the pretty body: \(stopped.stdout)")
        #expect(stopped.stdout.contains("→ 400 TopicDisallowed alert \(token) apns-id="))
        #expect(stopped.stdout.contains(": topic com.other.app is not served: --topic serves com.example.shop"))
        #expect(!stopped.stdout.contains("eyJ"), "a provider token was printed")
    }

    @Test("demo --serve: after the scenarios, the demo's requests and phones in the inbox until SIGINT")
    func demoServe() throws {
        let demo = try ChildProcess(
            executable: CommandRunner.binary, arguments: ["demo", "--tokens", "200", "--serve"], environment: CommandRunner.environment()
        )
        #expect(demo.waitForStandardOutput(containing: "demo: inbox on http://127.0.0.1:", timeout: .seconds(90)), "\(demo.standardOutputSoFar)")
        let line = try #require(demo.standardOutputSoFar.split(separator: "\n").first { $0.hasPrefix("demo: inbox on ") })
        let ui = String(line.dropFirst("demo: inbox on ".count).prefix { $0 != " " }.dropLast())
        let list = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-fsS", ui + "/api/v1/pushes?limit=1"], timeout: .seconds(30))
        let devices = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-fsS", ui + "/api/v1/devices"], timeout: .seconds(30))
        demo.signal(SIGINT)
        #expect(demo.waitForExit(timeout: .seconds(30)))
        let result = demo.finish(timeout: .zero)
        #expect(result.exitCode == 0, "\(result.stderr)")
        #expect(result.stdout.contains("demo: all 14 checks passed"))
        let page = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String: Any], "\(list.stdout)")
        // The scenarios' requests and the bulk send's 200.
        #expect((page["total"] as? Int ?? 0) > 200 && page["dropped"] as? Int == 0, "\(page)")
        let phones = try #require(try JSONSerialization.jsonObject(with: Data(devices.stdout.utf8)) as? [String: Any])
        let listed = phones["devices"] as? [[String: Any]] ?? []
        #expect(listed.count >= 200 && listed.contains { ($0["live_activities"] as? Int ?? 0) > 0 }, "\(listed.prefix(3))")
    }

    @Test("A cleartext client on the TLS port, or TLS on an --h2c port, gets a line saying so")
    func wrongProtocol() throws {
        let tls = try ServerProcess(["--quiet"])
        _ = try runTool(["curl", "-s", "-m", "5", "--http2-prior-knowledge", "http://127.0.0.1:\(tls.port)/3/device/ab"])
        _ = try runTool(["curl", "-s", "-m", "5", "http://127.0.0.1:\(tls.port)/"])
        let tlsOutput = tls.stop()
        #expect(tlsOutput.stderr.contains("sent cleartext HTTP/2 (h2c) to this TLS port: use https://, or serve cleartext (h2c)"),
                "\(tlsOutput.stderr)")
        #expect(tlsOutput.stderr.contains("sent cleartext HTTP/1.x to this TLS port: use https:// and HTTP/2"))
        let h2c = try ServerProcess(["--quiet", "--h2c"])
        _ = try runTool(["curl", "-s", "-k", "-m", "5", "https://127.0.0.1:\(h2c.port)/"])
        let h2cOutput = h2c.stop()
        #expect(h2cOutput.stderr.contains("sent TLS to this cleartext (h2c) port: use http:// with HTTP/2 prior knowledge, or serve TLS"),
                "\(h2cOutput.stderr)")
    }

    @Test("--report-tokens-to: the phones' token reports reach a backend (Python's http.server), a 503 retried, Allow awaited")
    func reportTokens() throws {
        let serve = [
            CommandRunner.binary.path, "serve", "--port", "0", "--cert", KeysExample.path("server.pem"), "--key", KeysExample.path("server.key"),
            "--ui-port", "0", "--topic", bundle, "--quiet",
        ]
        let send = [CommandRunner.binary.path, "send", "--ca-file", self.ca, "--key-file", self.keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]
        let run = try ChildProcess.run(
            try venvPython(),
            [PackageRoot.path("Tests/InboxClients/token_reports.py"), "--serve", serve.joined(separator: " "), "--send", send.joined(separator: " ")],
            mergesStandardError: true, timeout: .seconds(120)
        )
        #expect(run.exitCode == 0 && run.stdout.contains(" passed, 0 failed"), "\(run.stdout)")
    }

    @Test("--report-tokens-to needs an http or https URL with a host, and --ui-port: else a usage error (64) naming the flag")
    func badReportURL() throws {
        for url in ["ftp://127.0.0.1/reports", "http:///reports", "reports"] {
            let result = try CommandRunner.run(["serve", "--port", "0", "--ui-port", "0", "--report-tokens-to", url])
            #expect(result.exitCode == 64 && result.stderr.contains("--report-tokens-to '\(url)': must be an http or https URL with a host"),
                    "\(url): \(result.exitCode) \(result.stderr)")
        }
        let alone = try CommandRunner.run(["serve", "--port", "0", "--report-tokens-to", "http://127.0.0.1:9/reports"])
        #expect(alone.exitCode == 64 && alone.stderr.contains("--report-tokens-to needs --ui-port"), "\(alone.stderr)")
    }

    @Test("--keep 0 is a usage error (64); a taken --ui-port is 73 naming the flag")
    func badFlags() throws {
        let keep = try CommandRunner.run(["serve", "--port", "0", "--ui-port", "0", "--keep", "0"])
        #expect(keep.exitCode == 64 && keep.stderr.contains("--keep must be at least 1 (got 0)"), "\(keep.stderr)")
        let (server, ui) = try self.serve()
        let port = try #require(ui.split(separator: ":").last.map(String.init))
        let taken = try CommandRunner.run(["serve", "--port", "0", "--ui-port", port])
        server.stop()
        #expect(taken.exitCode == 73 && taken.stderr.contains("--ui-port: cannot serve the inbox on 127.0.0.1:\(port)"), "\(taken.stderr)")
    }
}
