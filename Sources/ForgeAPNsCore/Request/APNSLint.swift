public import struct Foundation.Date
public import struct Foundation.Data
public import class Foundation.JSONSerialization

/// A mistake APNs accepts and an iPhone then gets wrong, found in a push before or after it is
/// sent: a Live Activity date the app will read 31 years off, a background push iOS will not
/// deliver as one. Never a reason to refuse a push: senders print lints as warnings, and the local
/// server's inbox lists them beside the verdict.
public struct APNSLint: Sendable, Hashable, CustomStringConvertible {
    /// The lint's id (`LA001` …): stable, for documentation and for silencing it.
    public var id: String
    /// One line that names the key and says what the phone will do.
    public var message: String
    /// The JSON path of the offending field (`aps.content-state.eta`) where the lint knows one;
    /// nil for a lint about the push as a whole or its headers.
    public var path: String?

    /// Creates a lint.
    public init(id: String, message: String) {
        self.id = id
        self.message = message
    }

    /// Creates a lint about the field at `path`.
    public init(id: String, message: String, path: String) {
        self.id = id
        self.message = message
        self.path = path
    }

    public var description: String { "\(self.id): \(self.message)" }

    /// Every lint: its id and what it catches.
    public static let catalog: [(id: String, summary: String)] = [
        ("LA001", "a content-state number in a date-like key that reads as Unix seconds or milliseconds near now"),
        ("LA002", "a content-state ISO 8601 string in a date-like key"),
        ("LA003", "a liveactivity push without aps.timestamp"),
        ("LA004", "a Live Activity timestamp more than an hour old, or in the future"),
        ("LA005", "a stale-date or dismissal-date already past"),
        ("LA006", "a push-to-start without apns-collapse-id"),
        ("LA007", "a priority-10 Live Activity update less than a minute after the previous one to the same activity"),
        ("LA008", "an alert in a Live Activity update, which alerts at any priority"),
        ("LA009", "a Live Activity timestamp in milliseconds"),
        ("LA010", "a stale-date or dismissal-date more than ten years ahead"),
        ("LA011", "a start whose attributes are its content-state"),
        ("LA012", "a null inside content-state"),
        ("LA013", "a start without an alert"),
        ("LA014", "Live Activity updates that all carry the same relevance-score"),
        ("BG001", "a background push with priority 10"),
        ("BG002", "a background push with alert, sound or badge"),
        ("AL001", "mutable-content without an alert"),
        ("AL002", "an alert with neither title nor body"),
    ]
}

/// The lint engine: one function of a push's payload and headers, no I/O. `apnsctl send` prints
/// what it finds as warnings (once per prepared notification, not per token); the local server's
/// inbox lists it with each push.
///
/// Dates: ActivityKit decodes `content-state` into the app's `ContentState` with `JSONDecoder`'s
/// default strategy, which reads a `Date` as seconds since 2001-01-01 (`deferredToDate`,
/// https://developer.apple.com/documentation/foundation/jsondecoder/datedecodingstrategy/defertodate);
/// Unix seconds there show a date about 31 years late, and an ISO 8601 string does not decode.
public enum APNSLinter {
    /// Seconds from 1970-01-01 to 2001-01-01, the reference date of `JSONDecoder`'s default.
    static let referenceOffset: Double = 978_307_200

    /// The lints of a push.
    /// - Parameters:
    ///   - body: the payload as sent.
    ///   - pushType: its push type.
    ///   - priority: `apns-priority` (nil when absent).
    ///   - collapseID: `apns-collapse-id`.
    ///   - now: what "past" and "an hour old" are measured against.
    public static func lints(body: [UInt8], pushType: APNSPushType, priority: Int?, collapseID: String?, now: Date) -> [APNSLint] {
        guard let payload = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
            let aps = payload["aps"] as? [String: Any]
        else { return [] }
        var lints: [APNSLint] = []
        switch pushType {
        case .liveactivity:
            Self.liveActivity(aps, collapseID: collapseID, now: now, into: &lints)
        case .background:
            if priority == 10 {
                lints.append(APNSLint(id: "BG001", message: "apns-priority is 10: iOS delivers background pushes at priority 5 only (APNs may refuse 10)"))
            }
            let visible = ["alert", "sound", "badge"].filter { aps[$0] != nil }
            if !visible.isEmpty {
                lints.append(APNSLint(
                    id: "BG002",
                    message: "aps.\(visible.joined(separator: ", aps.")) in a background push: iOS shows it as an alert and does not wake the app in the background",
                    path: "aps.\(visible[0])"
                ))
            }
        case .alert:
            Self.alert(aps, into: &lints)
        default:
            break
        }
        return lints
    }

