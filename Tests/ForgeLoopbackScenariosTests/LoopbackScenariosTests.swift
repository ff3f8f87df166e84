import ForgeLoopback
@testable import ForgeLoopbackScenarios
import ForgeTestSupport
import Foundation
import Testing

@Suite("The demo's end-to-end scenarios, run as a test", .timeLimit(.minutes(1)))
struct LoopbackScenariosTests {
    @Test("Every scenario passes every check, and each section has a timeline")
    func everyCheckPasses() async throws {
        let tls = LoopbackMode.TLS.files(
            chain: KeysExample.path("server.pem"), key: KeysExample.path("server.key"), ca: KeysExample.path("ca.pem")
        )
        var port = 0
        let sections = try await LoopbackScenarios(tls: tls, bulkTokens: 300).run(started: { port = $0.port })
        try Self.keepTimeline(sections, name: "loopback-scenarios")

        #expect(port > 0)
        #expect(sections.map { $0.title.prefix(2) } == ["1.", "2.", "3.", "4.", "5.", "6.", "7.", "8."])
        for section in sections {
            #expect(!section.lines.isEmpty, "\(section.title)")
            #expect(section.lines.map(\.offset) == section.lines.map(\.offset).sorted(), "\(section.title): lines in date order")
            for check in section.checks {
                #expect(check.passed, "\(section.title): \(check.text): \(check.detail)")
            }
        }
        let launch = try #require(sections.first { $0.title.hasPrefix("5.") })
        let order = launch.lines.map(\.text)
        let scene = try #require(order.firstIndex { $0.contains("scene connected with the response") })
        let routed = try #require(order.firstIndex { $0.contains("routed to com.example.forgepush's VisiblePushRouter") })
        #expect(scene < routed)
    }

    @Test("Each step has its lanes and its outcome: requests from the client, pushes to the device, handlers in the app")
    func lanesAndOutcomes() async throws {
        let sections = try await LoopbackScenarios(bulkTokens: 200).run()
        try Self.keepTimeline(sections, name: "loopback-scenarios-lanes")
        let lines = sections.flatMap(\.lines)
        for line in lines {
            #expect(line.source == line.to.rawValue)
            if line.text.hasPrefix("200 ") || line.text.hasPrefix("201 ") { #expect(line.from == .client && line.to == .server && line.outcome == .accepted, "\(line)") }
            if line.text.contains(" received for token ") { #expect(line.from == .server && line.to == .device && line.outcome == .delivered) }
            if line.source == "app" { #expect(line.from == .device && line.outcome == .handled) }
            if line.text.contains(" ignored: ") { #expect(line.from == .device && [.dropped, .throttled].contains(line.outcome), "\(line)") }
            if line.text.contains(" throttled (") { #expect(line.outcome == .throttled, "\(line)") }
            if line.text.contains(" stored (device offline)") { #expect(line.outcome == .stored, "\(line)") }
        }
        // The rules' scenario marks what APNs stored and what the device throttled, and the sender's lint.
        #expect(lines.filter { $0.outcome == .stored }.count == 3 && lines.filter { $0.outcome == .throttled }.count == 2)
        #expect(lines.contains { $0.from == .client && $0.text.hasPrefix("sender's lint: LA007: ") })
        #expect(lines.contains { $0.text.hasPrefix("first rejection: 410 Unregistered") && $0.outcome == .rejected })
        #expect(lines.contains { $0.text.hasPrefix("201 ") && $0.text.hasSuffix("channel API") })
        for section in sections {
            #expect(section.lines.allSatisfy { $0.date >= section.start }, "\(section.title): a step before the scenario's start")
        }

        let html = TimelineHTML.render(sections: sections)
        #expect(html.hasPrefix("<!DOCTYPE html>\n<html lang=\"en\">"))
        #expect(html.components(separatedBy: "<div class=\"event ").count - 1 == lines.count)
        #expect(html.contains("<h2>8. Bulk send: 200 tokens, every 100th unregistered on the server</h2>"))
        #expect(html.contains("all 14 checks passed"))
        #expect(!html.contains("<script") && !html.contains("http"))
    }

    @Test("The HTML timeline escapes every text: a payload or a reason may hold markup")
    func escapes() {
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let hostile = #"<script>alert("x & y")</script> it's <b>"#
        let section = ScenarioSection(
            title: "1. <i>title</i>", start: start,
            lines: [ScenarioLine(.client, .server, date: start.addingTimeInterval(0.0123), text: hostile, outcome: .rejected)],
            checks: [ScenarioCheck(passed: false, text: "a <check>", detail: "expected <a>, got <b>")]
        )
        let html = TimelineHTML.render(sections: [section], title: "A & B")
        #expect(!html.contains("<script") && !html.contains("<b>") && !html.contains("<i>") && !html.contains("<check>"))
        #expect(html.contains("&lt;script&gt;alert(&quot;x &amp; y&quot;)&lt;/script&gt; it&#39;s &lt;b&gt;"))
        #expect(html.contains("<title>A &amp; B</title>") && html.contains("<h2>1. &lt;i&gt;title&lt;/i&gt;</h2>"))
        #expect(html.contains("FAILED a &lt;check&gt;: <span class=\"detail\">expected &lt;a&gt;, got &lt;b&gt;</span>"))
        // The time since the scenario's start and the date, also in the tooltip.
        #expect(html.contains(">+12.3 ms <time datetime=\"2023-11-14T22:13:20.012Z\">2023-11-14T22:13:20.012Z</time>"))
        #expect(html.contains("title=\"2023-11-14T22:13:20.012Z, +12.3 ms: client (APNSClient) → server (local APNs) (rejected): &lt;script&gt;"))
        #expect(html.contains("1 of 1 checks FAILED"))
    }

    /// With `FORGE_TIMELINE_DIR` set (CI does, to keep it as an artefact), the run's HTML timeline goes
    /// to `<dir>/<name>.html`, whether the checks passed or not.
    static func keepTimeline(_ sections: [ScenarioSection], name: String) throws {
        guard let directory = ProcessInfo.processInfo.environment["FORGE_TIMELINE_DIR"], !directory.isEmpty else { return }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = URL(fileURLWithPath: directory).appendingPathComponent("\(name).html")
        try TimelineHTML.render(sections: sections).write(to: file, atomically: true, encoding: .utf8)
    }
}
