internal import ForgeAPNsCore
internal import Foundation

/// A ``GroupChannel`` as a durable store's row holds it: the group and the bundle id as columns,
/// the rest as one JSON object (dates as milliseconds since 1970), and the version.
package struct StoredGroupChannel: Sendable, Equatable {
    package var group: String
    package var bundleID: String
    package var record: [UInt8]
    /// ``ActivityDelivery/dueAt`` in milliseconds, for a store that indexes it.
    package var dueAt: Int64?
    package var version: Int64

    package init(group: String, bundleID: String, record: [UInt8], dueAt: Int64?, version: Int64) {
        self.group = group
        self.bundleID = bundleID
        self.record = record
        self.dueAt = dueAt
        self.version = version
    }

    private struct Body: Codable {
        var phase: String
        var channel: String?
        var owner: String?
        var since: Int64?
        var listedBefore: [String]?
        var delivery: Data
        var throttled: Int
        var backoffUntil: Int64?
        var throttledInARow: Int

        enum CodingKeys: String, CodingKey {
            case phase, channel, owner, since, delivery, throttled
            case listedBefore = "listed_before"
            case backoffUntil = "backoff_until_ms"
            case throttledInARow = "throttled_in_a_row"
        }
    }

    /// The row of `channel`, with `version` (the one the write gives it).
    package init(_ channel: GroupChannel, version: Int) {
        var body = Body(
            phase: "", delivery: Data(StoredDelivery.encode(channel.delivery)), throttled: channel.throttled,
            backoffUntil: channel.backoffUntil?.storedMilliseconds, throttledInARow: channel.throttledInARow
        )
        switch channel.phase {
        case .creating(let owner, let since, let listed):
            body.phase = "creating"
            body.owner = owner
            body.since = since.storedMilliseconds
            body.listedBefore = listed.map(\.rawValue)
        case .open(let id): (body.phase, body.channel) = ("open", id.rawValue)
        case .closing(let id): (body.phase, body.channel) = ("closing", id.rawValue)
        case .deleted(let id): (body.phase, body.channel) = ("deleted", id.rawValue)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        self.init(
            group: channel.group.rawValue, bundleID: channel.bundleID.rawValue, record: Array((try? encoder.encode(body)) ?? Data()),
            dueAt: channel.delivery.dueAt?.storedMilliseconds, version: Int64(version)
        )
    }

    /// The channel the row holds.
    /// - Throws: ``LiveActivityError/Code/store`` naming the row and what is wrong with it.
    package func channel() throws(LiveActivityError) -> GroupChannel {
        let name = "channel of group \(self.group) for \(self.bundleID)"
        let body: Body
        do {
            body = try JSONDecoder().decode(Body.self, from: Data(self.record))
        } catch {
            throw LiveActivityError(.store, field: "record", rule: "the stored \(name) is not readable: \(error)")
        }
        func channelID() throws(LiveActivityError) -> APNSChannelID {
            guard let raw = body.channel, let id = try? APNSChannelID(raw) else {
                throw LiveActivityError(.store, field: "record", rule: "the stored \(name) has no valid channel id")
            }
            return id
        }
        let phase: GroupChannel.Phase
        switch body.phase {
        case "creating":
            phase = .creating(
                owner: body.owner ?? "", since: Date(storedMilliseconds: body.since ?? 0),
                listedBefore: (body.listedBefore ?? []).compactMap { try? APNSChannelID($0) }
            )
        case "open": phase = .open(try channelID())
        case "closing": phase = .closing(try channelID())
        case "deleted": phase = .deleted(try channelID())
        default: throw LiveActivityError(.store, field: "record", rule: "the stored \(name) has the unknown phase '\(body.phase)'")
        }
        var channel = GroupChannel(
            group: try storedColumn("group_id", of: name) { () throws(LiveActivityError) in try LiveActivityGroupID(self.group) },
            bundleID: try storedColumn("bundle_id", of: name) { () throws(APNSValidationError) in try APNSBundleID(self.bundleID) },
            phase: phase, version: Int(self.version)
        )
        channel.delivery = try StoredDelivery.decode(Array(body.delivery), of: name)
        channel.throttled = body.throttled
        channel.backoffUntil = body.backoffUntil.map(Date.init(storedMilliseconds:))
        channel.throttledInARow = body.throttledInARow
        return channel
    }
}