    private static func alert(_ aps: [String: Any], into lints: inout [APNSLint]) {
        if (aps["mutable-content"] as? Int) == 1, aps["alert"] == nil {
            lints.append(APNSLint(id: "AL001", message: "aps.mutable-content is 1 without aps.alert: iOS runs the service extension only for an alert", path: "aps.mutable-content"))
        }
        if let alert = aps["alert"] as? [String: Any] {
            let text = ["title", "body", "title-loc-key", "loc-key"].contains { (alert[$0] as? String).map { !$0.isEmpty } ?? (alert[$0] != nil) }
            if !text {
                lints.append(APNSLint(id: "AL002", message: "aps.alert has neither title nor body: iOS shows nothing", path: "aps.alert"))
            }
        } else if let alert = aps["alert"] as? String, alert.isEmpty {
            lints.append(APNSLint(id: "AL002", message: "aps.alert is empty: iOS shows nothing", path: "aps.alert"))
        }
    }

    private static func liveActivity(_ aps: [String: Any], collapseID: String?, now: Date, into lints: inout [APNSLint]) {
        let event = aps["event"] as? String
        if let timestamp = Self.number(aps["timestamp"]) {
            let age = now.timeIntervalSince1970 - timestamp
            if timestamp > Self.millisecondsThreshold {
                lints.append(APNSLint(
                    id: "LA009",
                    message: "aps.timestamp \(Self.numberText(timestamp)) is in milliseconds: APNs wants seconds since 1970, and iOS then ignores "
                        + "every later update with a true timestamp as older; send \(Self.numberText((timestamp / 1000).rounded(.down)))",
                    path: "aps.timestamp"
                ))
            } else if age > 3_600 {
                lints.append(APNSLint(
                    id: "LA004",
                    message: "aps.timestamp \(Int(timestamp)) is \(Self.duration(age)) old: iOS ignores an update older than the last one it applied",
                    path: "aps.timestamp"
                ))
            } else if age < -60 {
                lints.append(APNSLint(
                    id: "LA004",
                    message: "aps.timestamp \(Int(timestamp)) is \(Self.duration(-age)) in the future: later updates with a true timestamp are ignored",
                    path: "aps.timestamp"
                ))
            }
        } else {
            lints.append(APNSLint(id: "LA003", message: "no aps.timestamp: iOS drops a Live Activity push without one", path: "aps"))
        }
        for key in ["stale-date", "dismissal-date"] {
            guard let date = Self.number(aps[key]) else { continue }
            if date < now.timeIntervalSince1970 {
                let past = Self.duration(now.timeIntervalSince1970 - date)
                let effect = event == "start" && key == "stale-date" ? "iOS never shows the activity it starts"
                    : "the activity turns \(key == "stale-date" ? "stale" : "dismissed") at once"
                lints.append(APNSLint(id: "LA005", message: "aps.\(key) \(Int(date)) is \(past) past: \(effect)", path: "aps.\(key)"))
            } else if date - now.timeIntervalSince1970 > Self.tenYears {
                let hint = date > Self.millisecondsThreshold
                    ? "it reads as milliseconds; APNs wants seconds since 1970: send \(Self.numberText((date / 1000).rounded(.down)))"
                    : "APNs wants seconds since 1970"
                lints.append(APNSLint(
                    id: "LA010",
                    message: "aps.\(key) \(Self.numberText(date)) is more than ten years ahead: \(hint)",
                    path: "aps.\(key)"
                ))
            }
        }
        if event == "update", aps["alert"] != nil {
            lints.append(APNSLint(
                id: "LA008",
                message: "aps.alert in an update: iOS alerts (lights up the Dynamic Island, plays any sound) at priority 5 as at 10; "
                    + "leave it out of updates the user need not notice",
                path: "aps.alert"
            ))
        }
        if event == "start" {
            if aps["alert"] == nil {
                lints.append(APNSLint(
                    id: "LA013",
                    message: "a start without aps.alert: APNs accepts it, then iOS drops it and starts no activity",
                    path: "aps"
                ))
            }
            if let attributes = aps["attributes"] as? [String: Any], let state = aps["content-state"] as? [String: Any], !attributes.isEmpty,
                Self.sameObject(attributes, state)
            {
                lints.append(APNSLint(
                    id: "LA011",
                    message: "aps.attributes is the same object as aps.content-state: the app decodes attributes as its ActivityAttributes "
                        + "and content-state as their ContentState, so one copied for the other is a mistake in the sender",
                    path: "aps.attributes"
                ))
            }
        }
        if (aps["event"] as? String) == "start", collapseID == nil {
            lints.append(APNSLint(
                id: "LA006",
                message: "a push-to-start without apns-collapse-id: a retried start makes a second activity"
            ))
        }
        if let state = aps["content-state"] as? [String: Any] {
            Self.contentState(state, path: "aps.content-state", now: now, into: &lints)
            Self.nulls(in: state, path: "aps.content-state", into: &lints)
        }
    }

