import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeCrypto
import ForgeLiveActivities
@testable import ForgeLiveActivitiesGateway
import ForgeSupport
import ForgeTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import MetricsTestKit
import Testing

private let shopBundle = "com.example.shop"
private let pushToStart = String(repeating: "5a", count: 32)
private let updateToken = String(repeating: "ab", count: 32)
private let deadToken = String(repeating: "de", count: 32)
private let signingKey = try! APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))

/// A gateway over a manager whose client answers in-process (410 Unregistered for `deadToken`; the
/// channel API and broadcasts as APNs does), each request recorded; every answer is checked against
/// the OpenAPI document's statuses for its route.
private final class Fixture: Sendable {
    let pushes = LockedBox<[APNSHTTPRequest]>([])
    /// The channels the in-process channel API made and not deleted.
    let channels = LockedBox<[String]>([])
    let metrics = TestMetrics()
    let manager: LiveActivityManager
    let gateway: LiveActivityGateway
    let client: APNSClient
    let clock = ManualWallClock()

    init(apiKey: String? = nil, maximumBodySize: Int = 64 * 1024, store: any LiveActivityStore = InMemoryLiveActivityStore()) throws {
        let pushes = self.pushes
        let channels = self.channels
        let configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1")),
            environment: .sandbox, retry: APNSClient.RetryPolicy(attempts: 1)
        )
        self.client = try APNSClient(configuration: configuration, transport: APNSInProcessTransport { request in
            pushes.withLock { $0.append(request) }
            if request.path == "/1/apps/\(shopBundle)/all-channels" {
                let listed = channels.withLock { $0 }
                return APNSTransportResponse(status: 200, body: Array(try JSONSerialization.data(withJSONObject: ["channels": listed])))
            }
            if request.path == "/1/apps/\(shopBundle)/channels" {
                switch request.method {
                case "POST":
                    let id = channels.withLock { made in
                        made.append(Data("channel-\(made.count + 1)".utf8).base64EncodedString())
                        return made[made.count - 1]
                    }
                    return APNSTransportResponse(status: 201, headers: [APNSHeaderField("apns-channel-id", id)])
                case "DELETE":
                    let id = request.headers.first { $0.name == "apns-channel-id" }?.value
                    channels.withLock { $0.removeAll { $0 == id } }
                    return APNSTransportResponse(status: 204)
                default:
                    return APNSTransportResponse(status: 405)
                }
            }
            if request.path.hasPrefix("/4/broadcasts/apps/") {
                return APNSTransportResponse(status: 200, headers: [APNSHeaderField("apns-request-id", UUID().uuidString.lowercased())])
            }
            if request.path.hasSuffix(deadToken) {
                return APNSTransportResponse(status: 410, body: Array(#"{"reason":"Unregistered","timestamp":1700000000000}"#.utf8))
            }
            return APNSTransportResponse(status: 200)
        })
        self.manager = LiveActivityManager(client: self.client, store: store, clock: self.clock)
        let metrics = self.metrics
        self.gateway = LiveActivityGateway(
            manager: self.manager,
            configuration: LiveActivityGateway.Configuration(
                apiKey: apiKey, maximumBodySize: maximumBodySize, metrics: metrics, prometheusText: { Array("# metrics\n".utf8) }
            )
        )
    }

    /// What the manager's delivery loop does a second later: sends the updates and ends the routes recorded.
    @discardableResult
    func deliver() async throws -> LiveActivityManager.DeliverySummary {
        self.clock.advance(by: 1)
        return try await self.manager.deliverDue()
    }

    /// One request; the answer's status must be one the OpenAPI document lists for the route.
    func call(
        _ method: String, _ path: String, _ body: Any? = nil, raw: String? = nil, key: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (status: Int, json: Any?) {
        let bytes = try raw.map { Array($0.utf8) } ?? body.map { Array(try JSONSerialization.data(withJSONObject: $0)) } ?? []
        let parts = path.split(separator: "?", maxSplits: 1)
        let response = await self.gateway.respond(to: .init(
            method: method, path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : nil,
            authorization: key.map { "Bearer \($0)" }, body: bytes
        ))
        try OpenAPI.expectDocumented(method: method, path: String(parts[0]), status: response.status, sourceLocation: sourceLocation)
        let json = response.contentType == "application/json" ? try JSONSerialization.jsonObject(with: Data(response.body)) : nil
        return (response.status, json)
    }

    var sent: [APNSHTTPRequest] { self.pushes.withLock { $0 } }
}

/// The OpenAPI document, read once.
private enum OpenAPI {
    static var document: [String: Any] { try! JSONSerialization.jsonObject(with: Data(GatewayOpenAPI.document.utf8)) as! [String: Any] }

    /// The document's path template for `path` (`/v1/activities/{id}/start`, `/v1/groups/{group}`), if one matches.
    static func template(_ path: String) -> String? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let paths = (Self.document["paths"] as? [String: Any] ?? [:]).keys
        return paths.first { template in
            let parts = template.split(separator: "/", omittingEmptySubsequences: false)
            return parts.count == segments.count && zip(parts, segments).allSatisfy { $0.hasPrefix("{") ? !$1.isEmpty : $0 == $1 }
        }
    }

    /// A status the document lists for the route (404 and 405 are for paths and methods it has not).
    static func expectDocumented(method: String, path: String, status: Int, sourceLocation: SourceLocation) throws {
        guard let template = Self.template(path) else {
            #expect(status == 404 || status == 401, "\(path) is not in the document", sourceLocation: sourceLocation)
            return
        }
        let paths = Self.document["paths"] as? [String: Any]
        guard let operation = (paths?[template] as? [String: Any])?[method.lowercased()] as? [String: Any] else {
            #expect(status == 405 || status == 401, "\(method) \(template) is not in the document", sourceLocation: sourceLocation)
            return
        }
        let responses = operation["responses"] as? [String: Any] ?? [:]
        #expect(responses[String(status)] != nil, "\(method) \(template) answered \(status), not in the document", sourceLocation: sourceLocation)
    }
}

/// Whether two JSON values are the same (compared as their text, keys sorted).
private func same(_ json: Any?, _ expected: Any) -> Bool {
    guard let json, let text = try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]) else { return false }
    return text == (try? JSONSerialization.data(withJSONObject: expected, options: [.sortedKeys]))
}

