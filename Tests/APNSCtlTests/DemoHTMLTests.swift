import ForgeTestSupport
import Foundation
import Testing

/// `apnsctl demo --html FILE`: the page is checked by two readers that are not ForgePush's code,
/// Python's HTML parser (well-formed, nothing fetched, no script) and a real browser, headless
/// Chromium (it loads, its DOM holds every scenario and every step, it paints a screenshot).
@Suite("apnsctl demo --html: the timeline as a page a browser renders", .timeLimit(.minutes(2)))
struct DemoHTMLTests {
    /// Debian's chromium, which `make deps` installs.
    static let chromium = URL(fileURLWithPath: "/usr/bin/chromium")

    @Test("The page is well-formed, self-contained, and Chromium renders every scenario and step")
    func rendersInChromium() throws {
        let folder = try TemporaryFolder("apnsctl-demo-html")
        defer { folder.remove() }
        let page = folder.url.appendingPathComponent("timeline.html")
        let result = try CommandRunner.run(["demo", "--tokens", "300", "--html", page.path], timeout: 60)
        #expect(result.exitCode == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("demo: timeline written to \(page.path)"))
        // The printed timeline's steps: one line each, `+12.3 ms  source  text`.
        let printed = result.stdout.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("+") && $0.contains(" ms  ") }
        #expect(printed.count > 40)

        // 1. Python's parser: tags balanced, no script, nothing fetched; the titles and the steps.
        let checked = try ChildProcess.run(
            try venvPython(), [PackageRoot.path("Tests/HTMLCheck/check_html.py"), page.path], timeout: .seconds(30)
        )
        try #require(checked.exitCode == 0, "check_html.py: \(checked.stderr)")
        let report = try JSONDecoder().decode(HTMLReport.self, from: Data(checked.stdout.utf8))
        #expect(report.h2.map { $0.prefix(2) } == ["1.", "2.", "3.", "4.", "5.", "6.", "7.", "8."])
        #expect(report.h2.last == "8. Bulk send: 300 tokens, every 100th unregistered on the server")
        #expect(report.events["event"] == printed.count)
        #expect(report.events["accepted", default: 0] > 5 && report.events["rejected", default: 0] >= 1)
        #expect(report.events["dropped", default: 0] >= 2 && report.events["handled", default: 0] >= 4)
        let text = try String(contentsOf: page, encoding: .utf8)
        #expect(!text.contains("http://") && !text.contains("https://"), "the page refers to something elsewhere")
        #expect(!text.contains(try Regex(#"\b1[0-9]{9}\b"#)), "a raw epoch number in the page")

        // 2. Chromium, headless: the DOM it built, then a screenshot; no console error.
        let dom = try Self.chromium(["--dump-dom", page.absoluteString], in: folder)
        #expect(dom.exitCode == 0, "chromium: \(dom.stderr.suffix(2000))")
        for title in report.h2 {
            #expect(dom.stdout.contains("<h2>\(Self.escapeText(title))</h2>"), "the DOM lacks \(title)")
        }
        #expect(dom.stdout.components(separatedBy: "<div class=\"event ").count - 1 == printed.count)
        #expect(dom.stdout.contains("data-events=\"\(printed.count)\" data-failed=\"0\""))
        let screenshot = folder.url.appendingPathComponent("timeline.png")
        let painted = try Self.chromium(["--screenshot=\(screenshot.path)", "--window-size=1280,2000", page.absoluteString], in: folder)
        #expect(painted.exitCode == 0, "chromium: \(painted.stderr.suffix(2000))")
        let png = try Data(contentsOf: screenshot)
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "not a PNG")
        // IHDR: the width and height (big-endian) at bytes 16..<24 are the window's.
        #expect(png.count > 20_000 && Array(png[16..<24]) == [0, 0, 0x05, 0x00, 0, 0, 0x07, 0xD0])
        for run in [dom, painted] {
            #expect(!run.stderr.contains("Uncaught") && !run.stderr.contains(":CONSOLE("), "\(run.stderr.suffix(2000))")
        }
    }

    @Test("An --html that names no file is a usage error; one that cannot be written is exit 73, after the demo ran")
    func badFile() throws {
        let empty = try CommandRunner.run(["demo", "--tokens", "10", "--html", ""])
        #expect(empty.exitCode == 64)
        #expect(empty.stderr.contains("--html must name a file"))
        #expect(empty.stdout.isEmpty)
        let folder = try TemporaryFolder("apnsctl-demo-html")
        defer { folder.remove() }
        let missing = folder.url.appendingPathComponent("no-such-folder/timeline.html").path
        let result = try CommandRunner.run(["demo", "--tokens", "10", "--html", missing], timeout: 60)
        #expect(result.exitCode == 73, "stdout: \(result.stdout) stderr: \(result.stderr)")
        #expect(result.stderr.contains("--html: cannot write \(missing)"))
        #expect(result.stdout.contains("demo: all 14 checks passed"))
    }

    /// What check_html.py prints.
    struct HTMLReport: Decodable {
        var title: String
        var h2: [String]
        var events: [String: Int]
    }

    /// Chromium, headless, as root needs it (no sandbox), with its own profile in `folder` and a
    /// bounded time; its log on stderr.
    static func chromium(_ arguments: [String], in folder: TemporaryFolder) throws -> ChildProcess.Result {
        guard FileManager.default.isExecutableFile(atPath: Self.chromium.path) else {
            throw CLIFailureForTests(message: "\(Self.chromium.path) is missing: run `make deps` (or `make test`), which installs chromium")
        }
        let profile = folder.url.appendingPathComponent("chromium-profile")
        return try ChildProcess.run(
            Self.chromium,
            ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile.path)",
             "--enable-logging=stderr", "--v=0"] + arguments,
            environment: CommandRunner.environment(), timeout: .seconds(60)
        )
    }

    /// Text as an HTML serializer writes it: `&`, `<`, `>` escaped (quotes stay).
    static func escapeText(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
