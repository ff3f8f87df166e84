import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeCrypto
import ForgeLiveActivities
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
import Testing

private let bundle = "com.example.shop"
private let bundleID = try! APNSBundleID(bundle)
private let deviceToken = String(repeating: "ab", count: 32)
private let pushToStart = String(repeating: "5a", count: 32)
private let installation = try! InstallationID("install-1")
private let signingKey = try! APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))

struct OrderAttributes: Codable, Sendable { var order: String }
struct OrderState: Codable, Sendable, Equatable { var status: String; var eta: Int }

/// A manager whose client answers in-process with `handler`, each request recorded (also the
/// store conformance suite's race).
final class InProcess: Sendable {
    let requests = LockedBox<[APNSHTTPRequest]>([])
    let clock = ManualWallClock()
    let store = InMemoryLiveActivityStore()
    let client: APNSClient

    init(_ handler: @escaping @Sendable (APNSHTTPRequest) -> APNSTransportResponse = { _ in APNSTransportResponse(status: 200) }) throws {
        let requests = self.requests
        let configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1")),
            environment: .sandbox, retry: APNSClient.RetryPolicy(attempts: 1)
        )
        self.client = try APNSClient(configuration: configuration, transport: APNSInProcessTransport { request in
            requests.withLock { $0.append(request) }
            return handler(request)
        })
    }

    func manager(store: (any LiveActivityStore)? = nil) -> LiveActivityManager {
        LiveActivityManager(client: self.client, store: store ?? self.store, clock: self.clock)
    }

    var sent: [APNSHTTPRequest] { self.requests.withLock { $0 } }
}

