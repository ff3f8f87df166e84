internal import Foundation
internal import ForgeAPNsCore
internal import ForgeLoopback
internal import ForgeSimulatedDevice

/// One line of a scenario's timeline: when (from the start of the run), who, what.
public struct ScenarioLine: Hashable, Sendable {
    /// Who did it: `server`, `app`, `device` or `client`.
    public var source: String
    /// Seconds since the run started.
    public var offset: Double
    /// What happened, one line.
    public var text: String
}

/// One check of a scenario: passed, or what was expected and what came.
public struct ScenarioCheck: Hashable, Sendable {
    /// Whether it passed.
    public var passed: Bool
    /// What it checks, one line.
    public var text: String
    /// For a failure: `expected …, got …`; empty when it passed or nothing more is known.
    public var detail: String
}

/// A finished scenario: its title, its timeline (the server's verdicts, the app's notes and the
/// device's events merged by date) and its checks.
public struct ScenarioSection: Hashable, Sendable {
    /// `1. Alert -> shown -> …`.
    public var title: String
    /// The timeline, in date order.
    public var lines: [ScenarioLine]
    /// The checks, in the order made.
    public var checks: [ScenarioCheck]
}

/// Collects a section: marks where its server, app and device records start, keeps its checks, and
/// assembles the timeline when it finishes.
final class SectionBuilder {
    /// A marked point: where a section's server, app and device records start.
    struct Mark {
        var title: String
        var recorder: Int
        var device: Int
    }

    let start: Date
    let recorder: ScenarioRecorder
    let device: SimulatedDevice
    private var pendingChecks: [ScenarioCheck] = []
    private(set) var sections: [ScenarioSection] = []
    private let onSection: (ScenarioSection) -> Void

    init(start: Date, recorder: ScenarioRecorder, device: SimulatedDevice, onSection: @escaping (ScenarioSection) -> Void) {
        self.start = start
        self.recorder = recorder
        self.device = device
        self.onSection = onSection
    }

    /// Starts a section: marks the records.
    func begin(_ title: String) -> Mark {
        Mark(title: title, recorder: self.recorder.count, device: self.device.timeline.count)
    }

    /// Ends the section: everything recorded since `mark` in date order (the device's events only
    /// with `deviceEvents`), `extra` lines, then the section's checks.
    func finish(_ mark: Mark, deviceEvents: Bool = true, extra: [(date: Date, source: String, text: String)] = []) {
        var lines = self.recorder.entries(since: mark.recorder).map { entry -> (Date, String, String) in
            switch entry.kind {
            case .verdict(let verdict): return (entry.date, "server", Self.describe(verdict))
            case .note(let handler, let text): return (entry.date, "app", "\(handler): \(text)")
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
                return (entry.date, "device", text)
            }
        }
        lines += extra.map { ($0.date, $0.source, $0.text) }
        // Stable: equal dates keep server, app, device, extra order.
        let ordered = lines.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }.map(\.element)
        let section = ScenarioSection(
            title: mark.title,
            lines: ordered.map { ScenarioLine(source: $0.1, offset: $0.0.timeIntervalSince(self.start), text: $0.2) },
            checks: self.pendingChecks
        )
        self.pendingChecks.removeAll()
        self.sections.append(section)
        self.onSection(section)
    }

    /// Records a check of the current section: `passed`, or a failure that names what was expected and what came.
    func check(_ passed: Bool, _ text: String, expected: @autoclosure () -> String = "", got: @autoclosure () -> String = "") {
        let detail = passed || expected().isEmpty ? "" : "expected \(expected()), got \(got())"
        self.pendingChecks.append(ScenarioCheck(passed: passed, text: text, detail: detail))
    }

    /// `200 alert apns-id 1F2E3D4C token 7c1d…`, or with the reason (and 410 timestamp) of a rejection.
    static func describe(_ verdict: APNsVerdict) -> String {
        var text = "\(verdict.status)"
        if let reason = verdict.reason { text += " \(reason.rawValue)" }
        text += " \(verdict.pushType?.rawValue ?? "-") \(verdict.idHeader) \(Self.short(verdict.apnsID))"
        switch verdict.target {
        case .device(let token): text += " token \(token.prefix(8))…"
        case .broadcast(_, let channel): text += " channel \(channel)"
        case .channels: text += " channel API"
        case .unknown: break
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
