import ForgeAPNsCore
import ForgeLoopback
import ForgeSimulatedDevice
import Foundation

/// Prints `apnsctl demo`'s timeline, one section per step, and keeps the checks.
///
/// A section merges, by date, what the server judged and what the app's handlers noted (from the
/// ``DemoRecorder``) with what the device did (its timeline) between ``begin(_:)`` and
/// ``finish(_:)``. Every line carries its offset from the start of the demo in milliseconds.
/// Checks print `ok` or `FAILED` on stdout; what differed also goes to stderr.
final class DemoReport {
    /// A marked point: where a section's server, app and device records start.
    struct Mark {
        var title: String
        var recorder: Int
        var device: Int
    }

    /// A timeline line to print: when, who, what.
    private struct Line {
        var date: Date
        var source: String
        var text: String
    }

    let start: Date
    let recorder: DemoRecorder
    let device: SimulatedDevice
    private var pendingChecks: [(passed: Bool, text: String)] = []
    private(set) var passed = 0
    private(set) var failures: [String] = []

    init(start: Date, recorder: DemoRecorder, device: SimulatedDevice) {
        self.start = start
        self.recorder = recorder
        self.device = device
    }

    /// Starts a section: marks the records, prints nothing yet.
    func begin(_ title: String) -> Mark {
        Mark(title: title, recorder: self.recorder.count, device: self.device.timeline.count)
    }

    /// Prints the section's title, everything recorded since `mark` in date order (the device's
    /// events only with `deviceEvents`), `extra` lines, then the section's checks.
    func finish(_ mark: Mark, deviceEvents: Bool = true, extra: [(date: Date, source: String, text: String)] = []) {
        var lines = self.recorder.entries(since: mark.recorder).map { entry -> Line in
            switch entry.kind {
            case .verdict(let verdict): return Line(date: entry.date, source: "server", text: Self.describe(verdict))
            case .note(let handler, let text): return Line(date: entry.date, source: "app", text: "\(handler): \(text)")
            }
        }
        if deviceEvents {
            // The device names pushes by their full apns-id; the server lines' short form reads better.
            let ids = self.recorder.entries(since: mark.recorder).compactMap { entry -> String? in
                if case .verdict(let verdict) = entry.kind { return verdict.apnsID }
                return nil
            }
            lines += self.device.timeline.dropFirst(mark.device).map { entry in
                let text = ids.reduce(entry.event.description) { $0.replacingOccurrences(of: $1, with: Self.short($1)) }
                return Line(date: entry.date, source: "device", text: text)
            }
        }
        lines += extra.map { Line(date: $0.date, source: $0.source, text: $0.text) }
        // Stable: equal dates keep server, app, device, extra order.
        let ordered = lines.enumerated().sorted { ($0.element.date, $0.offset) < ($1.element.date, $1.offset) }.map(\.element)
        Output.result("")
        Output.result("== \(mark.title)")
        for line in ordered { Output.result(self.format(line)) }
        for check in self.pendingChecks { Output.result("   \(check.passed ? "ok    " : "FAILED") \(check.text)") }
        self.pendingChecks.removeAll()
    }

    /// Records a check of the current section: `passed`, or a failure that names what was expected and what came.
    func check(_ passed: Bool, _ text: String, expected: @autoclosure () -> String = "", got: @autoclosure () -> String = "") {
        self.pendingChecks.append((passed, text))
        if passed {
            self.passed += 1
        } else {
            let detail = expected().isEmpty ? "" : ": expected \(expected()), got \(got())"
            self.failures.append("\(text)\(detail)")
            Output.diagnostic("apnsctl demo: check failed: \(text)\(detail)")
        }
    }

    /// `+  12.3 ms  server  …`, aligned.
    private func format(_ line: Line) -> String {
        "\(Self.offset(line.date, from: self.start))  \(line.source.padding(toLength: 6, withPad: " ", startingAt: 0))  \(line.text)"
    }

    /// The offset of `date` from `start`, in milliseconds with one decimal, right-aligned.
    static func offset(_ date: Date, from start: Date) -> String {
        let tenths = Int((date.timeIntervalSince(start) * 10_000).rounded())
        let text = "+\(tenths / 10).\(abs(tenths % 10)) ms"
        return String(repeating: " ", count: max(0, 12 - text.count)) + text
    }

    /// `200 alert apns-id 1F2E3D4C token 7c1d…`, or with the reason (and 410 timestamp) of a rejection.
    static func describe(_ verdict: APNsVerdict) -> String {
        var text = "\(verdict.status)"
        if let reason = verdict.reason { text += " \(reason.rawValue)" }
        text += " \(verdict.pushType?.rawValue ?? "-") \(verdict.idHeader) \(Self.short(verdict.apnsID))"
        switch verdict.target {
        case .device(let token): text += " token \(token.prefix(8))…"
        case .broadcast(_, let channel): text += " channel \(channel)"
        case .channels, .unknown: break
        }
        if let timestamp = verdict.timestamp { text += " (unregistered at \(Self.iso(timestamp)))" }
        return text
    }

    /// An apns-id shortened to its first 8 and last 4 characters: the local server numbers the ids
    /// it generates at the end, so the prefix alone would not tell them apart.
    static func short(_ apnsID: String) -> String {
        apnsID.count > 12 ? "\(apnsID.prefix(8))…\(apnsID.suffix(4))" : apnsID
    }

    /// A date as `2026-11-23T07:50:10.123Z`.
    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