private func error(_ json: Any?) -> [String: Any] {
    (json as? [String: Any])?["error"] as? [String: Any] ?? [:]
}

private var report: [String: Any] { [
    "kind": "push_to_start_token", "installation": "i-1", "bundle_id": shopBundle, "attributes_type": "OrderAttributes",
    "token": pushToStart, "environment": "sandbox",
] }

private var start: [String: Any] { [
    "installation": "i-1", "bundle_id": shopBundle, "attributes_type": "OrderAttributes", "attributes": ["order": "17"],
    "content_state": ["status": "packing"], "alert": ["title": "Order 17", "body": "Packing"],
] }

@Suite("ForgeLiveActivitiesGateway: every route and refusal, in-process")
struct LiveActivityGatewayTests {
    @Test("report, start (again: not twice), update held, the token report sends it, update routine and alerting, show, list, end; then 409")
    func lifecycle() async throws {
        let fixture = try Fixture()
        let reported = try await fixture.call("POST", "/v1/reports", report)
        #expect(reported.status == 200 && (reported.json as? [String: Any])?["applied"] as? Bool == true)

        let started = try await fixture.call("POST", "/v1/activities/order-17/start", start)
        #expect(started.status == 202)
        #expect(started.json as? [String: String] == ["id": "order-17", "state": "starting"])
        let again = try await fixture.call("POST", "/v1/activities/order-17/start", start)
        #expect(again.status == 202 && fixture.sent.count == 1, "a running id is not started twice")
        #expect(try #require(fixture.sent.first).headers.first { $0.name == "apns-collapse-id" }?.value == "order-17")

        let held = try await fixture.call("POST", "/v1/activities/order-17/update", ["content_state": ["status": "packed"]])
        #expect(held.status == 202 && (held.json as? [String: Any])?["state"] as? String == "starting" && fixture.sent.count == 1)
        #expect(try await fixture.deliver().sent == 0 && fixture.sent.count == 1, "an update waits for the update token")
        let token = try await fixture.call("POST", "/v1/reports", ["kind": "update_token", "activity": "order-17", "token": updateToken, "sequence": 2])
        #expect(token.status == 200)
        #expect(try await fixture.deliver().sent == 1 && fixture.sent.count == 2, "the waiting update goes once the token is in")

        let routine = try await fixture.call("POST", "/v1/activities/order-17/update", ["content_state": ["status": "shipped"]])
        #expect(routine.status == 202 && (routine.json as? [String: Any])?["state"] as? String == "active")
        try await fixture.deliver()
        let alerting = try await fixture.call("POST", "/v1/activities/order-17/update", ["content_state": ["status": "near"], "importance": "alerting"])
        #expect(alerting.status == 202)
        try await fixture.deliver()
        let priorities = fixture.sent.suffix(2).map { request in request.headers.first { $0.name == "apns-priority" }?.value }
        #expect(priorities == ["5", "10"], "routine: 5; alerting: 10")
        // Two at once: the newer replaces the waiting one, and only it is sent.
        _ = try await fixture.call("POST", "/v1/activities/order-17/update", ["content_state": ["status": "a"]])
        _ = try await fixture.call("POST", "/v1/activities/order-17/update", ["content_state": ["status": "b"]])
        #expect(try await fixture.deliver().sent == 1 && fixture.sent.count == 5)

        let shown = try #require(try await fixture.call("GET", "/v1/activities/order-17").json as? [String: Any])
        #expect(Set(shown.keys) == ["id", "state", "bundle_id", "attributes_type", "installation", "update_token", "started_at", "why",
                                    "group", "channel_id", "renewals", "held", "requested", "sent", "superseded", "downgraded", "failed", "waiting", "in_flight",
                                    "may_have_been_delivered_twice", "content_state", "history"])
        #expect(shown["update_token"] as? String == updateToken && shown["installation"] as? String == "i-1")
        #expect(shown["group"] is NSNull && shown["channel_id"] is NSNull, "started in no group")
        #expect(shown["requested"] as? Int == 5 && shown["sent"] as? Int == 4 && shown["superseded"] as? Int == 1 && shown["waiting"] is NSNull)
        #expect((shown["history"] as? [[String: Any]])?.map { $0["event"] as? String } == ["start_sent", "update_token"])
        let listed = try #require(try await fixture.call("GET", "/v1/activities?state=active").json as? [[String: Any]])
        #expect(listed.map { $0["id"] as? String } == ["order-17"] && listed.first?.count == 10)
        #expect((try await fixture.call("GET", "/v1/activities?state=ended").json as? [Any])?.isEmpty == true)

        let ended = try await fixture.call("POST", "/v1/activities/order-17/end", ["content_state": ["status": "delivered"], "dismissal_date": 0])
        #expect(ended.status == 202 && (ended.json as? [String: Any])?["state"] as? String == "ending")
        let ending = try await fixture.call("POST", "/v1/activities/order-17/update", ["content_state": ["status": "late"]])
        #expect(ending.status == 409 && error(ending.json)["state"] as? String == "ending", "an end is waiting: no more updates")
        #expect(try await fixture.deliver().sent == 1)
        let last = try #require(fixture.sent.last)
        let end = try #require(try JSONSerialization.jsonObject(with: Data(last.body)) as? [String: Any])
        #expect((end["aps"] as? [String: Any])?["dismissal-date"] as? Int == 0)

        let count = fixture.sent.count
        for route in ["update", "end"] {
            let refused = try await fixture.call("POST", "/v1/activities/order-17/\(route)", ["content_state": ["status": "again"]])
            #expect(refused.status == 409)
            #expect(error(refused.json)["code"] as? String == "not_live" && error(refused.json)["state"] as? String == "ended")
            #expect(error(refused.json)["why"] as? String == "ended by the backend")
        }
        let restart = try await fixture.call("POST", "/v1/activities/order-17/start", start)
        #expect(restart.status == 409 && error(restart.json)["state"] as? String == "ended")
        #expect(fixture.sent.count == count, "nothing sent to an ended activity")
    }

    @Test("A group: members on a channel and by token; one broadcast and one push per update and end; the group, the list filter, 404 and 400")
    func group() async throws {
        let fixture = try Fixture()
        // i-1's app cannot listen to channels; i-2's and i-3's can.
        for (installation, channels) in [("i-1", nil), ("i-2", true), ("i-3", true)] as [(String, Bool?)] {
            var body = report
            body["installation"] = installation
            if let channels { body["channels"] = channels }
            let answer = try await fixture.call("POST", "/v1/reports", body)
            #expect(answer.status == 200 && (answer.json as? [String: Any])?["applied"] as? Bool == true, "\(String(describing: answer.json))")
        }
        for (index, installation) in ["i-1", "i-2", "i-3"].enumerated() {
            var body = start
            body["installation"] = installation
            body["group"] = "match-1"
            let answer = try await fixture.call("POST", "/v1/activities/fan-\(index + 1)/start", body)
            #expect(answer.status == 202, "\(String(describing: answer.json))")
            #expect((answer.json as? [String: Any])?["state"] as? String == (installation == "i-1" ? "starting" : "active"), "on a channel: active once started")
        }
        // One channel made for the group (listed first), and three starts.
        let channelID = try #require(fixture.channels.withLock { $0 }.first)
        #expect(fixture.channels.withLock { $0.count } == 1)
        #expect(fixture.sent.map { "\($0.method) \($0.path)" }.filter { $0.contains("/1/apps/") }
                == ["GET /1/apps/\(shopBundle)/all-channels", "POST /1/apps/\(shopBundle)/channels"])
        let starts = fixture.sent.filter { $0.path.hasPrefix("/3/device/") }
        #expect(starts.count == 3)
        let inputChannels = try starts.map { request in
            ((try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])?["aps"] as? [String: Any])?["input-push-channel"] as? String
        }
        #expect(inputChannels == [nil, channelID, channelID], "the members of channel-capable installs start on the group's channel")
        let token = try await fixture.call("POST", "/v1/reports", ["kind": "update_token", "activity": "fan-1", "token": updateToken, "sequence": 2])
        #expect(token.status == 200)
        // An activity of no group, to be left out of the group's list.
        let other = try await fixture.call(
            "POST", "/v1/reports", ["kind": "update_token", "activity": "order-5", "token": deadToken, "bundle_id": shopBundle, "attributes_type": "OrderAttributes"]
        )
        #expect(other.status == 200)

        let shown = try #require(try await fixture.call("GET", "/v1/activities/fan-2").json as? [String: Any])
        #expect(shown["group"] as? String == "match-1" && shown["channel_id"] as? String == channelID)
        let listed = try #require(try await fixture.call("GET", "/v1/activities?group=match-1").json as? [[String: Any]])
        #expect(listed.map { $0["id"] as? String } == ["fan-1", "fan-2", "fan-3"])
        #expect(listed.map { $0["channel_id"] as? String } == [nil, channelID, channelID] && listed.allSatisfy { $0["group"] as? String == "match-1" })
        let activeInGroup = try #require(try await fixture.call("GET", "/v1/activities?state=active&group=match-1").json as? [[String: Any]])
        #expect(activeInGroup.map { $0["id"] as? String } == ["fan-1", "fan-2", "fan-3"])
        #expect((try await fixture.call("GET", "/v1/activities?group=match-1&state=ended").json as? [Any])?.isEmpty == true)
        #expect((try await fixture.call("GET", "/v1/activities?group=match%202").json as? [Any])?.isEmpty == true)
        #expect((try await fixture.call("GET", "/v1/activities").json as? [Any])?.count == 4)

        // An update of the group: one broadcast for the two on the channel, one push for fan-1.
        let sentBefore = fixture.sent.count
        let updated = try await fixture.call("POST", "/v1/groups/match-1/update", ["content_state": ["home": 1], "importance": "alerting"])
        #expect(updated.status == 202)
        #expect(same(updated.json, [
            "id": "match-1", "state": "accepted", "members": 1, "channels": 1, "on_channels": 2, "superseded": 0, "skipped": 0,
        ] as [String: Any]))
        // A newer one before the delivery loop ran replaces it, on the channel and for fan-1.
        let newer = try await fixture.call("POST", "/v1/groups/match-1/update", ["content_state": ["home": 2]])
        #expect((newer.json as? [String: Any])?["superseded"] as? Int == 2)
        let waiting = try #require(try await fixture.call("GET", "/v1/groups/match-1").json as? [String: Any])
        #expect((waiting["channels"] as? [[String: Any]])?.first?["waiting"] as? Bool == true)
        let delivered = try await fixture.deliver()
        #expect(delivered.sent == 1 && delivered.broadcasts == 1, "\(delivered)")
        let out = fixture.sent.dropFirst(sentBefore)
        #expect(out.map(\.path).sorted() == ["/3/device/\(updateToken)", "/4/broadcasts/apps/\(shopBundle)"])
        let broadcast = try #require(out.first { $0.path.hasPrefix("/4/") })
        #expect(broadcast.headers.first { $0.name == "apns-channel-id" }?.value == channelID)
        let broadcastBody = try #require(try JSONSerialization.jsonObject(with: Data(broadcast.body)) as? [String: Any])
        #expect((broadcastBody["aps"] as? [String: Any])?["content-state"] as? [String: Int] == ["home": 2], "the latest state only")

        let group = try #require(try await fixture.call("GET", "/v1/groups/match-1").json as? [String: Any])
        #expect(group["id"] as? String == "match-1")
        #expect(same(group["members"], [
            "total": 3, "by_state": ["starting": 0, "active": 3, "stale": 0, "ending": 0, "ended": 0, "dead": 0] as [String: Int],
        ] as [String: Any]))
        let channel = try #require((group["channels"] as? [[String: Any]])?.first)
        #expect((group["channels"] as? [Any])?.count == 1)
        #expect(channel["bundle_id"] as? String == shopBundle && channel["channel_id"] as? String == channelID && channel["phase"] as? String == "open")
        #expect(channel["requested"] as? Int == 2 && channel["sent"] as? Int == 1 && channel["superseded"] as? Int == 1)
        #expect(channel["failed"] as? Int == 0 && channel["throttled"] as? Int == 0)
        #expect(channel["waiting"] as? Bool == false && channel["in_flight"] as? Bool == false && channel["backoff_until"] is NSNull)
        let member = try #require(try await fixture.call("GET", "/v1/activities/fan-1").json as? [String: Any])
        #expect(member["content_state"] as? [String: Int] == ["home": 2] && member["sent"] as? Int == 1 && member["superseded"] as? Int == 1)

        // Bad input changes nothing.
        for body in [#"{"content_state": {"home": 3}, "colour": "red"}"#, #"{"content_state": {"home": 3}, "importance": "urgent"}"#] {
            let refused = try await fixture.call("POST", "/v1/groups/match-1/update", raw: body)
            #expect(refused.status == 400)
        }
        #expect(same(try await fixture.call("GET", "/v1/groups/match-1").json, group), "nothing stored")

        // The end: one end broadcast (then the channel is deleted and its members ended), one end push.
        let ended = try await fixture.call("POST", "/v1/groups/match-1/end", ["content_state": ["home": 3], "dismissal_date": 0])
        #expect(same(ended.json, [
            "id": "match-1", "state": "accepted", "members": 1, "channels": 1, "on_channels": 2, "superseded": 0, "skipped": 0,
        ] as [String: Any]))
        let endsBefore = fixture.sent.count
        let endDelivered = try await fixture.deliver()
        #expect(endDelivered.sent == 1 && endDelivered.broadcasts == 1, "\(endDelivered)")
        let ends = fixture.sent.dropFirst(endsBefore)
        #expect(try ends.map { request in
            ((try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])?["aps"] as? [String: Any])?["event"] as? String
        } == ["end", "end"])
        try await fixture.deliver()
        #expect(fixture.sent.last?.method == "DELETE" && fixture.channels.withLock { $0.isEmpty }, "the channel deleted after the end went")
        let closed = try #require(try await fixture.call("GET", "/v1/groups/match-1").json as? [String: Any])
        #expect((closed["members"] as? [String: Any])?["by_state"] as? [String: Int] == [
            "starting": 0, "active": 0, "stale": 0, "ending": 0, "ended": 3, "dead": 0,
        ])
        #expect((closed["channels"] as? [[String: Any]])?.first?["phase"] as? String == "deleted")
        let again = try await fixture.call("POST", "/v1/groups/match-1/update", ["content_state": ["home": 4]])
        #expect(same(again.json, [
            "id": "match-1", "state": "accepted", "members": 0, "channels": 0, "on_channels": 0, "superseded": 0, "skipped": 3,
        ] as [String: Any]), "an ended group's members are skipped")
        var late = start
        late["group"] = "match-1"
        late["installation"] = "i-3"
        let lateStart = try await fixture.call("POST", "/v1/activities/fan-4/start", late)
        #expect(lateStart.status == 409 && error(lateStart.json)["field"] as? String == "group", "no start on the channel of an ended group")
    }

    @Test("410 from APNs for a requested update: the activity dead, counted as failed; then 409 with state dead and why")
    func deadUpdateToken() async throws {
        let fixture = try Fixture()
        let registered = try await fixture.call(
            "POST", "/v1/reports", raw: #"{"kind": "update_token", "activity": "match-1", "token": "\#(deadToken)", "bundle_id": "\#(shopBundle)", "attributes_type": "ScoreAttributes"}"#
        )
        #expect(registered.status == 200)
        let taken = try await fixture.call("POST", "/v1/activities/match-1/update", raw: #"{"content_state": {"home": 1}}"#)
        #expect(taken.status == 202)
        #expect(try await fixture.deliver().failed == 1)
        let shown = try #require(try await fixture.call("GET", "/v1/activities/match-1").json as? [String: Any])
        #expect(shown["state"] as? String == "dead" && shown["failed"] as? Int == 1)
        let next = try await fixture.call("POST", "/v1/activities/match-1/end", raw: "{}")
        #expect(next.status == 409 && error(next.json)["state"] as? String == "dead")
        #expect(error(next.json)["why"] as? String == "APNs answered Unregistered for its update token")
    }

    @Test("Bad input: 400 naming the field, nothing stored or sent", arguments: [
        ("/v1/activities/order-1/start", #"{"installation": "i-1"}"#, "bundle_id"),
        ("/v1/activities/order-1/start", #"{"installation": "i-1", "bundle_id": "com.example.shop", "attributes_type": "A", "attributes": {}, "content_state": [1], "alert": {"title": "t"}}"#, "content_state"),
        ("/v1/activities/order-1/start", #"{"installation": "i-1", "bundle_id": "com.example.shop", "attributes_type": "A", "attributes": {}, "content_state": {}, "alert": {"title": 3}}"#, "alert.title"),
        ("/v1/activities/order-1/start", #"{"installation": "i-1", "bundle_id": "com.example.shop", "attributes_type": "A", "attributes": {}, "content_state": {}, "alert": {"title": "t", "sound": "x"}}"#, "alert.sound"),
        ("/v1/activities/order-1/start", #"{"installation": "", "bundle_id": "com.example.shop", "attributes_type": "A", "attributes": {}, "content_state": {}, "alert": {"title": "t"}}"#, "installation"),
        ("/v1/activities/order-1/start", #"{"installation": "i-1", "bundle_id": "bad bundle", "attributes_type": "A", "attributes": {}, "content_state": {}, "alert": {"title": "t"}}"#, "bundle_id"),
        ("/v1/activities/order-1/update", #"{"content_state": {}, "group": "match-1"}"#, "group"),
        ("/v1/activities/order-2/start", #"{"installation": "i-1", "bundle_id": "com.example.shop", "attributes_type": "A", "attributes": {}, "content_state": {}, "alert": {"title": "t"}, "group": 3}"#, "group"),
        ("/v1/activities/order-2/start", #"{"installation": "i-1", "bundle_id": "com.example.shop", "attributes_type": "A", "attributes": {}, "content_state": {}, "alert": {"title": "t"}, "group": ""}"#, "group"),
        ("/v1/activities/order-2/start", #"{"installation": "i-1", "bundle_id": "com.example.shop", "attributes_type": "A", "attributes": {}, "content_state": {}, "alert": {"title": "t"}, "group": "\#(String(repeating: "g", count: 65))"}"#, "group"),
        ("/v1/groups/match-1/update", #"{"content_state": {}, "colour": "red"}"#, "colour"),
        ("/v1/groups/match-1/update", #"{"importance": "routine"}"#, "content_state"),
        ("/v1/groups/match-1/update", #"{"content_state": [1]}"#, "content_state"),
        ("/v1/groups/match-1/update", #"{"content_state": {}, "importance": "urgent"}"#, "importance"),
        ("/v1/groups/match-1/end", #"{"dismissal_date": "2026-11-29T10:00:00Z"}"#, "dismissal_date"),
        ("/v1/groups/match-1/end", #"{"content_state": {}, "stale_date": 0}"#, "stale_date"),
        ("/v1/groups/match-1/end", #"{"content_state": {"#, "body"),
        ("/v1/groups/\(String(repeating: "g", count: 65))/update", #"{"content_state": {}}"#, "group"),
        ("/v1/groups/bad%07group/end", #"{}"#, "group"),
        ("/v1/activities/order-1/update", #"{"content_state": "shipped"}"#, "content_state"),
        ("/v1/activities/order-1/update", #"{"content_state": {}, "importance": "urgent"}"#, "importance"),
        ("/v1/activities/order-1/update", #"{"content_state": {}, "importance": 10}"#, "importance"),
        ("/v1/activities/order-1/update", #"["content_state"]"#, "body"),
        ("/v1/activities/order-1/update", #"{"content_state": {"#, "body"),
        ("/v1/activities/order-1/end", #"{"dismissal_date": "2026-11-29T10:00:00Z"}"#, "dismissal_date"),
        ("/v1/activities/order-1/end", #"{"dismissal_date": -1}"#, "dismissal_date"),
        ("/v1/activities/\(String(repeating: "a", count: 65))/update", #"{"content_state": {}}"#, "id"),
        ("/v1/activities/bad%07id/update", #"{"content_state": {}}"#, "id"),
        ("/v1/activities/bad%ZZ/update", #"{"content_state": {}}"#, "id"),
        ("/v1/reports", #"{"kind": "update_token", "activity": "a", "token": "xyz"}"#, "token"),
        ("/v1/reports", #"{"kind": "update_token", "activity": "a", "token": "ab", "colour": "red"}"#, "colour"),
        ("/v1/reports", #"{"kind": "push_to_start_token", "installation": "i-2", "bundle_id": "com.example.shop", "attributes_type": "A", "token": "5a5a", "channels": "yes"}"#, "channels"),
    ])
    func badInput(_ path: String, _ body: String, _ field: String) async throws {
        let fixture = try Fixture()
        _ = try await fixture.call("POST", "/v1/reports", report)
        _ = try await fixture.call("POST", "/v1/activities/order-1/start", start)
        let before = try #require(try await fixture.manager.activity(LiveActivityID("order-1")))
        let answer = try await fixture.call("POST", path, raw: body)
        #expect(answer.status == 400, "\(String(describing: answer.json))")
        let failure = path == "/v1/reports" ? ((answer.json as? [String: Any])?["error"] as? [String: Any] ?? [:]) : error(answer.json)
        #expect(failure["field"] as? String == field, "\(failure)")
        #expect(try await fixture.manager.activity(LiveActivityID("order-1")) == before && fixture.sent.count == 1, "nothing changed")
    }

    @Test("404 for an unknown activity (named) and an unknown path; 405 with Allow; bad query parameters are 400 naming them")
    func unknown() async throws {
        let fixture = try Fixture()
        for (method, path) in [("GET", "/v1/activities/order-9"), ("POST", "/v1/activities/order-9/update"), ("POST", "/v1/activities/order-9/end")] {
            let answer = try await fixture.call(method, path, ["content_state": ["status": "x"]])
            #expect(answer.status == 404 && error(answer.json)["field"] as? String == "id", "\(path)")
            #expect((error(answer.json)["rule"] as? String)?.contains("order-9") == true)
        }
        let path = try await fixture.call("GET", "/v2/nothing")
        #expect(path.status == 404 && error(path.json)["code"] as? String == "not_found")
        let method = await fixture.gateway.respond(to: .init(method: "DELETE", path: "/v1/activities/order-9"))
        #expect(method.status == 405 && method.headers.contains { $0.name == "Allow" && $0.value == "GET" })
        let noStart = try await fixture.call("POST", "/v1/activities/order-9/start", start)
        #expect(noStart.status == 409 && error(noStart.json)["code"] as? String == "no_push_to_start_token")
        for (query, field) in [("state=running", "state"), ("group=", "group"), ("group=\(String(repeating: "g", count: 65))", "group"), ("limit=3", "limit")] {
            let answer = try await fixture.call("GET", "/v1/activities?\(query)")
            #expect(answer.status == 400 && error(answer.json)["field"] as? String == field, "\(query)")
        }
        let stray = try await fixture.call("GET", "/v1/activities/order-9?verbose=1")
        #expect(stray.status == 400 && error(stray.json)["field"] as? String == "verbose")
        let strayGroup = try await fixture.call("GET", "/v1/groups/match-9?verbose=1")
        #expect(strayGroup.status == 400 && error(strayGroup.json)["field"] as? String == "verbose")
        for (method, path) in [("GET", "/v1/groups/match-9"), ("POST", "/v1/groups/match-9/update"), ("POST", "/v1/groups/match-9/end")] {
            let answer = try await fixture.call(method, path, ["content_state": ["home": 1]])
            #expect(answer.status == 404 && error(answer.json)["code"] as? String == "unknown_activity", "\(path)")
            #expect(error(answer.json)["field"] as? String == "group" && (error(answer.json)["rule"] as? String)?.contains("match-9") == true)
        }
        #expect(try await fixture.call("GET", "/v1/activities?group=match-9").json as? [Any] != nil)
        #expect(fixture.sent.isEmpty)
    }

    @Test("The API key: 401 without it or with a wrong one, the same body; /readyz needs none; constant-time compare")
    func apiKey() async throws {
        let fixture = try Fixture(apiKey: "s3cret-key")
        let missing = try await fixture.call("GET", "/v1/activities")
        let wrong = try await fixture.call("GET", "/v1/activities", key: "s3cret-kez")
        let short = try await fixture.call("POST", "/v1/reports", report, key: "s3cret")
        let unknownPath = try await fixture.call("GET", "/v2/nothing")
        for answer in [missing, wrong, short, unknownPath] {
            #expect(answer.status == 401)
            #expect(error(answer.json) as? [String: String] == error(missing.json) as? [String: String], "one body for every failure")
        }
        let raw = await fixture.gateway.respond(to: .init(method: "GET", path: "/v1/activities", authorization: "Basic czNjcmV0LWtleQ=="))
        #expect(raw.status == 401 && raw.headers.contains { $0.name == "WWW-Authenticate" })
        #expect(!String(decoding: raw.body, as: UTF8.self).contains("s3cret"))
        #expect(try await fixture.call("GET", "/v1/activities", key: "s3cret-key").status == 200)
        #expect(try await fixture.call("GET", "/readyz").status == 200)
        #expect(try await fixture.call("GET", "/v1/openapi.json").status == 401)
        #expect(!"\(fixture.gateway.configuration)".contains("s3cret"))
        var dumped = ""
        dump(fixture.gateway.configuration, to: &dumped)
        #expect(!dumped.contains("s3cret") && dumped.contains("<redacted>"), "\(dumped)")
        #expect(LiveActivityGateway.constantTimeEqual(Array("abc".utf8), Array("abc".utf8)))
        #expect(!LiveActivityGateway.constantTimeEqual(Array("abcd".utf8), Array("abc".utf8)))
        #expect(!LiveActivityGateway.constantTimeEqual([], Array("abc".utf8)))
    }

    @Test("A body over the limit: 413 and nothing stored")
    func bodyLimit() async throws {
        let fixture = try Fixture(maximumBodySize: 256)
        var big = report
        big["installation"] = String(repeating: "i", count: 300)
        let answer = try await fixture.call("POST", "/v1/reports", big)
        #expect(answer.status == 413 && error(answer.json)["code"] as? String == "body_too_large" && error(answer.json)["field"] as? String == "body")
        #expect(try await fixture.manager.activities().isEmpty)
    }

    @Test("GET /metrics counts requests by route and status and sets the activities by state; /readyz; the OpenAPI document covers every route")
    func metricsAndDocument() async throws {
        let fixture = try Fixture()
        _ = try await fixture.call("POST", "/v1/reports", report)
        _ = try await fixture.call("POST", "/v1/activities/order-1/start", start)
        _ = try await fixture.call("POST", "/v1/activities/order-2/update", ["content_state": [:] as [String: Any]])
        let scrape = await fixture.gateway.respond(to: .init(method: "GET", path: "/metrics"))
        #expect(scrape.status == 200 && scrape.contentType.hasPrefix("text/plain"))
        let started = try fixture.metrics.expectCounter("forge_gateway_requests_total", [("route", "/v1/activities/{id}/start"), ("status", "202")])
        #expect(started.totalValue == 1)
        let unknown = try fixture.metrics.expectCounter("forge_gateway_requests_total", [("route", "/v1/activities/{id}/update"), ("status", "404")])
        #expect(unknown.totalValue == 1)
        let starting = try fixture.metrics.expectGauge("forge_gateway_activities", [("state", "starting")])
        #expect(starting.lastValue == 1)
        #expect(try fixture.metrics.expectGauge("forge_gateway_activities", [("state", "ended")]).lastValue == 0)
        let ready = try await fixture.call("GET", "/readyz")
        #expect(ready.status == 200 && (ready.json as? [String: Bool]) == ["ready": true])
        let document = try await fixture.call("GET", "/v1/openapi.json")
        #expect((document.json as? [String: Any])?["openapi"] as? String == "3.0.3")
        for route in LiveActivityGateway.routes {
            let template = "/" + route.pattern.joined(separator: "/")
            #expect(((OpenAPI.document["paths"] as? [String: Any])?[template] as? [String: Any])?[route.method.lowercased()] != nil, "\(template)")
        }
    }
}

/// A store that is down: every call throws.
private struct DownStore: LiveActivityStore {
    struct Down: Error {}
    func activity(_ id: LiveActivityID) async throws -> ManagedActivity? { throw Down() }
    func save(_ activity: ManagedActivity, replacing expected: Int?) async throws -> Bool { throw Down() }
    func removeActivity(_ id: LiveActivityID) async throws { throw Down() }
    func activities() async throws -> [ManagedActivity] { throw Down() }
    func pushToStart(_ key: PushToStartKey) async throws -> PushToStartRecord? { throw Down() }
    func save(_ record: PushToStartRecord, replacing expected: Int?) async throws -> Bool { throw Down() }
}

@Suite("ForgeLiveActivitiesGateway when the store is down")
struct LiveActivityGatewayStoreDownTests {
    @Test("503 naming the store from every route that reads it, the report route too; /readyz 503")
    func storeDown() async throws {
        let fixture = try Fixture(store: DownStore())
        for (method, path, body) in [
            ("GET", "/readyz", nil), ("GET", "/v1/activities", nil), ("GET", "/v1/activities/order-1", nil), ("GET", "/metrics", nil),
            ("POST", "/v1/activities/order-1/start", start), ("POST", "/v1/activities/order-1/update", ["content_state": ["a": 1]]),
            ("POST", "/v1/activities/order-1/end", ["content_state": ["a": 1]]),
            ("GET", "/v1/groups/match-1", nil), ("GET", "/v1/activities?group=match-1", nil),
            ("POST", "/v1/groups/match-1/update", ["content_state": ["a": 1]]), ("POST", "/v1/groups/match-1/end", ["content_state": ["a": 1]]),
        ] as [(String, String, [String: Any]?)] {
            let answer = try await fixture.call(method, path, body)
            #expect(answer.status == 503 && error(answer.json)["code"] as? String == "store", "\(method) \(path): \(String(describing: answer.json))")
        }
        let report = try await fixture.call("POST", "/v1/reports", report)
        #expect(report.status == 503 && (report.json as? [String: Any])?["applied"] as? Bool == false)
    }
}

@Suite("ForgeLiveActivitiesGateway on Hummingbird: the application on a loopback port, and routes mounted on a router of one's own")
struct LiveActivityGatewayHTTPTests {
    @Test("The application on a real port: a report, a start, an unknown path, a body over the limit", arguments: [TestingSetup.live, .router])
    func application(_ setup: TestingSetup) async throws {
        let fixture = try Fixture(apiKey: "k", maximumBodySize: 1024)
        let application = fixture.gateway.makeApplication()
        try await withAPNSClient(fixture.client) { _ in
            try await application.test(setup) { client in
                let auth: HTTPFields = [.authorization: "Bearer k"]
                let reported = try await client.execute(uri: "/v1/reports", method: .post, headers: auth, body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: report)))
                #expect(reported.status == .ok && reported.headers[.contentType] == "application/json")
                let started = try await client.execute(
                    uri: "/v1/activities/order-1/start", method: .post, headers: auth, body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: start))
                )
                #expect(started.status == .accepted)
                let unauthorized = try await client.execute(uri: "/v1/activities/order-1", method: .get)
                #expect(unauthorized.status == .unauthorized && unauthorized.headers[.wwwAuthenticate] == "Bearer")
                let nothing = try await client.execute(uri: "/nothing", method: .get, headers: auth)
                #expect(nothing.status == .notFound && nothing.headers[.contentType] == "application/json")
                let big = try await client.execute(uri: "/v1/reports", method: .post, headers: auth, body: ByteBuffer(bytes: [UInt8](repeating: 0x20, count: 100_000)))
                #expect(big.status == .contentTooLarge)
                let ready = try await client.execute(uri: "/readyz", method: .get)
                #expect(ready.status == .ok)
            }
        }
    }

    @Test("addRoutes(to:) mounts the routes beside one's own")
    func mounted() async throws {
        let fixture = try Fixture()
        let router = Router()
        router.get("/hello") { _, _ in "hello" }
        fixture.gateway.addRoutes(to: router)
        try await withAPNSClient(fixture.client) { _ in
            try await Application(router: router).test(.router) { client in
                #expect(try await client.execute(uri: "/hello", method: .get).status == .ok)
                let listed = try await client.execute(uri: "/v1/activities", method: .get)
                #expect(listed.status == .ok && String(buffer: listed.body) == "[]")
                let unknown = try await client.execute(uri: "/v1/activities/order-9", method: .get)
                #expect(unknown.status == .notFound)
            }
        }
    }
}
