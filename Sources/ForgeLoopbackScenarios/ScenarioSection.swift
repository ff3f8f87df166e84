package import Foundation
internal import ForgeAPNsCore
internal import ForgeLoopback
internal import ForgeSimulatedDevice
internal import ForgeSupport

/// One line of a scenario's timeline: when, between whom, what, and how it ended.
package struct ScenarioLine: Hashable, Sendable {
    /// The parties of a push's way, left to right: the client sends to the server (the local APNs),
    /// which delivers to the device, which runs the app's handlers.
    package enum Lane: String, Hashable, Sendable, CaseIterable {
        case client, server, device, app
    }

    /// How a step ended, for the eye: what the HTML timeline colours.
    package enum Outcome: String, Hashable, Sendable {
        /// The server accepted a request (2xx).
        case accepted
        /// The server rejected a request, or the device refused a push.
        case rejected
        /// Dropped, ignored, not shown, not delivered: nothing failed, but nothing happened either.
        case dropped
        /// Kept by APNs for a device that is offline, to be delivered when it reconnects.
        case stored
        /// Not applied: a budget of the device's (updates, starts, background pushes, widget reloads) was spent.
        case throttled
        /// The device received, showed or applied something.
        case delivered
        /// A handler of the app ran.
        case handled
        /// A summary or a note.
        case info
    }

    /// Where the step starts: the sender of an arrow, or the lane of a step that stays on one.
    package var from: Lane
    /// Who did it: the receiver of an arrow (the server for its decision on a request, the device
    /// for a push it received, the app for a handler that ran), or the lane of a step that stays on one.
    package var to: Lane
    /// Seconds since the run started.
    package var offset: Double
    /// When it happened.
    package var date: Date
    /// What happened, one line.
    package var text: String
    /// How it ended.
    package var outcome: Outcome

    /// Who did it: `client`, `server`, `device` or `app` (``to``'s name).
    package var source: String { self.to.rawValue }

    /// A step from `from` to `to` (on one lane when they are equal); ``offset`` is set by the section.
    init(_ from: Lane, _ to: Lane, date: Date, text: String, outcome: Outcome) {
        self.from = from
        self.to = to
        self.offset = 0
        self.date = date
        self.text = text
        self.outcome = outcome
    }
}

/// One check of a scenario: passed, or what was expected and what came.
package struct ScenarioCheck: Hashable, Sendable {
    /// Whether it passed.
    package var passed: Bool
    /// What it checks, one line.
    package var text: String
    /// For a failure: `expected …, got …`; empty when it passed or nothing more is known.
    package var detail: String
}

/// A finished scenario: its title, its timeline (the server's verdicts, the app's notes and the
/// device's events merged by date) and its checks.
package struct ScenarioSection: Hashable, Sendable {
    /// `1. Alert -> shown -> …`.
    package var title: String
    /// When the scenario started.
    package var start: Date
    /// The timeline, in date order.
    package var lines: [ScenarioLine]
    /// The checks, in the order made.
    package var checks: [ScenarioCheck]
}

/// Collects a section: marks where its server, app and device records start, keeps its checks, and
/// assembles the timeline when it finishes.
final class SectionBuilder {
    /// A marked point: where a section's server, app and device records start.
    struct Mark {
        var title: String
        var date: Date
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
        Mark(title: title, date: Date(), recorder: self.recorder.count, device: self.device.timeline.count)
    }

