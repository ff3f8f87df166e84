import ForgeTestSupport
import Foundation
import Testing

/// `apnsctl lint FILE…`: payload files judged without sending, one finding a line (or a JSON object
/// a line), exit 0 clean, 1 with findings, 65 for a file that is not a JSON payload.
@Suite("apnsctl lint: payload files checked without sending", .serialized, .timeLimit(.minutes(2)))
struct LintCommandTests {
    let now = Int(Date().timeIntervalSince1970)

    /// A clean Live Activity payload for `event`, with `extra` keys added to `aps`.
    func activity(_ event: String, _ extra: String = "") -> String {
        let start = event == "start"
            ? #","attributes-type":"Order","attributes":{"order":"17"},"alert":{"title":"Order 17"}"# : ""
        return #"{"aps":{"event":"\#(event)","timestamp":\#(self.now),"content-state":{"status":"packing"}\#(start)\#(extra)}}"#
    }

    /// The JSON objects of NDJSON output.
    func objects(_ text: String) throws -> [[String: String]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "\(line)")
        }
    }

    @Test("Clean files, an alert and Live Activities, exit 0 with no output")
    func clean() throws {
        let folder = try TemporaryFolder("lint-command")
        defer { folder.remove() }
        let alert = try folder.file("alert.json", contents: #"{"aps":{"alert":{"title":"Hi","body":"Hello"}}}"#)
        let start = try folder.file("start.json", contents: self.activity("start"))
        let update = try folder.file("update.json", contents: self.activity("update", #","relevance-score":50"#))
        let result = try CommandRunner.run(["lint", alert, start, update])
        #expect(result.exitCode == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.isEmpty && result.stderr.isEmpty, "\(result.stdout)\(result.stderr)")
    }

    @Test("Each new lint in its own file: FILE: ID lines, exit 1; --json gives file, id, path and message")
    func findings() throws {
        let folder = try TemporaryFolder("lint-command")
        defer { folder.remove() }
        let cases: [(name: String, contents: String, id: String, path: String)] = [
            ("alert-in-update.json", self.activity("update", #","alert":{"title":"Delayed"}"#), "LA008", "aps.alert"),
            ("milliseconds.json", self.activity("update").replacingOccurrences(of: "\(self.now)", with: "\(self.now * 1000)"), "LA009", "aps.timestamp"),
            ("far-ahead.json", self.activity("update", #","stale-date":\#((self.now + 3_600) * 1000)"#), "LA010", "aps.stale-date"),
            ("copied.json", self.activity("start").replacingOccurrences(of: #"{"order":"17"}"#, with: #"{"status":"packing"}"#), "LA011", "aps.attributes"),
            ("null.json", self.activity("update").replacingOccurrences(of: #""packing""#, with: "null"), "LA012", "aps.content-state.status"),
            ("no-alert.json", self.activity("start").replacingOccurrences(of: #","alert":{"title":"Order 17"}"#, with: ""), "LA013", "aps"),
            ("stale-start.json", self.activity("start", #","stale-date":\#(self.now - 60)"#), "LA005", "aps.stale-date"),
        ]
        let paths = try cases.map { try folder.file($0.name, contents: $0.contents) }
        let human = try CommandRunner.run(["lint"] + paths)
        #expect(human.exitCode == 1, "\(human.stderr)")
        let lines = human.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == cases.count, "\(human.stdout)")
        for (path, lint) in zip(paths, cases) {
            #expect(lines.contains { $0.hasPrefix("\(path): \(lint.id) ") }, "\(lint.name): \(human.stdout)")
        }
        #expect(lines.contains { $0.hasSuffix("iOS never shows the activity it starts") }, "\(human.stdout)")

        let json = try CommandRunner.run(["lint", "--json"] + paths)
        #expect(json.exitCode == 1, "\(json.stderr)")
        let objects = try self.objects(json.stdout)
        #expect(objects.count == cases.count)
        for object in objects { #expect(Set(object.keys) == ["file", "id", "path", "message"], "\(object)") }
        for (path, lint) in zip(paths, cases) {
            #expect(objects.contains { $0["file"] == path && $0["id"] == lint.id && $0["path"] == lint.path }, "\(lint.name): \(json.stdout)")
        }

        let silenced = try CommandRunner.run(["lint", "--no-lint", "la008", paths[0]])
        #expect(silenced.exitCode == 0 && silenced.stdout.isEmpty, "\(silenced.stdout)\(silenced.stderr)")
    }

    @Test("A file that is not JSON is 65, named on stderr, and the other files are still linted; a missing one is 66")
    func unreadable() throws {
        let folder = try TemporaryFolder("lint-command")
        defer { folder.remove() }
        let broken = try folder.file("broken.json", contents: #"{"aps":{"alert":"#)
        let found = try folder.file("no-alert.json", contents: self.activity("start").replacingOccurrences(of: #","alert":{"title":"Order 17"}"#, with: ""))
        let result = try CommandRunner.run(["lint", broken, found])
        #expect(result.exitCode == 65, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("error: lint '\(broken)': not valid JSON"), "\(result.stderr)")
        #expect(result.stdout.hasPrefix("\(found): LA013 "), "\(result.stdout)")

        let array = try folder.file("array.json", contents: "[1]")
        let notObject = try CommandRunner.run(["lint", array])
        #expect(notObject.exitCode == 65 && notObject.stderr.contains("'\(array)': a payload must be a JSON object"), "\(notObject.stderr)")

        let missing = try CommandRunner.run(["lint", folder.path + "/nowhere.json"])
        #expect(missing.exitCode == 66 && missing.stderr.contains("nowhere.json' does not exist"), "\(missing.stderr)")
    }

    @Test("A .apns file is read as send --payload reads it: its target bundle is no payload key")
    func simulatorFile() throws {
        let folder = try TemporaryFolder("lint-command")
        defer { folder.remove() }
        let update = self.activity("update", #","alert":{"title":"Delayed"}"#).replacingOccurrences(
            of: #"{"aps""#, with: #"{"Simulator Target Bundle":"com.example.forgepush","aps""#
        )
        let file = try folder.file("update.apns", contents: update)
        let result = try CommandRunner.run(["lint", "--json", file])
        #expect(result.exitCode == 1, "\(result.stderr)")
        #expect(try self.objects(result.stdout).map { $0["id"] } == ["LA008"], "\(result.stdout)")
        let broken = try folder.file("broken.apns", contents: #"{"Simulator Target Bundle":17,"aps":{}}"#)
        let refused = try CommandRunner.run(["lint", broken])
        #expect(refused.exitCode == 65 && refused.stderr.contains("lint '\(broken)': a .apns file"), "\(refused.stderr)")
    }

    @Test("LA014: updates of one run that all carry one relevance-score, once per update file; different scores pass")
    func flatRelevanceScore() throws {
        let folder = try TemporaryFolder("lint-command")
        defer { folder.remove() }
        let flat = try (1...3).map { try folder.file("flat-\($0).json", contents: self.activity("update", #","relevance-score":50"#)) }
        let start = try folder.file("start.json", contents: self.activity("start"))
        let ranked = try [25, 75].map { try folder.file("ranked-\($0).json", contents: self.activity("update", #","relevance-score":\#($0)"#)) }

        let result = try CommandRunner.run(["lint", "--json"] + flat + [start])
        #expect(result.exitCode == 1, "\(result.stderr)")
        let objects = try self.objects(result.stdout)
        #expect(objects.map { $0["id"] } == ["LA014", "LA014", "LA014"], "\(result.stdout)")
        #expect(objects.map { $0["file"] } == flat.map { Optional($0) } && objects.allSatisfy { $0["path"] == "aps.relevance-score" })
        #expect(objects.first?["message"]?.hasPrefix("all 3 updates carry aps.relevance-score 50") == true, "\(result.stdout)")

        let fine = try CommandRunner.run(["lint"] + ranked + [flat[0]])
        #expect(fine.exitCode == 0 && fine.stdout.isEmpty, "\(fine.stdout)")
        let alone = try CommandRunner.run(["lint", flat[0]])
        #expect(alone.exitCode == 0, "\(alone.stdout)")
    }

    @Test("--contract: a content state or start attributes the app cannot decode is CS001 naming the field; a contract for another type, or a clean payload, finds nothing; a bad contract exits 65 naming the path")
    func contracts() throws {
        let folder = try TemporaryFolder("lint-command")
        defer { folder.remove() }
        let contract = try folder.file("order.json", contents: #"""
            {"attributes_type": "Order", "version": 2, "content_state": {"status": {"type": "string"}, "eta": {"type": "int", "optional": true}},
             "attributes": {"order": {"type": "string"}}}
            """#)
        let other = try folder.file("other.json", contents: #"{"attributes_type": "Other", "content_state": {"x": {"type": "int"}}}"#)
        let clean = try folder.file("clean.json", contents: self.activity("update", #","relevance-score":50"#))
        let fraction = try folder.file("fraction.json", contents: self.activity("update").replacingOccurrences(of: #""packing""#, with: #""packing","eta":1.5"#))
        let number = try folder.file("number.json", contents: self.activity("start").replacingOccurrences(of: #"{"order":"17"}"#, with: #"{"order":17}"#))

        let found = try CommandRunner.run(["lint", "--json", "--contract", contract, clean, fraction, number])
        #expect(found.exitCode == 1, "\(found.stdout)\(found.stderr)")
        let objects = try self.objects(found.stdout).filter { $0["id"] == "CS001" }
        #expect(objects.count == 2, "\(found.stdout)")
        #expect(objects.contains { $0["file"] == fraction && $0["path"] == "aps.content-state.eta" && ($0["message"] ?? "").contains("expected Int") }, "\(objects)")
        #expect(objects.contains { $0["file"] == number && $0["path"] == "aps.attributes.order" && ($0["message"] ?? "").contains("found 17") }, "\(objects)")

        // Two contracts: an update names no attributes type, so none applies; the start's applies by name.
        let both = try CommandRunner.run(["lint", "--contract", contract, "--contract", other, fraction, number])
        #expect(both.stdout.contains("\(number): CS001 ") && !both.stdout.contains("\(fraction): CS001 "), "\(both.stdout)")
        let unrelated = try CommandRunner.run(["lint", "--contract", other, number])
        #expect(!unrelated.stdout.contains("CS001"), "\(unrelated.stdout)")

        let bad = try folder.file("bad.json", contents: #"{"attributes_type": "Order", "content_state": {"status": {"type": "text"}}}"#)
        let refused = try CommandRunner.run(["lint", "--contract", bad, clean])
        #expect(refused.exitCode == 65 && refused.stderr.contains(bad) && refused.stderr.contains("content_state.status.type"), "\(refused.stderr)")
    }
}
