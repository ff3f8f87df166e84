package import ForgeLiveActivities
package import Foundation

/// An activity as JSON, one shape for every reader: `apnsctl activities list --json` and `show
/// --json`, and the gateway's `GET /v1/activities` and `GET /v1/activities/{id}`.
package enum ActivityJSON {
    /// `{"id", "state", "bundle_id", "attributes_type", "installation", "update_token", "started_at",
    /// "why", "group", "channel_id"}` (`group` and `channel_id`, the broadcast channel it listens
    /// to, null when it has none).
    package static func object(_ activity: ManagedActivity) -> [String: Any] {
        [
            "id": activity.id.rawValue, "state": activity.state.name, "bundle_id": activity.bundleID.rawValue,
            "attributes_type": activity.attributesType, "installation": activity.installation?.rawValue ?? NSNull(),
            "update_token": activity.updateToken?.hexString ?? NSNull(), "started_at": Self.date(activity.startedAt),
            "why": activity.why ?? NSNull(), "group": activity.group?.rawValue ?? NSNull(), "channel_id": activity.channelID?.rawValue ?? NSNull(),
        ]
    }

    /// A group: `{"id", "members": {"total", "by_state": {state: count}}, "channels": [{"bundle_id",
    /// "channel_id", "phase", "requested", "sent", "superseded", "failed", "throttled", "waiting",
    /// "in_flight", "backoff_until"}]}`. `by_state` has every state, 0 included; a channel's
    /// `channel_id` is null while it is being created, its counts are broadcasts.
    package static func group(_ group: LiveActivityGroupID, members: [ManagedActivity], channels: [GroupChannel]) -> [String: Any] {
        var byState = Dictionary(uniqueKeysWithValues: Self.stateNames.map { ($0, 0) })
        for member in members { byState[member.state.name, default: 0] += 1 }
        let channels: [[String: Any]] = channels.map { channel in
            let phase =
                switch channel.phase {
                case .creating: "creating"
                case .open: "open"
                case .closing: "closing"
                case .deleted: "deleted"
                }
            return [
                "bundle_id": channel.bundleID.rawValue, "channel_id": channel.channelID?.rawValue ?? NSNull(), "phase": phase,
                "requested": channel.delivery.requested, "sent": channel.delivery.sent, "superseded": channel.delivery.superseded,
                "failed": channel.delivery.failed, "throttled": channel.throttled, "waiting": channel.delivery.waiting != nil,
                "in_flight": channel.delivery.inFlight != nil, "backoff_until": channel.backoffUntil.map(Self.date) ?? NSNull(),
            ]
        }
        return ["id": group.rawValue, "members": ["total": members.count, "by_state": byState] as [String: Any], "channels": channels]
    }

    /// ``object(_:)`` with `renewals`, `held` (the event of the push held, or null), the counts of
    /// the requested pushes (`requested`, `sent`, `superseded`, `downgraded`, `failed`,
    /// `may_have_been_delivered_twice`), `waiting` and `in_flight` (the kind of the push waiting or
    /// being sent, or null), `content_state` (the last one sent or being sent, or null) and
    /// `history` (`[{"at", "event", "detail"}]`, oldest first).
    package static func detailed(_ activity: ManagedActivity) -> [String: Any] {
        var object = Self.object(activity)
        object["renewals"] = activity.renewals
        object["held"] = activity.held?.event ?? NSNull()
        let delivery = activity.delivery
        object["requested"] = delivery.requested
        object["sent"] = delivery.sent
        object["superseded"] = delivery.superseded
        object["downgraded"] = delivery.downgraded
        object["failed"] = delivery.failed
        object["waiting"] = delivery.waiting?.kind.rawValue ?? NSNull()
        object["in_flight"] = delivery.inFlight?.push.kind.rawValue ?? NSNull()
        object["may_have_been_delivered_twice"] = delivery.mayHaveBeenDeliveredTwice
        object["content_state"] = activity.lastContentState.flatMap { try? JSONSerialization.jsonObject(with: Data($0)) } ?? NSNull()
        object["history"] = activity.history.map { ["at": Self.date($0.at), "event": $0.event, "detail": $0.detail] }
        return object
    }

    /// One JSON object or array as text, keys sorted.
    package static func text(_ value: Any) -> String {
        String(decoding: Self.bytes(value), as: UTF8.self)
    }

    /// One JSON object or array as bytes, keys sorted.
    package static func bytes(_ value: Any) -> [UInt8] {
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return Array((value is [Any] ? "[]" : "{}").utf8)
        }
        return Array(data)
    }

    /// `order-17  active  com.example.shop  OrderAttributes  80a4c2d1…  2026-11-29T09:00:00Z  why`.
    package static func line(_ activity: ManagedActivity) -> String {
        let token = activity.updateToken.map { "\($0.hexString.prefix(8))…" } ?? "-"
        let fields = [
            activity.id.rawValue, activity.state.description, activity.bundleID.rawValue, activity.attributesType,
            activity.installation?.rawValue ?? "-", token, Self.date(activity.startedAt),
        ]
        return fields.joined(separator: "  ") + (activity.why.map { "  (\($0))" } ?? "")
    }

    /// ISO 8601 in UTC, to the second.
    package static func date(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!))
    }

    /// The names of the states, as `state` takes them: starting, active, stale, ending, ended, dead.
    package static let stateNames = ["starting", "active", "stale", "ending", "ended", "dead"]
}