    /// A number above this, as a date or timestamp, is milliseconds: 1e11 seconds is the year 5138.
    static let millisecondsThreshold: Double = 1e11
    /// Ten years in seconds: a stale or dismissal date further ahead was not meant in seconds.
    static let tenYears: Double = 10 * 365.25 * 86_400

    /// LA014: Live Activity updates (`aps.event` `update`; other payloads are ignored) that all carry
    /// the same `aps.relevance-score`, when there are two or more. iOS shows the most relevant
    /// activity in the Dynamic Island; with one score for all it has nothing to rank by and the
    /// island jumps between them. Needs several payloads, so the single-push
    /// ``lints(body:pushType:priority:collapseID:now:)`` cannot judge it: `apnsctl lint` does, across its files.
    public static func sameRelevanceScore(acrossUpdates bodies: [[UInt8]]) -> APNSLint? {
        var scores: [Double?] = []
        for body in bodies {
            guard let payload = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
                let aps = payload["aps"] as? [String: Any], aps["event"] as? String == "update"
            else { continue }
            scores.append(Self.number(aps["relevance-score"]))
        }
        guard scores.count >= 2, let first = scores[0], scores.allSatisfy({ $0 == first }) else { return nil }
        return APNSLint(
            id: "LA014",
            message: "all \(scores.count) updates carry aps.relevance-score \(Self.numberText(first)): with one score for all, the Dynamic Island "
                + "jumps between the activities; rank them with different scores",
            path: "aps.relevance-score"
        )
    }

    /// Date-like keys: `date`, `time`, `eta`, a key ending in `At`, `deadline`, `until`, `expires`.
    /// LA007: a priority-10 update to a Live Activity `interval` after the previous priority-10
    /// update to the same activity token, when that is under a minute. Frequent priority-10 updates
    /// spend the activity's update budget and are then throttled (docs/device-rules.md); priority 5
    /// does not spend it. Needs the sender's history, so the single-push ``lints(body:pushType:priority:collapseID:now:)``
    /// cannot judge it: the local server's inbox does, per token.
    public static func frequentUpdate(after interval: Duration) -> APNSLint? {
        guard interval < .seconds(60), interval >= .zero else { return nil }
        let milliseconds = Int(interval.components.seconds) * 1000 + Int(interval.components.attoseconds / 1_000_000_000_000_000)
        let after = milliseconds == 0 ? "less than 1 ms" : milliseconds < 1000 ? "\(milliseconds) ms"
            : "\(milliseconds / 1000).\(milliseconds % 1000 / 100) s"
        return APNSLint(
            id: "LA007",
            message: "a priority-10 update \(after) after the previous one to this activity: "
                + "priority-10 updates spend a budget iOS then throttles; send frequent updates at priority 5"
        )
    }

    package static func isDateLike(_ key: String) -> Bool {
        let lower = key.lowercased()
        return lower.contains("date") || lower.contains("time") || lower == "eta" || key.hasSuffix("At") || key.hasSuffix("_at")
            || lower.contains("deadline") || lower.contains("until") || lower.contains("expires")
    }

    private static func contentState(_ object: [String: Any], path: String, now: Date, into lints: inout [APNSLint]) {
        for key in object.keys.sorted() {
            let value = object[key]
            let name = "\(path).\(key)"
            if let nested = value as? [String: Any] {
                Self.contentState(nested, path: name, now: now, into: &lints)
                continue
            }
            guard Self.isDateLike(key) else { continue }
            if let number = Self.number(value), !(value is Bool) {
                guard let reading = Self.unixReading(of: number, near: now) else { continue }
                lints.append(APNSLint(id: "LA001", message: "\(name) \(reading.explanation)", path: name))
            } else if let text = value as? String, Self.looksISO(text) {
                lints.append(APNSLint(
                    id: "LA002",
                    message: "\(name) is an ISO 8601 string: a Date decoded with JSONDecoder's default needs seconds since 2001-01-01, "
                        + "so the update fails to decode and is dropped",
                    path: name
                ))
            }
        }
    }

