internal import ForgeAPNsCore
internal import Foundation

/// A ``ManagedActivity`` as a durable store's row holds it: a column per field, in plain SQL
/// types (text, 64-bit integers, bytes), dates as integer milliseconds since 1970, the state as its
/// ``ActivityState/name`` plus the reason of a dead one, the held push as one JSON blob.
///
/// The SQLite and PostgreSQL stores both convert through it, so a field added to the record is
/// added here once.
package struct StoredActivity: Sendable, Equatable {
    package var id: String
    package var bundleID: String
    package var attributesType: String
    package var installation: String?
    /// Lower-case hex.
    package var updateToken: String?
    package var channelID: String?
    /// ``ActivityState/name``.
    package var state: String
    /// The reason of a `dead` state, `nil` for the others.
    package var stateReason: String?
    package var startedAt: Int64
    package var lastContentState: [UInt8]?
    package var lastTimestamp: Int64?
    package var staleDate: Int64?
    /// ``HeldPush`` as JSON (``StoredHeldPush``).
    package var held: [UInt8]?
    package var reportSequence: Int64?
    package var why: String?
    /// The attributes it was started with, as JSON.
    package var attributes: [UInt8]?
    /// A renewal under way: the replaced update token (hex) and when the successor's start was sent.
    package var renewalToken: String?
    package var renewalStartedAt: Int64?
    package var renewals: Int64
    /// ``ManagedActivity/history`` as JSON (``StoredHistory``); `nil` for none.
    package var history: [UInt8]?
    /// ``ManagedActivity/delivery`` as JSON (``StoredDelivery``); `nil` when nothing was requested.
    package var delivery: [UInt8]?
    /// ``ActivityDelivery/dueAt``, in its own column so that due activities are found by an index.
    package var dueAt: Int64?
    /// ``ManagedActivity/group``, in its own indexed column.
    package var groupID: String?
    package var version: Int64

    package init(
        id: String, bundleID: String, attributesType: String, installation: String?, updateToken: String?, channelID: String?,
        state: String, stateReason: String?, startedAt: Int64, lastContentState: [UInt8]?, lastTimestamp: Int64?, staleDate: Int64?,
        held: [UInt8]?, reportSequence: Int64?, why: String?, attributes: [UInt8]?, renewalToken: String?, renewalStartedAt: Int64?,
        renewals: Int64, history: [UInt8]?, delivery: [UInt8]? = nil, dueAt: Int64? = nil, groupID: String? = nil, version: Int64
    ) {
        self.groupID = groupID
        self.id = id
        self.bundleID = bundleID
        self.attributesType = attributesType
        self.installation = installation
        self.updateToken = updateToken
        self.channelID = channelID
        self.state = state
        self.stateReason = stateReason
        self.startedAt = startedAt
        self.lastContentState = lastContentState
        self.lastTimestamp = lastTimestamp
        self.staleDate = staleDate
        self.held = held
        self.reportSequence = reportSequence
        self.why = why
        self.attributes = attributes
        self.renewalToken = renewalToken
        self.renewalStartedAt = renewalStartedAt
        self.renewals = renewals
        self.history = history
        self.delivery = delivery
        self.dueAt = dueAt
        self.version = version
    }

    /// The row of `activity`, with `version` (the one the write gives it).
    package init(_ activity: ManagedActivity, version: Int) {
        var reason: String?
        if case .dead(let why) = activity.state { reason = why }
        self.init(
            id: activity.id.rawValue, bundleID: activity.bundleID.rawValue, attributesType: activity.attributesType,
            installation: activity.installation?.rawValue, updateToken: activity.updateToken?.hexString,
            channelID: activity.channelID?.rawValue, state: activity.state.name, stateReason: reason,
            startedAt: activity.startedAt.storedMilliseconds, lastContentState: activity.lastContentState,
            lastTimestamp: activity.lastTimestamp?.storedMilliseconds, staleDate: activity.staleDate?.storedMilliseconds,
            held: activity.held.map(StoredHeldPush.encode), reportSequence: activity.reportSequence, why: activity.why,
            attributes: activity.attributes, renewalToken: activity.renewal?.replacedToken.hexString,
            renewalStartedAt: activity.renewal?.startedAt.storedMilliseconds, renewals: Int64(activity.renewals),
            history: activity.history.isEmpty ? nil : StoredHistory.encode(activity.history),
            delivery: activity.delivery.isEmpty ? nil : StoredDelivery.encode(activity.delivery),
            dueAt: activity.delivery.dueAt?.storedMilliseconds, groupID: activity.group?.rawValue, version: Int64(version)
        )
    }

    /// The record the row holds.
    /// - Throws: ``LiveActivityError/Code/store`` naming the activity and the column that holds no
    ///   valid value (a row written by something else, or damaged).
    package func activity() throws(LiveActivityError) -> ManagedActivity {
        let record = "activity \(self.id)"
        var activity = ManagedActivity(
            id: try storedColumn("id", of: record) { () throws(LiveActivityError) in try LiveActivityID(self.id) },
            bundleID: try storedColumn("bundle_id", of: record) { () throws(APNSValidationError) in try APNSBundleID(self.bundleID) },
            attributesType: self.attributesType,
            installation: try self.installation.map { value throws(LiveActivityError) in
                try storedColumn("installation", of: record) { () throws(LiveActivityError) in try InstallationID(value) }
            },
            state: try Self.state(self.state, reason: self.stateReason, of: record),
            startedAt: Date(storedMilliseconds: self.startedAt),
            version: Int(self.version)
        )
        activity.updateToken = try self.updateToken.map { value throws(LiveActivityError) in
            try storedColumn("update_token", of: record) { () throws(APNSValidationError) in try DeviceToken(storedHex: value) }
        }
        activity.channelID = try self.channelID.map { value throws(LiveActivityError) in
            try storedColumn("channel_id", of: record) { () throws(APNSValidationError) in try APNSChannelID(value) }
        }
        activity.group = try self.groupID.map { value throws(LiveActivityError) in
            try storedColumn("group_id", of: record) { () throws(LiveActivityError) in try LiveActivityGroupID(value) }
        }
        activity.lastContentState = self.lastContentState
        activity.lastTimestamp = self.lastTimestamp.map(Date.init(storedMilliseconds:))
        activity.staleDate = self.staleDate.map(Date.init(storedMilliseconds:))
        activity.held = try self.held.map { bytes throws(LiveActivityError) in try StoredHeldPush.decode(bytes, of: record) }
        activity.reportSequence = self.reportSequence
        activity.why = self.why
        activity.attributes = self.attributes
        if let token = self.renewalToken {
            guard let started = self.renewalStartedAt else {
                throw LiveActivityError(.store, field: "renewal_started_at_ms", rule: "the stored \(record) has a renewal token without its start")
            }
            activity.renewal = Renewal(
                replacedToken: try storedColumn("renewal_token", of: record) { () throws(APNSValidationError) in try DeviceToken(storedHex: token) },
                startedAt: Date(storedMilliseconds: started)
            )
        }
        activity.renewals = Int(self.renewals)
        activity.history = try self.history.map { bytes throws(LiveActivityError) in try StoredHistory.decode(bytes, of: record) } ?? []
        if let delivery = self.delivery { activity.delivery = try StoredDelivery.decode(delivery, of: record) }
        return activity
    }

    private static func state(_ name: String, reason: String?, of record: String) throws(LiveActivityError) -> ActivityState {
        switch name {
        case "starting": return .starting
        case "active": return .active
        case "stale": return .stale
        case "ending": return .ending
        case "ended": return .ended
        case "dead":
            guard let reason else { throw LiveActivityError(.store, field: "state_reason", rule: "the stored \(record) is dead with no reason") }
            return .dead(reason: reason)
        default:
            throw LiveActivityError(.store, field: "state", rule: "the stored \(record) has the unknown state '\(name)'")
        }
    }
}

