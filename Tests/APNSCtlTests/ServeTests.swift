import ForgeAPNsCore
import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let bundle = "com.example.forgepush"
private let good = String(repeating: "ab", count: 32)
private let gone = String(repeating: "0f", count: 32)
private let payload = #"{"aps":{"alert":"hi"}}"#

// Four minutes, not two: under ThreadSanitizer on two cores, with every CLI suite starting its
// processes at once, the first test here once took 162 s with every check passing.
@Suite("apnsctl serve: curl, nghttp and the library get the same answers", .serialized, .timeLimit(.minutes(4)))
struct ServeTests {
    let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
    let ca = KeysExample.path("ca.pem")

    func jwt() throws -> String {
        let result = try CommandRunner.run(["jwt", "--key-file", self.keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"])
        #expect(result.exitCode == 0)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What curl got: status and reason (or "-" on success).
    func curl(port: Int, token: String, authorization: String?) throws -> (status: Int, reason: String, body: String) {
        var arguments = ["curl", "-s", "--http2", "--cacert", self.ca, "-o", "-", "-w", "\n%{http_code}",
                         "-H", "apns-topic: \(bundle)", "-H", "apns-push-type: alert", "-d", payload]
        if let authorization { arguments += ["-H", "authorization: bearer \(authorization)"] }
        arguments.append("https://localhost:\(port)/3/device/\(token)")
        let result = try runTool(arguments)
        #expect(result.status == 0, "\(result.output)")
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        let body = lines.dropLast().joined(separator: "\n")
        let status = Int(lines.last ?? "") ?? 0
        let reason = status == 200 ? "-" : APNSErrorResponse(status: status, headers: [], body: Array(body.utf8)).reason.rawValue
        return (status, reason, body)
    }

    /// What the library's transport got for the same request.
    func library(port: Int, token: String, authorization: String?) async throws -> (status: Int, reason: String) {
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(
            host: "localhost", port: port, tls: HTTP2TLSConfiguration(trustRoots: .file(self.ca))
        ))
        var headers = [HTTP2HeaderField("apns-topic", bundle), HTTP2HeaderField("apns-push-type", "alert")]
        if let authorization { headers.append(HTTP2HeaderField("authorization", "bearer " + authorization)) }
        let response = try await connection.send(HTTP2Request(authority: "localhost", path: "/3/device/" + token, headers: headers,
                                                              body: Array(payload.utf8)))
        await connection.close()
        let reason = response.status == 200 ? "-" : APNSErrorResponse(
            status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) }, body: response.body
        ).reason.rawValue
        return (response.status, reason)
    }

