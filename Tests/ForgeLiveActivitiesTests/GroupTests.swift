import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeCrypto
import ForgeLiveActivities
import ForgeSupport
import ForgeTestSupport
import Foundation
import MetricsTestKit
import Testing

private let bundleID = try! APNSBundleID("com.example.game")
private let group = try! LiveActivityGroupID("match-42")

private struct Score: Codable, Sendable, Equatable {
    var home: Int
    var away: Int
}

private struct GameAttributes: Codable, Sendable {
    var match: String
}

/// An APNs in the test's process that answers pushes, broadcasts and the channel API as Apple
/// documents them, records each, and fails on order: a create whose answer is lost after the
/// channel was made, and 429s for a channel's broadcasts.
private final class ChannelAPNs: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        var channel: String?
        var body: [UInt8]
        var priority: String?
    }

    struct State {
        var channels: [String] = []
        var made = 0
        var requests: [Request] = []
        /// Creates whose answer is lost (the channel is made all the same).
        var lostCreates = 0
        /// 429s to answer, per channel id.
        var throttle: [String: Int] = [:]
    }

    let state = LockedBox(State())
    let clock = ManualWallClock()
    let client: APNSClient

    init() throws {
        let signingKey = try APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
        let configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1")),
            environment: .sandbox, retry: APNSClient.RetryPolicy(attempts: 1)
        )
        let state = self.state
        self.client = try APNSClient(configuration: configuration, transport: APNSInProcessTransport { request in
            try Self.answer(request, state: state)
        })
    }

    private struct Lost: Error {}

    private static func answer(_ request: APNSHTTPRequest, state: LockedBox<State>) throws -> APNSTransportResponse {
        let header = { (name: String) in request.headers.first { $0.name == name }?.value }
        return try state.withLock { state in
            state.requests.append(Request(
                method: request.method, path: request.path, channel: header("apns-channel-id"), body: request.body, priority: header("apns-priority")
            ))
            switch (request.method, request.path) {
            case ("GET", "/1/apps/\(bundleID.rawValue)/all-channels"):
                let body = try JSONSerialization.data(withJSONObject: ["channels": state.channels])
                return APNSTransportResponse(status: 200, body: Array(body))
            case ("POST", "/1/apps/\(bundleID.rawValue)/channels"):
                state.made += 1
                let id = Data("channel-\(state.made)".utf8).base64EncodedString()
                state.channels.append(id)
                if state.lostCreates > 0 {
                    state.lostCreates -= 1
                    throw Lost()
                }
                return APNSTransportResponse(status: 201, headers: [APNSHeaderField("apns-channel-id", id)])
            case ("DELETE", "/1/apps/\(bundleID.rawValue)/channels"):
                state.channels.removeAll { $0 == header("apns-channel-id") }
                return APNSTransportResponse(status: 204)
            case ("POST", "/4/broadcasts/apps/\(bundleID.rawValue)"):
                let channel = header("apns-channel-id") ?? ""
                if let left = state.throttle[channel], left > 0 {
                    state.throttle[channel] = left - 1
                    return APNSTransportResponse(status: 429, body: Array(#"{"reason":"TooManyRequests"}"#.utf8))
                }
                return APNSTransportResponse(status: 200, headers: [APNSHeaderField("apns-request-id", UUID().uuidString)])
            default:
                return APNSTransportResponse(status: 200)
            }
        }
    }

    var requests: [Request] { self.state.withLock { $0.requests } }
    var creates: Int { self.requests.count { $0.method == "POST" && $0.path.hasSuffix("/channels") } }
    var broadcasts: [Request] { self.requests.filter { $0.path.hasPrefix("/4/broadcasts/") } }
    var devicePushes: [Request] { self.requests.filter { $0.path.hasPrefix("/3/device/") } }
    func clear() { self.state.withLock { $0.requests = [] } }

    func manager(_ change: (inout LiveActivityManager.Configuration) -> Void = { _ in }) -> LiveActivityManager {
        var configuration = LiveActivityManager.Configuration()
        configuration.startBudget = UpdateBudget(count: 100, window: .seconds(3600))
        change(&configuration)
        return LiveActivityManager(client: self.client, store: InMemoryLiveActivityStore(), clock: self.clock, configuration: configuration)
    }
}

private func state(_ body: [UInt8]) throws -> Score {
    let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    let aps = try #require(object["aps"] as? [String: Any])
    return try JSONDecoder().decode(Score.self, from: JSONSerialization.data(withJSONObject: try #require(aps["content-state"])))
}

private func aps(_ body: [UInt8]) throws -> [String: Any] {
    let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    return try #require(object["aps"] as? [String: Any])
}

/// Starts `count` members of `group`: the installs `install-<n>` report their push-to-start token,
/// those in `onChannels` saying they can listen to channels; token members then report their
/// update token.
private func startMembers(
    _ manager: LiveActivityManager, count: Int, onChannels: Set<Int>, group: LiveActivityGroupID = group, prefix: String = "member"
) async throws -> [LiveActivityID] {
    var ids: [LiveActivityID] = []
    for index in 0..<count {
        let installation = try InstallationID("install-\(prefix)-\(index)")
        try await manager.report(.pushToStartToken(
            PushToStartKey(installation: installation, bundleID: bundleID, attributesType: "GameAttributes"),
            token: try DeviceToken(String(format: "5b%062x", ids.count + 1000 * prefix.count)), sequence: nil, environment: .sandbox,
            channels: onChannels.contains(index)
        ))
        let id = try LiveActivityID("\(prefix)-\(index)")
        let outcome = try await manager.start(
            activity: id, installation: installation, bundleID: bundleID, attributesType: "GameAttributes",
            attributes: GameAttributes(match: group.rawValue), contentState: Score(home: 0, away: 0),
            alert: APNSLiveActivityAlert(title: "Kick-off", body: "0-0"), group: group
        )
        if outcome.activity.channelID == nil {
            try await manager.report(.updateToken(id, token: try DeviceToken(String(format: "%064x", index + 1 + 1000 * prefix.count)), sequence: nil, registration: nil))
        }
        ids.append(id)
    }
    return ids
}

@Suite("Groups: one broadcast per channel and a push per other member, channels made once, 429s backed off per channel", .timeLimit(.minutes(2)))
struct GroupTests {
    @Test("A group of 3 on a channel and 2 by token: one create after a listing, one broadcast and two pushes per update, all with the last state; the end closes and deletes the channel")
    func mixedGroup() async throws {
        let apns = try ChannelAPNs()
        let manager = apns.manager()
        let ids = try await startMembers(manager, count: 5, onChannels: [0, 2, 4])
        #expect(apns.creates == 1)
        let listing = try #require(apns.requests.firstIndex { $0.path.hasSuffix("/all-channels") })
        let create = try #require(apns.requests.firstIndex { $0.method == "POST" && $0.path.hasSuffix("/channels") })
        #expect(listing < create, "the app's channels are listed before the create")
        let channels = try await manager.channels(of: group)
        let channel = try #require(channels.first?.channelID)
        #expect(channels.count == 1 && channels.first?.phase == .open(channel))
        let starts = apns.devicePushes
        #expect(starts.count == 5)
        for (index, start) in starts.enumerated() {
            let input = try aps(start.body)["input-push-channel"] as? String
            #expect(input == ([0, 2, 4].contains(index) ? channel.rawValue : nil), "start \(index)")
        }
        for (index, id) in ids.enumerated() {
            let activity = try #require(try await manager.activity(id))
            #expect(activity.state == .active && activity.group == group)
            #expect(activity.channelID == ([0, 2, 4].contains(index) ? channel : nil))
        }
        apns.clear()

        // Three states at once: the latest wins on the channel and on each token member.
        var outcomes: [LiveActivityManager.GroupRequestOutcome] = []
        for goal in 1...3 {
            outcomes.append(try await manager.request(groupUpdate: group, contentState: Score(home: goal, away: 0)))
        }
        let outcome = try #require(outcomes.last)
        #expect(outcome.channels == 1 && outcome.members == 2 && outcome.onChannels == 3 && outcome.superseded == 3 && outcome.skipped == 0, "\(outcome)")
        let summary = try await manager.deliverDue()
        #expect(summary.broadcasts == 1 && summary.sent == 2, "\(summary)")
        let broadcasts = apns.broadcasts
        #expect(broadcasts.count == 1 && broadcasts.first?.channel == channel.rawValue)
        #expect(try broadcasts.map { try state($0.body) } == [Score(home: 3, away: 0)])
        #expect(try apns.devicePushes.map { try state($0.body) } == [Score(home: 3, away: 0), Score(home: 3, away: 0)])
        let counted = try #require(try await manager.channels(of: group).first)
        #expect(counted.delivery.requested == 3 && counted.delivery.sent == 1 && counted.delivery.superseded == 2)

        // A member on the channel without a token is updated through its group only.
        await #expect(throws: LiveActivityError.self) {
            try await manager.request(update: ids[0], contentState: Score(home: 9, away: 9))
        }

        // The end: one end broadcast and two ends; then the channel is deleted and every member ended.
        apns.clear()
        apns.clock.advance(by: 2)
        let end = try await manager.request(groupEnd: group, contentState: Score(home: 3, away: 1))
        #expect(end.channels == 1 && end.members == 2)
        let ended = try await manager.deliverDue()
        #expect(ended.broadcasts == 1 && ended.sent == 2, "\(ended)")
        #expect(try apns.broadcasts.map { try aps($0.body)["event"] as? String } == ["end"])
        #expect(try apns.devicePushes.map { try aps($0.body)["event"] as? String } == ["end", "end"])
        try await manager.deliverDue()
        #expect(apns.requests.contains { $0.method == "DELETE" && $0.channel == channel.rawValue })
        #expect(try await manager.channels(of: group).first?.phase == .deleted(channel))
        for id in ids { #expect(try await manager.activity(id)?.state == .ended, "\(id)") }
        #expect(apns.state.withLock { $0.channels.isEmpty })
    }

    @Test("A create whose answer was lost is never sent again blind: the next start lists the app's channels and adopts the new one")
    func lostCreate() async throws {
        let apns = try ChannelAPNs()
        apns.state.withLock {
            $0.channels = ["b3RoZXItZ3JvdXA="]
            $0.lostCreates = 1
        }
        let manager = apns.manager()
        let ids = try await startMembers(manager, count: 3, onChannels: [0, 1, 2])
        #expect(apns.creates == 1, "one create, though its answer was lost")
        let made = Data("channel-1".utf8).base64EncodedString()
        // The first member started without the channel (its updates go to its token); the next
        // ones found the channel by listing, and not the app's other channel.
        #expect(try await manager.activity(ids[0])?.channelID == nil)
        #expect(try await manager.activity(ids[0])?.history.contains { $0.event == "channel_unavailable" } == true)
        for id in ids.dropFirst() { #expect(try await manager.activity(id)?.channelID?.rawValue == made) }
        #expect(try await manager.channels(of: group).first?.phase == .open(try APNSChannelID(made)))
        let listings = apns.requests.count { $0.path.hasSuffix("/all-channels") }
        #expect(listings == 2, "one listing before the create, one after its answer was lost")
    }

    @Test("429s on one channel back it off, doubling, while the other channel and the token members go on")
    func throttledChannel() async throws {
        let apns = try ChannelAPNs()
        let metrics = TestMetrics()
        let manager = apns.manager { $0.metrics = metrics }
        let other = try LiveActivityGroupID("match-43")
        _ = try await startMembers(manager, count: 2, onChannels: [0], group: group, prefix: "a")
        _ = try await startMembers(manager, count: 2, onChannels: [0], group: other, prefix: "b")
        let throttled = try #require(try await manager.channels(of: group).first?.channelID)
        apns.state.withLock { $0.throttle[throttled.rawValue] = 2 }
        apns.clear()
        try await manager.request(groupUpdate: group, contentState: Score(home: 1, away: 0))
        try await manager.request(groupUpdate: other, contentState: Score(home: 0, away: 1))
        var summary = try await manager.deliverDue()
        #expect(summary.broadcasts == 1 && summary.throttled == 1 && summary.sent == 2, "\(summary)")
        var channel = try #require(try await manager.channels(of: group).first)
        #expect(channel.throttled == 1 && channel.delivery.waiting != nil && channel.backoffUntil == apns.clock.now.addingTimeInterval(1))

        apns.clock.advance(by: 0.5)
        summary = try await manager.deliverDue()
        #expect(summary.throttled == 0 && summary.broadcasts == 0, "still backing off")
        apns.clock.advance(by: 0.5)
        summary = try await manager.deliverDue()
        #expect(summary.throttled == 1)
        channel = try #require(try await manager.channels(of: group).first)
        #expect(channel.backoffUntil == apns.clock.now.addingTimeInterval(2), "the wait doubles")
        apns.clock.advance(by: 2)
        summary = try await manager.deliverDue()
        #expect(summary.broadcasts == 1 && summary.throttled == 0)
        channel = try #require(try await manager.channels(of: group).first)
        #expect(channel.throttled == 2 && channel.throttledInARow == 0 && channel.backoffUntil == nil && channel.delivery.sent == 1)
        #expect(apns.broadcasts.filter { $0.channel == throttled.rawValue }.count == 3)
        #expect(try metrics.expectCounter("forge_live_activity_channel_throttled_total").totalValue == 2)
        #expect(try metrics.expectCounter("forge_live_activity_broadcasts_sent_total").totalValue == 2)
    }

    @Test("Without channels configured, every member of a group gets its own push; a group with no member is refused naming the field")
    func tokensOnly() async throws {
        let apns = try ChannelAPNs()
        let manager = apns.manager { $0.groupChannels = nil }
        let ids = try await startMembers(manager, count: 3, onChannels: [0, 1, 2])
        #expect(apns.requests.allSatisfy { $0.path.hasPrefix("/3/device/") }, "no call to the channel API")
        for id in ids { #expect(try await manager.activity(id)?.channelID == nil) }
        apns.clear()
        let outcome = try await manager.request(groupUpdate: group, contentState: Score(home: 1, away: 0), importance: .alerting)
        #expect(outcome.members == 3 && outcome.channels == 0)
        try await manager.deliverDue()
        #expect(apns.devicePushes.count == 3 && apns.devicePushes.allSatisfy { $0.priority == "10" })
        do {
            try await manager.request(groupUpdate: try LiveActivityGroupID("nobody"), contentState: Score(home: 0, away: 0))
            Issue.record("a group with no member was accepted")
        } catch {
            #expect(error.code == .unknownActivity && error.field == "group")
        }
        #expect(throws: LiveActivityError.self) { try LiveActivityGroupID(String(repeating: "g", count: 65)) }
    }

    @Test("An activity the app started itself joins a group through its report, and gets the group's updates through its token")
    func registeredMember() async throws {
        let apns = try ChannelAPNs()
        let manager = apns.manager()
        let report = #"{"kind":"update_token","activity":"fan-1","token":"\#(String(repeating: "ab", count: 32))","bundle_id":"com.example.game","attributes_type":"GameAttributes","group":"match-42"}"#
        #expect(await manager.handleReport(body: Array(report.utf8)).status == 200)
        let bad = #"{"kind":"update_token","activity":"fan-2","token":"\#(String(repeating: "ab", count: 32))","group":"match-42"}"#
        let refused = await manager.handleReport(body: Array(bad.utf8))
        #expect(refused.status == 400 && String(decoding: refused.body, as: UTF8.self).contains("bundle_id"), "a group without the registration's fields")
        #expect(try await manager.activities(inGroup: group).map(\.id.rawValue) == ["fan-1"])
        let outcome = try await manager.request(groupUpdate: group, contentState: Score(home: 2, away: 2))
        #expect(outcome.members == 1 && outcome.channels == 0)
        try await manager.deliverDue()
        #expect(try apns.devicePushes.map { try state($0.body) } == [Score(home: 2, away: 2)])
    }
}
