internal import ForgeSupport
internal import Foundation

/// The scenarios' timelines as one self-contained HTML page: a sequence diagram per scenario with
/// the lanes client → server → device → app, each step an arrow between two lanes (a request the
/// server judged, a push the device received, a handler the device ran) or a box on one lane, with
/// its time in milliseconds since the scenario's start and its date (ISO 8601, also in the tooltip),
/// coloured by how it ended; then the scenario's checks.
///
/// Inline CSS only: no script, no image, no font, no link, so the file opens anywhere, offline (a CI
/// artefact, a mail attachment). Every text is escaped: a payload or a reason may hold `<` or `&`.
///
/// ```swift
/// let sections = try await LoopbackScenarios().run()
/// try TimelineHTML.render(sections: sections).write(to: url, atomically: true, encoding: .utf8)
/// ```
package enum TimelineHTML {
    /// The page for `sections`, in their order.
    /// - Parameters:
    ///   - sections: what ``LoopbackScenarios/run(started:finished:)`` returned (or some of it).
    ///   - title: the page's title and heading.
    package static func render(sections: [ScenarioSection], title: String = "ForgePush: the push path, step by step") -> String {
        let checks = sections.flatMap(\.checks)
        let failed = checks.count { !$0.passed }
        let events = sections.reduce(0) { $0 + $1.lines.count }
        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title))</title>
            <style>\(Self.style)</style>
            </head>
            <body>
            <h1>\(escape(title))</h1>
            <p class="summary" data-scenarios="\(sections.count)" data-events="\(events)" data-failed="\(failed)">\
            \(sections.count) scenarios, \(events) steps; \
            \(failed == 0 ? "all \(checks.count) checks passed" : "\(failed) of \(checks.count) checks FAILED")</p>
            <p class="legend">\(Self.legend)</p>

            """
        for (index, section) in sections.enumerated() {
            html += Self.render(section, index: index + 1)
        }
        html += "</body>\n</html>\n"
        return html
    }

    /// One scenario: its heading, its diagram and its checks.
    private static func render(_ section: ScenarioSection, index: Int) -> String {
        var html = """
            <section class="scenario" id="scenario-\(index)">
            <h2>\(escape(section.title))</h2>
            <p class="start">started <time datetime="\(ISODate.string(section.start))">\(ISODate.string(section.start))</time></p>
            <div class="diagram">
            <div class="head" style="grid-row:1;grid-column:1">ms since start</div>

            """
        for lane in ScenarioLine.Lane.allCases {
            html += "<div class=\"head\" style=\"grid-row:1;grid-column:\(Self.column(lane))\">\(Self.name(lane))</div>\n"
        }
        for (number, line) in section.lines.enumerated() {
            html += Self.render(line, row: number + 2, since: section.start)
        }
        html += "</div>\n<ul class=\"checks\">\n"
        for check in section.checks {
            let detail = check.detail.isEmpty ? "" : ": <span class=\"detail\">\(escape(check.detail))</span>"
            html += "<li class=\"\(check.passed ? "ok" : "failed")\">\(check.passed ? "ok" : "FAILED") \(escape(check.text))\(detail)</li>\n"
        }
        return html + "</ul>\n</section>\n"
    }

    /// One step: its time cell, the lanes' lines, and its arrow or box.
    private static func render(_ line: ScenarioLine, row: Int, since start: Date) -> String {
        let milliseconds = String(format: "%.1f", line.date.timeIntervalSince(start) * 1000)
        let date = ISODate.string(line.date)
        var html = "<div class=\"time\" style=\"grid-row:\(row);grid-column:1\" title=\"\(date)\">+\(milliseconds) ms "
            + "<time datetime=\"\(date)\">\(date)</time></div>\n"
        for lane in ScenarioLine.Lane.allCases {
            html += "<div class=\"lane\" style=\"grid-row:\(row);grid-column:\(Self.column(lane))\"></div>\n"
        }
        let (left, right) = (min(Self.column(line.from), Self.column(line.to)), max(Self.column(line.from), Self.column(line.to)))
        let shape = line.from == line.to ? "box" : (Self.column(line.from) < Self.column(line.to) ? "arrow right" : "arrow left")
        // An arrow runs from the middle of one lane to the middle of the other: half a lane of margin,
        // as a share of the lanes it spans.
        let margin = line.from == line.to ? "" : String(format: ";margin:0 %.4f%%", 50.0 / Double(right - left + 1))
        let tooltip = "\(date), +\(milliseconds) ms: \(Self.name(line.from))"
            + (line.from == line.to ? "" : " → \(Self.name(line.to))") + " (\(line.outcome.rawValue)): \(line.text)"
        html += "<div class=\"event \(shape) \(line.outcome.rawValue)\" data-from=\"\(line.from.rawValue)\" data-to=\"\(line.to.rawValue)\" "
            + "data-offset-ms=\"\(milliseconds)\" style=\"grid-row:\(row);grid-column:\(left) / \(right + 1)\(margin)\" "
            + "title=\"\(escape(tooltip))\">\(escape(line.text))</div>\n"
        return html
    }

    /// The grid column of a lane (column 1 holds the times).
    private static func column(_ lane: ScenarioLine.Lane) -> Int {
        (ScenarioLine.Lane.allCases.firstIndex(of: lane) ?? 0) + 2
    }

    private static func name(_ lane: ScenarioLine.Lane) -> String {
        switch lane {
        case .client: return "client (APNSClient)"
        case .server: return "server (local APNs)"
        case .device: return "device (simulated)"
        case .app: return "app handler"
        }
    }

    private static let legend = [
        ("accepted", "accepted (2xx)"), ("rejected", "rejected"), ("dropped", "dropped, ignored or not shown"),
        ("stored", "stored by APNs while the device is offline"), ("throttled", "throttled: a budget of the device is spent"),
        ("delivered", "received or shown by the device"), ("handled", "an app handler ran"), ("info", "summary"),
    ].map { "<span class=\"key \($0.0)\">\($0.1)</span>" }.joined(separator: " ")

    private static let style = """

        body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px; color: #1f2328; background: #fff; }
        h1 { font-size: 22px; margin: 0 0 4px; }
        h2 { font-size: 17px; margin: 28px 0 2px; }
        .summary, .start { color: #57606a; margin: 2px 0; }
        .legend .key { display: inline-block; margin: 6px 8px 0 0; padding: 1px 8px; border: 1.5px solid var(--c); background: var(--bg); border-radius: 10px; font-size: 12px; }
        .diagram { display: grid; grid-template-columns: 15em repeat(4, minmax(9em, 1fr)); row-gap: 4px; margin-top: 8px; }
        .head { position: sticky; top: 0; background: #f6f8fa; border-bottom: 1px solid #d0d7de; font-weight: 600; padding: 4px 6px; text-align: center; z-index: 1; }
        .head:first-child { text-align: left; }
        .time { font: 12px/1.3 ui-monospace, "SFMono-Regular", Menlo, monospace; color: #57606a; padding: 3px 6px; white-space: nowrap; }
        .time time { display: block; font-size: 10px; color: #8c959f; }
        .lane { background: linear-gradient(#d0d7de, #d0d7de) center / 1px 100% no-repeat; min-height: 28px; }
        .event { align-self: center; font-size: 12px; overflow-wrap: anywhere; z-index: 0; }
        .box { border: 1.5px solid var(--c); background: var(--bg); border-radius: 6px; padding: 3px 6px; margin: 0 4px; }
        .arrow { position: relative; border-bottom: 2px solid var(--c); padding: 2px 12px 3px; text-align: center; color: #1f2328; }
        .arrow::after { content: ""; position: absolute; bottom: -6px; border-top: 5px solid transparent; border-bottom: 5px solid transparent; }
        .arrow.right::after { right: -2px; border-left: 10px solid var(--c); }
        .arrow.left::after { left: -2px; border-right: 10px solid var(--c); }
        .accepted { --c: #1a7f37; --bg: #dafbe1; }
        .rejected { --c: #cf222e; --bg: #ffebe9; }
        .dropped { --c: #8c959f; --bg: #f0f1f3; color: #57606a; }
        .stored { --c: #bf8700; --bg: #fff8c5; }
        .throttled { --c: #bc4c00; --bg: #fff1e5; border-style: dashed; }
        .delivered { --c: #0969da; --bg: #ddf4ff; }
        .handled { --c: #8250df; --bg: #fbefff; }
        .info { --c: #57606a; --bg: #ffffff; }
        .checks { margin: 8px 0 0; padding-left: 20px; }
        .checks .ok { color: #1a7f37; }
        .checks .failed { color: #cf222e; font-weight: 600; }
        .checks .detail { font-weight: 400; color: #1f2328; }

        """

    /// `text` with `&`, `<`, `>`, `"` and `'` as character references: safe in an element and in a
    /// quoted attribute.
    static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