    @Test("Token auth: 200, MissingProviderToken, InvalidProviderToken, Unregistered with timestamp; JSON lines; SIGTERM stops")
    func sameAnswers() async throws {
        let server = try ServerProcess([
            "--register-key", "\(self.keyFile):FORGEKEY01:FORGETEAM1", "--topic", bundle, "--token", good, "--unregistered", gone,
            "--reject-unknown-tokens", "--json",
        ])
        let token = try self.jwt()
        let cases: [(String, String?, Int, String)] = [
            (good, token, 200, "-"),
            (good, nil, 403, "MissingProviderToken"),
            (good, "not.a.jwt", 403, "InvalidProviderToken"),
            (gone, token, 410, "Unregistered"),
            (String(repeating: "cd", count: 32), token, 400, "BadDeviceToken"),
        ]
        for (target, authorization, status, reason) in cases {
            let viaCurl = try self.curl(port: server.port, token: target, authorization: authorization)
            let viaLibrary = try await self.library(port: server.port, token: target, authorization: authorization)
            #expect(viaCurl.status == status && viaCurl.reason == reason, "curl: \(viaCurl)")
            #expect(viaLibrary.status == status && viaLibrary.reason == reason, "library: \(viaLibrary)")
            if status == 410 { #expect(viaCurl.body.contains("\"timestamp\":")) }
        }
        let stopped = server.stop(signal: SIGTERM)
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
        #expect(stopped.stderr.contains("SIGTERM"))
        let lines = stopped.stdout.split(separator: "\n")
        #expect(lines.count == cases.count * 2)
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["token"] is String && object["status"] is Int && object["apns_id"] is String)
            #expect(object.keys.contains("reason") && object["push_type"] as? String == "alert")
        }
        let unregistered = lines.filter { $0.contains("\"Unregistered\"") }
        #expect(unregistered.count == 2 && unregistered.allSatisfy { $0.contains("\"timestamp\":") })
    }

    @Test("--environment: development is the sandbox's other name (apns-unique-id answered), production answers none")
    func environmentNames() throws {
        let token = try self.jwt()
        for (name, played, unique) in [("development", "sandbox", true), ("sandbox", "sandbox", true), ("production", "production", false)] {
            let server = try ServerProcess([
                "--register-key", "\(self.keyFile):FORGEKEY01:FORGETEAM1", "--topic", bundle, "--environment", name, "--quiet",
            ])
            let result = try runTool([
                "curl", "-s", "--http2", "--cacert", self.ca, "-D", "-", "-o", "/dev/null", "-H", "apns-topic: \(bundle)",
                "-H", "apns-push-type: alert", "-H", "authorization: bearer \(token)", "-d", payload,
                "https://localhost:\(server.port)/3/device/\(good)",
            ])
            let stopped = server.stop(signal: SIGTERM)
            #expect(result.status == 0, "\(result.output)")
            #expect(result.output.hasPrefix("HTTP/2 200"), "\(name): \(result.output)")
            #expect(result.output.lowercased().contains("apns-unique-id:") == unique, "\(name): \(result.output)")
            #expect(stopped.stderr.contains("\(played) APNs on"), "\(name): \(stopped.stderr)")
        }
        let bad = try CommandRunner.run(["serve", "--environment", "prod"])
        #expect(bad.exitCode == 64)
        #expect(bad.stderr.contains("production") && bad.stderr.contains("development"), "\(bad.stderr)")
    }

    @Test("nghttp (h2c and TLS) gets Apple's answers; SIGINT stops")
    func nghttp() throws {
        for h2c in [true, false] {
            let server = try ServerProcess(["--topic", bundle, "--quiet"] + (h2c ? ["--h2c"] : []))
            let scheme = h2c ? "http" : "https"
            let body = FileManager.default.temporaryDirectory.appendingPathComponent("forge-nghttp-\(UUID().uuidString).json")
            try Data(payload.utf8).write(to: body)
            defer { try? FileManager.default.removeItem(at: body) }
            let ok = try runTool(["nghttp", "-v", "-d", body.path, "-H", "apns-topic: \(bundle)", "-H", "apns-push-type: alert",
                                  "\(scheme)://localhost:\(server.port)/3/device/\(good)"])
            #expect(ok.output.contains(":status: 200") && ok.output.contains("apns-id:"), "\(ok.output)")
            let bad = try runTool(["nghttp", "-v", "-d", body.path, "-H", "apns-topic: \(bundle)", "-H", "apns-priority: 7",
                                   "\(scheme)://localhost:\(server.port)/3/device/\(good)"])
            #expect(bad.output.contains(":status: 400") && bad.output.contains(#"{"reason":"BadPriority"}"#), "\(bad.output)")
            let stopped = server.stop(signal: SIGINT)
            #expect(stopped.exitCode == 0 && stopped.stderr.contains("SIGINT"))
        }
    }

    @Test("A signal sent the moment the port is printed stops the server (SIGTERM and SIGINT, 10 rounds each)")
    func signalRightAfterPort() throws {
        for signal in [SIGTERM, SIGINT] {
            for _ in 0..<10 {
                let server = try ServerProcess(["--quiet", "--h2c"])
                let stopped = server.stop(signal: signal)
                #expect(stopped.exitCode == 0, "\(stopped.stderr)")
                #expect(stopped.stderr.contains(signal == SIGTERM ? "SIGTERM, shutting down" : "SIGINT, shutting down"), "\(stopped.stderr)")
            }
        }
    }

    @Test("Installed outside the checkout: serve makes its certificate in memory; curl trusts --write-ca's file, openssl reads CA:TRUE")
    func noFileOnDisk() throws {
        let folder = try TemporaryFolder("apnsctl-installed")
        defer { folder.remove() }
        let binary = try CommandRunner.installedCopy(in: folder)
        // A relative --write-ca: written in the server's working directory, before the port is printed.
        let server = try ServerProcess(
            executable: binary, arguments: ["serve", "--port", "0", "--topic", bundle, "--token", good, "--write-ca", "ca.pem", "--json"],
            currentDirectory: folder.url
        )
        let ca = try folder.file("ca.pem")
        let url = "https://localhost:\(server.port)/3/device/\(good)"
        let request = ["--http2", "-o", "-", "-w", "\n%{http_code}", "-H", "apns-topic: \(bundle)", "-H", "apns-push-type: alert", "-d", payload]
        let trusted = try runTool(["curl", "-s", "--cacert", ca] + request + [url])
        #expect(trusted.status == 0 && trusted.output.hasSuffix("\n200"), "\(trusted.output)")
        let overIPv4 = try runTool(["curl", "-s", "--cacert", ca] + request + ["https://127.0.0.1:\(server.port)/3/device/\(good)"])
        #expect(overIPv4.status == 0 && overIPv4.output.hasSuffix("\n200"), "\(overIPv4.output)")
        // Without the CA curl refuses the certificate (60: peer certificate cannot be authenticated).
        let untrusted = try runTool(["curl", "-s"] + request + [url])
        #expect(untrusted.status == 60, "\(untrusted.output)")
        // Nor does the repository's test CA vouch for it.
        let testCA = try runTool(["curl", "-s", "--cacert", self.ca] + request + [url])
        #expect(testCA.status == 60, "\(testCA.output)")

        let text = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), ["openssl", "x509", "-in", ca, "-noout", "-text"])
        #expect(text.exitCode == 0 && text.stdout.contains("CA:TRUE"), "\(text.stdout)\(text.stderr)")
        #expect(!(try String(contentsOfFile: ca, encoding: .utf8)).contains("PRIVATE KEY"))

        let stopped = server.stop(signal: SIGTERM)
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
        #expect(stopped.stdout.split(separator: "\n").filter { $0.contains(#""status":200"#) }.count == 2, "\(stopped.stdout)")
        #expect(!stopped.stderr.contains("keys-example"))
    }

    @Test("--write-ca: a usage error with --h2c or --cert; an unwritable file is 73, naming the flag; not written when a flag is bad")
    func writeCAFlags() throws {
        let withH2C = try CommandRunner.run(["serve", "--port", "0", "--h2c", "--write-ca", "/tmp/never.pem"])
        #expect(withH2C.exitCode == 64 && withH2C.stderr.contains("--write-ca needs TLS"), "\(withH2C.stderr)")
        let withCert = try CommandRunner.run([
            "serve", "--port", "0", "--cert", KeysExample.path("server.pem"), "--key", KeysExample.path("server.key"), "--write-ca", "/tmp/never.pem",
        ])
        #expect(withCert.exitCode == 64 && withCert.stderr.contains("--write-ca"), "\(withCert.stderr)")
        let unwritable = try CommandRunner.run(["serve", "--port", "0", "--write-ca", "/nonexistent-folder/ca.pem"])
        #expect(unwritable.exitCode == 73 && unwritable.stderr.contains("--write-ca: cannot write '/nonexistent-folder/ca.pem'"),
                "\(unwritable.stderr)")
        #expect(unwritable.stdout.isEmpty)
        // A bad flag stops serve before the CA is written.
        let folder = try TemporaryFolder("apnsctl-write-ca")
        defer { folder.remove() }
        let caFile = try folder.file("ca.pem")
        let badToken = try CommandRunner.run(["serve", "--port", "0", "--topic", bundle, "--token", "zz", "--write-ca", caFile])
        #expect(badToken.exitCode == 65 && !FileManager.default.fileExists(atPath: caFile), "\(badToken.stderr)")
    }

    @Test("Bad flags: a missing key file is 66, a bad token 65, a bad port 64")
    func badFlags() throws {
        let missing = try CommandRunner.run(["serve", "--port", "0", "--register-key", "/nonexistent.p8:FORGEKEY01:FORGETEAM1"])
        #expect(missing.exitCode == 66 && missing.stderr.contains("--register-key"), "\(missing.stderr)")
        let badToken = try CommandRunner.run(["serve", "--port", "0", "--topic", bundle, "--token", "zz"])
        #expect(badToken.exitCode == 65 && badToken.stderr.contains("--token"), "\(badToken.stderr)")
        let badPort = try CommandRunner.run(["serve", "--port", "70000"])
        #expect(badPort.exitCode == 64 && badPort.stderr.contains("--port"), "\(badPort.stderr)")
        let help = try CommandRunner.run(["serve", "--help"])
        #expect(help.exitCode == 0 && help.stdout.contains("--register-key") && help.stdout.contains("--reject-unknown-tokens"))
    }

    @Test("serve --record: every judged request in the inbox API's shape, written as it is judged; --record-accepted-only keeps only acceptances", arguments: [false, true])
    func record(acceptedOnly: Bool) throws {
        let folder = try TemporaryFolder("serve-record")
        defer { folder.remove() }
        let recordFile = folder.url.appendingPathComponent("judged.ndjson").path
        var tokens = (1...60).map { String(format: "%064x", $0) }
        tokens[29] = gone
        let tokensFile = try folder.file("tokens.txt", contents: tokens.joined(separator: "\n") + "\n")
        let server = try ServerProcess(["--quiet", "--topic", bundle, "--unregistered", gone, "--record", recordFile]
            + (acceptedOnly ? ["--record-accepted-only"] : []))
        let sent = try CommandRunner.run([
            "send", "--url", "https://localhost:\(server.port)", "--ca-file", self.ca, "--key-file", self.keyFile,
            "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1", "--topic", bundle, "--tokens-file", tokensFile, "--title", "Hi",
        ])
        func objects(_ text: String) throws -> [[String: Any]] {
            try text.split(separator: "\n").map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        }
        // Live: every verdict the sender printed is in the file before the server stops.
        let live = try objects(String(contentsOfFile: recordFile, encoding: .utf8))
        let stopped = server.stop()
        #expect(sent.exitCode == 1 && stopped.exitCode == 0, "\(sent.stderr)\(stopped.stderr)")
        let verdicts = try objects(sent.stdout).dropLast()
        let recorded = try objects(String(contentsOfFile: recordFile, encoding: .utf8))
        #expect(live.count == recorded.count)
        let accepted = verdicts.filter { $0["outcome"] as? String == "accepted" }
        #expect(accepted.count == 59 && recorded.count == (acceptedOnly ? 59 : 60))
        let byID = Dictionary(uniqueKeysWithValues: recorded.map { ($0["apns_id"] as? String ?? "", $0) })
        for verdict in verdicts {
            let entry = byID[verdict["apns_id"] as? String ?? ""]
            if acceptedOnly, verdict["outcome"] as? String != "accepted" {
                #expect(entry == nil)
                continue
            }
            #expect(entry?["token"] as? String == verdict["token"] as? String, "\(verdict)")
            #expect(entry?["status"] as? Int == verdict["status"] as? Int)
            #expect(entry?["push_type"] as? String == "alert" && entry?["topic"] as? String == bundle)
            #expect((entry?["received_at"] as? String)?.hasSuffix("Z") == true)
            #expect(((entry?["payload"] as? [String: Any])?["aps"] as? [String: Any]) != nil)
            #expect((entry?["headers"] as? [String: String])?["authorization"] == "bearer <redacted>")
        }
        let unregistered = recorded.first { $0["token"] as? String == gone }
        #expect(acceptedOnly ? unregistered == nil : (unregistered?["reason"] as? String == "Unregistered" && unregistered?["why"] != nil))
        let unwritable = try CommandRunner.run(["serve", "--port", "0", "--record", folder.url.appendingPathComponent("no/such/dir/x").path])
        #expect(unwritable.exitCode == 73 && unwritable.stderr.contains("--record: cannot write"), "\(unwritable.stderr)")
    }
}