extension AppliedContentUpdate {
    /// The change a store's statement returned: the id, the update token (hex), the bundle id and
    /// the timestamp (milliseconds since 1970) of the row.
    /// - Throws: ``LiveActivityError/Code/store`` naming the column that holds no valid value.
    package init(storedID id: String, updateToken: String, bundleID: String, timestamp: Int64) throws(LiveActivityError) {
        let record = "activity \(id)"
        self.init(
            id: try storedColumn("id", of: record) { () throws(LiveActivityError) in try LiveActivityID(id) },
            updateToken: try storedColumn("update_token", of: record) { () throws(APNSValidationError) in try DeviceToken(storedHex: updateToken) },
            bundleID: try storedColumn("bundle_id", of: record) { () throws(APNSValidationError) in try APNSBundleID(bundleID) },
            timestamp: Date(storedMilliseconds: timestamp)
        )
    }
}

/// `parse()`'s value; its failure as a ``LiveActivityError/Code/store`` naming the column and the record.
func storedColumn<T, Failure: Error>(_ name: String, of record: String, _ parse: () throws(Failure) -> T) throws(LiveActivityError) -> T {
    do {
        return try parse()
    } catch {
        throw LiveActivityError(.store, field: name, rule: "the stored \(record) holds no valid \(name): \(error)")
    }
}

/// A ``HeldPush`` as one JSON object: `{"event", "content_state" (base64), "dismissal_date_ms",
/// "requested_at_ms"}`; the content state's bytes are kept exactly.
struct StoredHeldPush: Codable {
    var event: String
    var contentState: Data
    var dismissalDate: Int64?
    var requestedAt: Int64