private func json(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

private func aps(_ request: APNSHTTPRequest) throws -> [String: Any] {
    try #require(try json(request.body)["aps"] as? [String: Any])
}

private func header(_ request: APNSHTTPRequest, _ name: String) -> String? {
    request.headers.first { $0.name == name }?.value
}

private func reportPushToStart(_ manager: LiveActivityManager, token: String = pushToStart, sequence: Int64? = nil) async throws {
    try await manager.report(.pushToStartToken(
        PushToStartKey(installation: installation, bundleID: bundleID, attributesType: "OrderAttributes"), token: try DeviceToken(token),
        sequence: sequence, environment: .sandbox
    ))
}

@Suite("Managed Live Activities: reports, validated and applied in order")
struct ActivityReportTests {
    @Test("Malformed reports are refused naming the field, with 400, and change nothing")
    func badReports() async throws {
        let fixture = try InProcess()
        let manager = fixture.manager()
        let cases: [(String, String)] = [
            (#"{"kind":"push_to_start_token","installation":"i","bundle_id":"com.example.shop","attributes_type":"T","token":"xyz"}"#, "token"),
            (#"{"kind":"push_to_start_token","installation":"i","bundle_id":"","attributes_type":"T","token":"\#(pushToStart)"}"#, "bundle_id"),
            (#"{"kind":"push_to_start_token","installation":"i","bundle_id":"com.example.shop","attributes_type":"","token":"\#(pushToStart)"}"#, "attributes_type"),
            (#"{"kind":"update_token","activity":"\#(String(repeating: "a", count: 65))","token":"\#(deviceToken)"}"#, "activity"),
            (#"{"kind":"update_token","activity":"order\u0007","token":"\#(deviceToken)"}"#, "activity"),
            (#"{"kind":"ended","activity":"order-17","sequence":-1}"#, "sequence"),
            (#"{"kind":"update_token","activity":"order-17"}"#, "token"),
            (#"{"kind":"renamed","activity":"order-17"}"#, "kind"),
            (#"{"activity":"order-17"}"#, "kind"),
            (#"{"kind":"push_to_start_token","installation":"i","bundle_id":"com.example.shop","attributes_type":"T","token":"\#(pushToStart)","environment":"staging"}"#, "environment"),
            ("not json", "body"),
        ]
        for (body, field) in cases {
            let answer = await manager.handleReport(body: Array(body.utf8))
            let error = try #require(try json(answer.body)["error"] as? [String: Any], "\(body)")
            #expect(answer.status == 400 && error["field"] as? String == field, "\(body): \(answer.status) \(error)")
            #expect((error["rule"] as? String)?.isEmpty == false)
        }
        #expect(try await manager.activities().isEmpty && fixture.sent.isEmpty)
        let unknown = await manager.handleReport(body: Array(#"{"kind":"ended","activity":"order-17"}"#.utf8))
        #expect(unknown.status == 404)
        // A sequence that goes backwards: 400 naming it, and the registry as it was.
        let report = #"{"kind":"push_to_start_token","installation":"i","bundle_id":"com.example.shop","attributes_type":"T","token":"\#(pushToStart)","sequence":SEQ}"#
        #expect(await manager.handleReport(body: Array(report.replacingOccurrences(of: "SEQ", with: "7").utf8)).status == 200)
        let before = try await manager.pushToStartToken(for: PushToStartKey(installation: try InstallationID("i"), bundleID: bundleID, attributesType: "T"))
        let backwards = await manager.handleReport(body: Array(report.replacingOccurrences(of: "SEQ", with: "6").utf8))
        let error = try #require(try json(backwards.body)["error"] as? [String: Any])
        #expect(backwards.status == 400 && error["field"] as? String == "sequence" && error["code"] as? String == "invalid_input")
        #expect(try await manager.pushToStartToken(for: PushToStartKey(installation: try InstallationID("i"), bundleID: bundleID, attributesType: "T")) == before)
    }

    @Test("A report older than one applied is refused naming its sequence and changes nothing; a late update token never revives an ended activity")
    func ordering() async throws {
        let fixture = try InProcess()
        let manager = fixture.manager()
        let key = PushToStartKey(installation: installation, bundleID: bundleID, attributesType: "OrderAttributes")
        try await reportPushToStart(manager, sequence: 5)
        let older = String(repeating: "5b", count: 32)
        await #expect {
            try await manager.report(.pushToStartToken(key, token: try DeviceToken(older), sequence: 4, environment: .sandbox))
        } throws: { error in
            let error = error as? LiveActivityError
            return error?.code == .invalidInput && error?.field == "sequence" && error?.rule.contains("4 is older than 5") == true
        }
        // The same sequence again (a retried post) is applied again.
        #expect(try await manager.report(.pushToStartToken(key, token: try DeviceToken(pushToStart), sequence: 5, environment: .sandbox)).applied)
        #expect(try await manager.pushToStartToken(for: key)?.token.hexString == pushToStart)

        // An activity the app started itself: registered by its first update-token report.
        let id = try LiveActivityID("order-17")
        let registration = try ActivityReport.Registration(bundleID: bundleID, attributesType: "OrderAttributes", installation: installation)
        let first = try await manager.report(.updateToken(id, token: try DeviceToken(deviceToken), sequence: 10, registration: registration))
        #expect(first.applied)
        let rotated = String(repeating: "cd", count: 32)
        #expect(try await manager.report(.updateToken(id, token: try DeviceToken(rotated), sequence: 12, registration: nil)).applied)
        await #expect {
            try await manager.report(.updateToken(id, token: try DeviceToken(deviceToken), sequence: 11, registration: nil))
        } throws: { error in
            (error as? LiveActivityError)?.field == "sequence"
        }
        #expect(try await manager.activity(id)?.updateToken?.hexString == rotated, "the latest token wins")
        #expect(try await manager.report(.ended(id, sequence: 13)).applied)
        let late = try await manager.report(.updateToken(id, token: try DeviceToken(deviceToken), sequence: 14, registration: nil))
        #expect(!late.applied && late.why?.contains("does not revive") == true)
        let activity = try #require(try await manager.activity(id))
        #expect(activity.state == .ended && activity.updateToken?.hexString == rotated)
        // An update to it is refused and nothing is sent.
        await #expect { try await manager.update(activity: id, contentState: OrderState(status: "late", eta: 1)) } throws: { error in
            (error as? LiveActivityError)?.code == .notLive
        }
        #expect(fixture.sent.isEmpty)
    }
}

@Suite("Managed Live Activities: start, update, end, and clean-up from verdicts and time")
struct LiveActivityLifecycleTests {
    @Test("start goes to the push-to-start token with the id as collapse id; a second start of the same id sends nothing")
    func startOnce() async throws {
        let fixture = try InProcess()
        let manager = fixture.manager()
        try await reportPushToStart(manager)
        let id = try LiveActivityID("order-17")
        for _ in 1...2 {
            try await manager.start(
                activity: id, installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
                attributes: OrderAttributes(order: "17"), contentState: OrderState(status: "packing", eta: 30),
                alert: APNSLiveActivityAlert(title: "Order 17", body: "Packing")
            )
        }
        #expect(fixture.sent.count == 1)
        let start = try #require(fixture.sent.first)
        #expect(start.path == "/3/device/\(pushToStart)" && header(start, "apns-collapse-id") == "order-17")
        #expect(header(start, "apns-push-type") == "liveactivity" && header(start, "apns-topic") == "\(bundle).push-type.liveactivity")
        let body = try aps(start)
        #expect(body["event"] as? String == "start" && body["attributes-type"] as? String == "OrderAttributes")
        #expect(try await manager.activity(id)?.state == .starting)
    }

    @Test("Updates before the update token are held, the latest wins, and it goes out when the token is reported; timestamps never go back")
    func heldUntilToken() async throws {
        let fixture = try InProcess()
        let manager = fixture.manager()
        try await reportPushToStart(manager)
        let id = try LiveActivityID("order-17")
        try await manager.start(
            activity: id, installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
            attributes: OrderAttributes(order: "17"), contentState: OrderState(status: "packing", eta: 30),
            alert: APNSLiveActivityAlert(title: "Order 17", body: "Packing")
        )
        #expect(try await manager.update(activity: id, contentState: OrderState(status: "packed", eta: 20)) == .held)
        fixture.clock.advance(by: 60)
        #expect(try await manager.update(activity: id, contentState: OrderState(status: "shipped", eta: 10)) == .held)
        #expect(fixture.sent.count == 1, "only the start left")
        let outcome = try await manager.report(.updateToken(id, token: try DeviceToken(deviceToken), sequence: 1, registration: nil))
        #expect(outcome.applied && outcome.sentHeld != nil)
        #expect(fixture.sent.count == 2)
        let held = try #require(fixture.sent.last)
        #expect(held.path == "/3/device/\(deviceToken)")
        let body = try aps(held)
        #expect((body["content-state"] as? [String: Any])?["status"] as? String == "shipped", "the latest state, not every one: \(body)")
        #expect(try await manager.activity(id)?.state == .active)
        // The clock goes back (an NTP step): the next timestamp is still not older than the last.
        let lastTimestamp = try #require(body["timestamp"] as? Int)
        fixture.clock.advance(by: -600)
        _ = try await manager.update(activity: id, contentState: OrderState(status: "near", eta: 2))
        let last = try #require(fixture.sent.last)
        let next = try #require(try aps(last)["timestamp"] as? Int)
        #expect(next >= lastTimestamp)
        _ = try await manager.end(activity: id, contentState: nil as OrderState?, dismissalDate: nil)
        let endRequest = try #require(fixture.sent.last)
        let end = try aps(endRequest)
        #expect(end["event"] as? String == "end" && (end["content-state"] as? [String: Any])?["status"] as? String == "near")
        let ended = try #require(try await manager.activity(id))
        #expect(ended.state == .ended)
        // The history: each change of state and token, in order, with the manager's clock.
        #expect(ended.history.map(\.event) == ["start_sent", "held", "held", "update_token", "held_sent", "ended"], "\(ended.history)")
        #expect(ended.history[0].detail == "through the push-to-start token 5a5a5a5a…")
        #expect(ended.history[3].detail == "abababab…, sequence 1" && ended.history[4].detail == "the held update goes to abababab…")
        #expect(ended.history[2].at == ended.history[0].at.addingTimeInterval(60))
    }

    @Test("A bulk update: one request per running activity with a token, a 410 kills its activity, the rest as update alone says")
    func bulkUpdate() async throws {
        let dead = String(repeating: "de", count: 32)
        let fixture = try InProcess { request in
            request.path.hasSuffix(dead)
                ? APNSTransportResponse(status: 410, body: Array(#"{"reason":"Unregistered","timestamp":1700000000000}"#.utf8))
                : APNSTransportResponse(status: 200)
        }
        let manager = fixture.manager()
        let registration = try ActivityReport.Registration(bundleID: bundleID, attributesType: "OrderAttributes")
        var running: [LiveActivityID] = []
        for index in 0..<5 {
            let id = try LiveActivityID("match-\(index)")
            try await manager.report(.updateToken(id, token: try DeviceToken(String(format: "%064x", index + 1)), sequence: nil, registration: registration))
            running.append(id)
        }
        let dying = try LiveActivityID("match-dead")
        try await manager.report(.updateToken(dying, token: try DeviceToken(dead), sequence: nil, registration: registration))
        let ended = try LiveActivityID("match-ended")
        try await manager.report(.updateToken(ended, token: try DeviceToken(String(repeating: "ee", count: 32)), sequence: nil, registration: registration))
        try await manager.report(.ended(ended, sequence: nil))
        try await reportPushToStart(manager)
        let waiting = try LiveActivityID("order-waiting")
        try await manager.start(
            activity: waiting, installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
            attributes: OrderAttributes(order: "w"), contentState: OrderState(status: "packing", eta: 30),
            alert: APNSLiveActivityAlert(title: "Order", body: "Packing")
        )
        let unknown = try LiveActivityID("nobody")
        fixture.clock.advance(by: 60)
        let before = fixture.sent.count
        // A bulk send runs under the client's run().
        let outcome = try await withAPNSClient(fixture.client) { _ in
            try await manager.update(activities: running + [dying, ended, waiting, unknown, running[0]], contentState: OrderState(status: "goal", eta: 0))
        }
        #expect(outcome.sent == 5 && outcome.held == 1 && outcome.failed == 3, "\(outcome.outcomes)")
        #expect(fixture.sent.count - before == 6, "one request for each running activity with a token, match-0 once")
        for id in running {
            let activity = try #require(try await manager.activity(id))
            #expect(activity.version == 2 && activity.lastTimestamp == fixture.clock.now)
            // JSONEncoder's key order is not fixed on Linux: compare the objects.
            let state = try json(try #require(activity.lastContentState))
            #expect(state["status"] as? String == "goal" && state["eta"] as? Int == 0 && state.count == 2)
        }
        let codes = [dying, ended, unknown].map { id -> LiveActivityError.Code? in
            if case .failure(let error) = outcome.outcomes[id] { error.code } else { nil }
        }
        #expect(codes == [.sendFailed, .notLive, .unknownActivity])
        #expect(try await manager.activity(dying)?.state == .dead(reason: "Unregistered"))
        #expect(try await manager.activity(waiting)?.held?.event == "update")
        let bodies = try fixture.sent.suffix(6).map { try aps($0) }
        #expect(bodies.allSatisfy { ($0["content-state"] as? [String: Any])?["status"] as? String == "goal" && $0["event"] as? String == "update" })
    }

    @Test("A manager without a client records reports and keeps a held push; the sweep of one with a client sends it, once")
    func registryOnly() async throws {
        let fixture = try InProcess()
        let sender = fixture.manager()
        let recorder = LiveActivityManager(store: fixture.store, clock: fixture.clock)
        try await reportPushToStart(recorder)
        let id = try LiveActivityID("order-18")
        await #expect {
            try await recorder.start(
                activity: id, installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
                attributes: OrderAttributes(order: "18"), contentState: OrderState(status: "packing", eta: 30),
                alert: APNSLiveActivityAlert(title: "Order 18", body: "Packing")
            )
        } throws: { error in
            (error as? LiveActivityError)?.code == .noClient
        }
        #expect(try await recorder.activity(id) == nil, "a refused start leaves nothing")
        let started = try await sender.start(
            activity: id, installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
            attributes: OrderAttributes(order: "18"), contentState: OrderState(status: "packing", eta: 30),
            alert: APNSLiveActivityAlert(title: "Order 18", body: "Packing")
        )
        #expect(try started.sent != nil && started.token == DeviceToken(pushToStart) && started.activity.state == .starting)
        let again = try await sender.start(
            activity: id, installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
            attributes: OrderAttributes(order: "18"), contentState: OrderState(status: "packing", eta: 30),
            alert: APNSLiveActivityAlert(title: "Order 18", body: "Packing")
        )
        #expect(again.sent == nil && fixture.sent.count == 1, "a live id is not started twice")
        #expect(try await sender.update(activity: id, contentState: OrderState(status: "shipped", eta: 10)) == .held)
        // The report reaches the process without a client: applied, the update still held.
        let outcome = try await recorder.report(.updateToken(id, token: try DeviceToken(deviceToken), sequence: 1, registration: nil))
        #expect(outcome.applied && outcome.sentHeld == nil)
        let recorded = try #require(try await sender.activity(id))
        #expect(recorded.state == .active && recorded.updateToken != nil && recorded.held?.event == "update")
        #expect(fixture.sent.count == 1)
        #expect(try await recorder.sweep().sentHeld == 0)
        #expect(try await sender.sweep().sentHeld == 1)
        #expect(try await sender.sweep().sentHeld == 0, "sent once")
        #expect(fixture.sent.count == 2)
        let held = try #require(fixture.sent.last)
        #expect(held.path == "/3/device/\(deviceToken)")
        #expect((try aps(held)["content-state"] as? [String: Any])?["status"] as? String == "shipped")
        #expect(try await sender.activity(id)?.held == nil)
    }

    @Test("410 Unregistered on an update kills the activity; BadDeviceToken on a start kills the push-to-start token; nothing more is sent")
    func deadTokens() async throws {
        let fixture = try InProcess { request in
            if request.path.hasSuffix(deviceToken) {
                return APNSTransportResponse(status: 410, body: Array(#"{"reason":"Unregistered","timestamp":1700000000000}"#.utf8))
            }
            if request.path.hasSuffix(pushToStart) { return APNSTransportResponse(status: 400, body: Array(#"{"reason":"BadDeviceToken"}"#.utf8)) }
            return APNSTransportResponse(status: 200)
        }
        let manager = fixture.manager()
        let id = try LiveActivityID("order-9")
        let registration = try ActivityReport.Registration(bundleID: bundleID, attributesType: "OrderAttributes")
        try await manager.report(.updateToken(id, token: try DeviceToken(deviceToken), sequence: nil, registration: registration))
        await #expect { try await manager.update(activity: id, contentState: OrderState(status: "a", eta: 1)) } throws: { error in
            (error as? LiveActivityError)?.apnsError?.reason == .unregistered
        }
        #expect(try await manager.activity(id)?.state == .dead(reason: "Unregistered"))
        await #expect { try await manager.update(activity: id, contentState: OrderState(status: "b", eta: 1)) } throws: { error in
            (error as? LiveActivityError)?.code == .notLive
        }
        #expect(fixture.sent.count == 1)

        try await reportPushToStart(manager)
        @Sendable func start(_ name: String) async throws {
            try await manager.start(
                activity: try LiveActivityID(name), installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
                attributes: OrderAttributes(order: name), contentState: OrderState(status: "new", eta: 5),
                alert: APNSLiveActivityAlert(title: "Order", body: .plain(name))
            )
        }
        await #expect { try await start("order-10") } throws: { error in (error as? LiveActivityError)?.code == .sendFailed }
        await #expect { try await start("order-11") } throws: { error in
            let error = error as? LiveActivityError
            return error?.code == .noPushToStartToken && error?.rule.contains("dead (BadDeviceToken)") == true
        }
        #expect(fixture.sent.count == 2, "no start went to the dead token")
        // A new token from the app brings it back.
        try await reportPushToStart(manager, token: String(repeating: "5c", count: 32))
        try await start("order-12")
        #expect(fixture.sent.count == 3)
    }

    @Test("Time: a push-to-start token unconfirmed for 7 days is stale; activities end at 8 h and leave the registry at 12 h")
    func time() async throws {
        let fixture = try InProcess()
        let manager = fixture.manager()
        try await reportPushToStart(manager)
        let id = try LiveActivityID("order-1")
        try await manager.start(
            activity: id, installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
            attributes: OrderAttributes(order: "1"), contentState: OrderState(status: "new", eta: 5),
            alert: APNSLiveActivityAlert(title: "Order", body: "1")
        )
        fixture.clock.advance(by: 7.5 * 3600)
        let early = try await manager.sweep()
        #expect(early.ended == 0 && early.removed == 0 && early.stale == 0)
        fixture.clock.advance(by: 0.5 * 3600)
        #expect(try await manager.sweep().ended == 1)
        #expect(try await manager.activity(id)?.state == .ended)
        fixture.clock.advance(by: 4 * 3600)
        #expect(try await manager.sweep().removed == 1)
        #expect(try await manager.activity(id) == nil)

        fixture.clock.advance(by: 7 * 86_400)
        await #expect {
            try await manager.start(
                activity: try LiveActivityID("order-2"), installation: installation, bundleID: bundleID, attributesType: "OrderAttributes",
                attributes: OrderAttributes(order: "2"), contentState: OrderState(status: "new", eta: 5),
                alert: APNSLiveActivityAlert(title: "Order", body: "2")
            )
        } throws: { error in
            let error = error as? LiveActivityError
            return error?.code == .noPushToStartToken && error?.rule.contains("stale") == true
        }
        #expect(fixture.sent.count == 1)
    }
}