    /// How a number sent for a `Date` reads when it was meant as Unix seconds or milliseconds: the
    /// date meant, the date `JSONDecoder`'s default shows (seconds since 2001-01-01), and what to send.
    package struct UnixReading: Sendable, Hashable {
        /// "Unix seconds" or "Unix milliseconds".
        package var unit: String
        /// The date the sender meant.
        package var meant: Date
        /// The date a default `JSONDecoder` decodes.
        package var shown: Date
        /// The number to send instead: seconds since 2001-01-01.
        package var corrected: Double
        /// The number as sent.
        package var number: Double

        /// `1767225600 looks like Unix seconds (…); a Date decoded with JSONDecoder's default reads … and shows …: send …`.
        package var explanation: String {
            "\(APNSLinter.numberText(self.number)) looks like \(self.unit) (\(APNSLinter.iso(self.meant))); a Date decoded with "
                + "JSONDecoder's default reads seconds since 2001-01-01 and shows \(APNSLinter.iso(self.shown)): "
                + "send \(APNSLinter.numberText(self.corrected))"
        }
    }

    /// `number` read as Unix seconds (or milliseconds) when, read so, it lies nearer `now` than read as
    /// seconds since 2001 (the default decoding would put it decades away); `nil` when it does not.
    package static func unixReading(of number: Double, near now: Date) -> UnixReading? {
        let unixNow = now.timeIntervalSince1970, decades = 20 * 365.25 * 86_400
        let seconds: Double
        let unit: String
        if abs(number - unixNow) < decades, abs(number - unixNow) < abs(number - now.timeIntervalSinceReferenceDate) {
            (seconds, unit) = (number, "Unix seconds")
        } else if abs(number / 1000 - unixNow) < decades {
            (seconds, unit) = (number / 1000, "Unix milliseconds")
        } else {
            return nil
        }
        return UnixReading(
            unit: unit, meant: Date(timeIntervalSince1970: seconds), shown: Date(timeIntervalSinceReferenceDate: number),
            corrected: (seconds - Self.referenceOffset).rounded(), number: number
        )
    }

    private static func looksISO(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 10, utf8[4] == UInt8(ascii: "-"), utf8[7] == UInt8(ascii: "-") else { return false }
        return utf8[0..<4].allSatisfy { (48...57).contains($0) }
    }

    private static func number(_ value: Any?) -> Double? {
        if value is Bool { return nil }
        if let value = value as? Double { return value }
        if let value = value as? Int { return Double(value) }
        return nil
    }

    package static func numberText(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    package static func iso(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle())
    }

    private static func duration(_ seconds: Double) -> String {
        if seconds >= 86_400 * 2 { return "\(Int(seconds / 86_400)) days" }
        if seconds >= 7_200 { return "\(Int(seconds / 3_600)) hours" }
        return "\(Int(seconds / 60)) minutes"
    }
}

extension APNSPreparedNotification {
    /// What an iPhone would get wrong with this notification (``APNSLinter``), judged at `now`.
    public func lints(now: Date = Date()) -> [APNSLint] {
        APNSLinter.lints(
            body: self.body, pushType: self.pushType, priority: self.priority.map { Int($0.rawValue) },
            collapseID: self.collapseID?.rawValue, now: now
        )
    }
}

extension APNSPreparedNotification {
    /// Whether this is what LA007 counts: a Live Activity update at priority 10 (the default), which
    /// spends the activity's update budget. Parses the body only when the headers match.
    package var spendsUpdateBudget: Bool {
        guard self.pushType == .liveactivity, (self.priority?.rawValue ?? 10) == 10,
            let root = try? JSONSerialization.jsonObject(with: Data(self.body)) as? [String: Any],
            let aps = root["aps"] as? [String: Any]
        else { return false }
        return aps["event"] as? String == "update"
    }
}

extension APNSPreparedBroadcast {
    /// What an iPhone listening to the channel would get wrong with this broadcast (``APNSLinter``), judged at `now`.
    public func lints(now: Date = Date()) -> [APNSLint] {
        APNSLinter.lints(body: self.body, pushType: .liveactivity, priority: Int(self.priority.rawValue), collapseID: nil, now: now)
    }
}