    enum CodingKeys: String, CodingKey {
        case event
        case contentState = "content_state"
        case dismissalDate = "dismissal_date_ms"
        case requestedAt = "requested_at_ms"
    }

    static func encode(_ held: HeldPush) -> [UInt8] {
        let stored = StoredHeldPush(
            event: held.event, contentState: Data(held.contentState), dismissalDate: held.dismissalDate?.storedMilliseconds,
            requestedAt: held.requestedAt.storedMilliseconds
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Strings, integers and base64: nothing here can fail to encode.
        guard let bytes = try? encoder.encode(stored) else { preconditionFailure("a held push cannot be encoded as JSON") }
        return Array(bytes)
    }

    static func decode(_ bytes: [UInt8], of record: String) throws(LiveActivityError) -> HeldPush {
        let stored = try storedColumn("held_push", of: record) { () throws(any Error) in
            try JSONDecoder().decode(StoredHeldPush.self, from: Data(bytes))
        }
        return HeldPush(
            event: stored.event, contentState: Array(stored.contentState), dismissalDate: stored.dismissalDate.map(Date.init(storedMilliseconds:)),
            requestedAt: Date(storedMilliseconds: stored.requestedAt)
        )
    }
}

/// ``ActivityDelivery`` as one JSON object, with dates as milliseconds since 1970 and content
/// states and alerts as base64 of their exact bytes.
struct StoredDelivery: Codable {
    struct Push: Codable {
        var kind: String
        var contentState: Data
        var staleDate: Int64?
        var dismissalDate: Int64?
        var alert: Data?
        var relevanceScore: Double?
        var importance: String
        var requestedAt: Int64
        var attempts: Int

        enum CodingKeys: String, CodingKey {
            case kind, alert, importance, attempts
            case contentState = "content_state"
            case staleDate = "stale_date_ms"
            case dismissalDate = "dismissal_date_ms"
            case relevanceScore = "relevance_score"
            case requestedAt = "requested_at_ms"
        }

        init(_ push: PendingPush) {
            self.kind = push.kind.rawValue
            self.contentState = Data(push.contentState)
            self.staleDate = push.staleDate?.storedMilliseconds
            self.dismissalDate = push.dismissalDate?.storedMilliseconds
            self.alert = push.alert.map { Data($0) }
            self.relevanceScore = push.relevanceScore
            self.importance = push.importance.rawValue
            self.requestedAt = push.requestedAt.storedMilliseconds
            self.attempts = push.attempts
        }

        func push(of record: String) throws(LiveActivityError) -> PendingPush {
            guard let kind = PendingPush.Kind(rawValue: self.kind), let importance = UpdateImportance(rawValue: self.importance) else {
                throw LiveActivityError(.store, field: "delivery", rule: "the stored \(record) has a push of unknown kind or importance")
            }
            return PendingPush(
                kind: kind, contentState: Array(self.contentState), staleDate: self.staleDate.map(Date.init(storedMilliseconds:)),
                dismissalDate: self.dismissalDate.map(Date.init(storedMilliseconds:)), alert: self.alert.map(Array.init),
                relevanceScore: self.relevanceScore, importance: importance, requestedAt: Date(storedMilliseconds: self.requestedAt),
                attempts: self.attempts
            )
        }
    }

    struct InFlight: Codable {
        var push: Push
        var owner: String
        var leaseUntil: Int64
        var priority: Int
        var timestamp: Int64

        enum CodingKeys: String, CodingKey {
            case push, owner, priority
            case leaseUntil = "lease_until_ms"
            case timestamp = "timestamp_ms"
        }
    }

    var waiting: Push?
    var inFlight: InFlight?
    var lastSentAt: Int64?
    var dueAt: Int64?
    var alertingSent: [Int64]
    var requested: Int
    var sent: Int
    var superseded: Int
    var downgraded: Int
    var failed: Int
    var mayHaveBeenDeliveredTwice: Int

    enum CodingKeys: String, CodingKey {
        case waiting, requested, sent, superseded, downgraded, failed
        case inFlight = "in_flight"
        case lastSentAt = "last_sent_at_ms"
        case dueAt = "due_at_ms"
        case alertingSent = "alerting_sent_ms"
        case mayHaveBeenDeliveredTwice = "may_have_been_delivered_twice"
    }