    /// Ends the section: everything recorded since `mark` in date order (the device's events only
    /// with `deviceEvents`), `extra` lines, then the section's checks.
    func finish(_ mark: Mark, deviceEvents: Bool = true, extra: [ScenarioLine] = []) {
        var lines = self.recorder.entries(since: mark.recorder).map { entry -> ScenarioLine in
            switch entry.kind {
            case .decision(let decision): return Self.line(decision, date: entry.date)
            case .note(let handler, let text): return ScenarioLine(.device, .app, date: entry.date, text: "\(handler): \(text)", outcome: .handled)
            }
        }
        if deviceEvents {
            // The device names pushes by their full apns-id; the server lines' short form reads better.
            let ids = self.recorder.entries(since: mark.recorder).compactMap { entry -> String? in
                if case .decision(let decision) = entry.kind { return decision.apnsID }
                return nil
            }
            // A push simply delivered says so by what follows it; the other delivery states (stored,
            // discarded, throttled) are lines of their own.
            let shown = self.device.timeline.dropFirst(mark.device).filter { entry in
                if case .delivery(_, .delivered, _) = entry.event { return false }
                return true
            }
            lines += shown.map { entry in
                let text = ids.reduce(entry.event.description) { $0.replacingOccurrences(of: $1, with: Self.short($1)) }
                let arrives: Bool
                switch entry.event {
                case .pushReceived, .broadcastReceived: arrives = true
                default: arrives = false
                }
                return ScenarioLine(arrives ? .server : .device, .device, date: entry.date, text: text, outcome: Self.outcome(entry.event))
            }
        }
        lines += extra
        // Stable: equal dates keep server, app, device, extra order.
        let ordered = lines.enumerated().sorted { ($0.element.date, $0.offset) < ($1.element.date, $1.offset) }.map { pair in
            var line = pair.element
            line.offset = line.date.timeIntervalSince(self.start)
            return line
        }
        let section = ScenarioSection(title: mark.title, start: mark.date, lines: ordered, checks: self.pendingChecks)
        self.pendingChecks.removeAll()
        self.sections.append(section)
        self.onSection(section)
    }

    /// Records a check of the current section: `passed`, or a failure that names what was expected and what came.
    func check(_ passed: Bool, _ text: String, expected: @autoclosure () -> String = "", got: @autoclosure () -> String = "") {
        let detail = passed || expected().isEmpty ? "" : "expected \(expected()), got \(got())"
        self.pendingChecks.append(ScenarioCheck(passed: passed, text: text, detail: detail))
    }

    /// The server's decision on a request: an arrow from the client, accepted for any 2xx (the channel
    /// API answers 201 to a new channel).
    static func line(_ decision: APNSDecision, date: Date, prefix: String = "") -> ScenarioLine {
        let outcome: ScenarioLine.Outcome = (200..<300).contains(decision.status) ? .accepted : .rejected
        return ScenarioLine(.client, .server, date: date, text: prefix + Self.describe(decision), outcome: outcome)
    }

    /// How a device event ended: refused, dropped or ignored (nothing failed, nothing happened), or delivered.
    static func outcome(_ event: DeviceEvent) -> ScenarioLine.Outcome {
        switch event {
        case .liveActivityPushRejected:
            return .rejected
        case .droppedUnknownToken, .droppedInvalidPayload, .broadcastNotSubscribed, .backgroundNotDelivered, .backgroundBudgetExceeded,
            .serviceExtensionNotRun, .attachmentDropped, .notShown, .responseLost, .liveActivityPushIgnored,
            .delivery(_, .discarded, _):
            return .dropped
        case .delivery(_, .stored, _):
            return .stored
        case .delivery(_, .throttled, _):
            return .throttled
        default:
            return .delivered
        }
    }

    /// `200 alert apns-id 1F2E3D4C token 7c1d…`, or with the reason (and 410 timestamp) of a rejection.
    static func describe(_ decision: APNSDecision) -> String {
        var text = "\(decision.status)"
        if let reason = decision.reason { text += " \(reason.rawValue)" }
        text += " \(decision.pushType?.rawValue ?? "-") \(decision.idHeader) \(Self.short(decision.apnsID))"
        switch decision.target {
        case .device(let token): text += " token \(token.prefix(8))…"
        case .broadcast(_, let channel): text += " channel \(channel)"
        case .channels: text += " channel API"
        case .unknown: break
        }
        if let timestamp = decision.timestamp { text += " (unregistered at \(ISODate.string(timestamp)))" }
        return text
    }

    /// An apns-id shortened to its first 8 and last 4 characters: the local server numbers the ids
    /// it generates at the end, so the prefix alone would not tell them apart.
    static func short(_ apnsID: String) -> String {
        apnsID.count > 12 ? "\(apnsID.prefix(8))…\(apnsID.suffix(4))" : apnsID
    }
}