    static func encode(_ delivery: ActivityDelivery) -> [UInt8] {
        let stored = StoredDelivery(
            waiting: delivery.waiting.map(Push.init),
            inFlight: delivery.inFlight.map {
                InFlight(
                    push: Push($0.push), owner: $0.owner, leaseUntil: $0.leaseUntil.storedMilliseconds, priority: $0.priority,
                    timestamp: $0.timestamp.storedMilliseconds
                )
            },
            lastSentAt: delivery.lastSentAt?.storedMilliseconds, dueAt: delivery.dueAt?.storedMilliseconds,
            alertingSent: delivery.alertingSent.map(\.storedMilliseconds), requested: delivery.requested, sent: delivery.sent,
            superseded: delivery.superseded, downgraded: delivery.downgraded, failed: delivery.failed,
            mayHaveBeenDeliveredTwice: delivery.mayHaveBeenDeliveredTwice
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Strings, numbers and base64 (a relevance score is finite: the manager checks it).
        guard let bytes = try? encoder.encode(stored) else { preconditionFailure("a delivery cannot be encoded as JSON") }
        return Array(bytes)
    }

    static func decode(_ bytes: [UInt8], of record: String) throws(LiveActivityError) -> ActivityDelivery {
        let stored = try storedColumn("delivery", of: record) { () throws(any Error) in
            try JSONDecoder().decode(StoredDelivery.self, from: Data(bytes))
        }
        var delivery = ActivityDelivery()
        delivery.waiting = try stored.waiting.map { push throws(LiveActivityError) in try push.push(of: record) }
        if let inFlight = stored.inFlight {
            delivery.inFlight = InFlightPush(
                push: try inFlight.push.push(of: record), owner: inFlight.owner, leaseUntil: Date(storedMilliseconds: inFlight.leaseUntil),
                priority: inFlight.priority, timestamp: Date(storedMilliseconds: inFlight.timestamp)
            )
        }
        delivery.lastSentAt = stored.lastSentAt.map(Date.init(storedMilliseconds:))
        delivery.dueAt = stored.dueAt.map(Date.init(storedMilliseconds:))
        delivery.alertingSent = stored.alertingSent.map(Date.init(storedMilliseconds:))
        delivery.requested = stored.requested
        delivery.sent = stored.sent
        delivery.superseded = stored.superseded
        delivery.downgraded = stored.downgraded
        delivery.failed = stored.failed
        delivery.mayHaveBeenDeliveredTwice = stored.mayHaveBeenDeliveredTwice
        return delivery
    }
}

/// ``ManagedActivity/history`` as one JSON array of `{"at_ms", "event", "detail"}`, written by
/// hand (it is rewritten with every save: Foundation's encoder cost more than the rest of a save)
/// and read with `JSONSerialization` (`JSONDecoder` cost twenty times as much).
enum StoredHistory {
    static func encode(_ history: [ActivityHistoryEntry]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(history.count * 96)
        bytes.append(UInt8(ascii: "["))
        for (index, entry) in history.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes += Array(#"{"at_ms":"#.utf8)
            bytes += Array(String(entry.at.storedMilliseconds).utf8)
            bytes += Array(#","event":"#.utf8)
            appendString(entry.event, to: &bytes)
            bytes += Array(#","detail":"#.utf8)
            appendString(entry.detail, to: &bytes)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
        return bytes
    }

    static func decode(_ bytes: [UInt8], of record: String) throws(LiveActivityError) -> [ActivityHistoryEntry] {
        let invalid = { (why: String) in
            LiveActivityError(.store, field: "history", rule: "the stored \(record) holds no valid history: \(why)")
        }
        guard let value = try? JSONSerialization.jsonObject(with: Data(bytes)), let entries = value as? [Any] else {
            throw invalid("not a JSON array")
        }
        return try entries.map { entry throws(LiveActivityError) in
            guard let fields = entry as? [String: Any], let event = fields["event"] as? String, let detail = fields["detail"] as? String,
                let milliseconds = (fields["at_ms"] as? NSNumber).flatMap({ Int64(exactly: $0.doubleValue) })
            else {
                throw invalid("an entry is not {at_ms, event, detail}")
            }
            return ActivityHistoryEntry(at: Date(storedMilliseconds: milliseconds), event: event, detail: detail)
        }
    }

    /// `string` as a JSON string: quotes, backslashes and control characters escaped (RFC 8259, section 7).
    private static func appendString(_ string: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += Array(#"\u00"#.utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

extension Date {
    /// Milliseconds since 1970, as the durable stores keep dates (a finer part is rounded away).
    package var storedMilliseconds: Int64 { Int64((self.timeIntervalSince1970 * 1000).rounded()) }

    /// The date `milliseconds` after 1970.
    package init(storedMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension DeviceToken {
    /// A token as a store kept it: any even number of hex digits, the length being checked when
    /// it was first reported.
    init(storedHex hex: String) throws(APNSValidationError) {
        try self.init(hex, allowedLengths: 2...Int.max)
    }
}
