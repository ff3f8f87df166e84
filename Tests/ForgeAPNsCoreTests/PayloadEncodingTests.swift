import ForgeAPNsCore
import Foundation
import Testing

private let bundle = try! APNSBundleID("com.example.app")
private let token = try! DeviceToken(String(repeating: "ab", count: 32))

private func text(_ prepared: APNSPreparedNotification) -> String { String(decoding: prepared.body, as: UTF8.self) }

struct Delivery: Encodable, Sendable {
    struct ContentState: Encodable, Sendable {
        var status: String
        var etaMinutes: Int
        var updatedAt: Date
    }
    var orderNumber: String
}

@Suite("Payload encoding")
struct PayloadEncodingTests {
    @Test("Alert: every aps key, exactly as documented")
    func alertAllKeys() throws {
        let notification = APNSAlertNotification(
            alert: APNSAlert(
                title: "T", subtitle: "S", body: "B", launchImage: "launch.png",
                titleLocalizationKey: "TK", titleLocalizationArguments: ["a"],
                subtitleLocalizationKey: "SK", subtitleLocalizationArguments: ["b"],
                localizationKey: "BK", localizationArguments: ["c", "d"]
            ),
            topic: bundle, badge: 3, sound: .default, threadID: "thread", category: "CAT",
            mutableContent: true, contentAvailable: true, targetContentID: "win", interruptionLevel: .timeSensitive,
            relevanceScore: 0.5, filterCriteria: "work"
        )
        let prepared = try notification.prepared()
        #expect(
            text(prepared)
                == #"{"aps":{"alert":{"body":"B","launch-image":"launch.png","loc-args":["c","d"],"loc-key":"BK","#
                + #""subtitle":"S","subtitle-loc-args":["b"],"subtitle-loc-key":"SK","title":"T","title-loc-args":["a"],"#
                + #""title-loc-key":"TK"},"badge":3,"category":"CAT","content-available":1,"filter-criteria":"work","#
                + #""interruption-level":"time-sensitive","mutable-content":1,"relevance-score":0.5,"sound":"default","#
                + #""target-content-id":"win","thread-id":"thread"}}"#
        )
    }

    @Test("Alert: custom keys beside aps, never inside it")
    func alertCustomKeys() throws {
        struct Custom: Encodable, Sendable { var taskID = "t-1"; var url = "https://example.com/a/b" }
        let prepared = try APNSAlertNotification(alert: APNSAlert(body: "Hi"), topic: bundle, payload: Custom()).prepared()
        #expect(text(prepared) == #"{"aps":{"alert":{"body":"Hi"}},"taskID":"t-1","url":"https://example.com/a/b"}"#)
    }

    @Test("Alert and background: custom keys that encode to {} leave the aps dictionary alone, as valid JSON")
    func emptyCustomKeys() throws {
        struct NothingSet: Encodable, Sendable { var note: String? = nil }
        let empty: [String: Int] = [:]
        let alerts = [
            try APNSAlertNotification(alert: APNSAlert(title: "Hi"), topic: bundle, payload: empty).prepared(),
            try APNSAlertNotification(alert: APNSAlert(title: "Hi"), topic: bundle, payload: NothingSet()).prepared(),
        ]
        for prepared in alerts {
            #expect(text(prepared) == #"{"aps":{"alert":{"title":"Hi"}}}"#)
            #expect(try JSONSerialization.jsonObject(with: Data(prepared.body)) is [String: Any])
        }
        let background = try APNSBackgroundNotification(topic: bundle, payload: empty).prepared()
        #expect(text(background) == #"{"aps":{"content-available":1}}"#)
    }

    @Test("Alert: a custom key named aps is refused")
    func customAPSKey() {
        #expect(throws: APNSValidationError(.badPayload, field: "", rule: "")) {
            try APNSAlertNotification(alert: APNSAlert(body: "Hi"), topic: bundle, payload: ["aps": 1]).prepared()
        }
        do {
            _ = try APNSAlertNotification(alert: APNSAlert(body: "Hi"), topic: bundle, payload: ["aps": 1]).prepared()
        } catch {
            #expect(error.field == "payload.aps")
        }
    }

    @Test("Alert: custom keys that are not an object are refused")
    func customNotObject() {
        #expect(throws: APNSValidationError(.badPayload, field: "", rule: "")) {
            try APNSAlertNotification(alert: APNSAlert(body: "Hi"), topic: bundle, payload: [1, 2]).prepared()
        }
    }

    @Test("Alert: critical sound dictionary")
    func criticalSound() throws {
        let prepared = try APNSAlertNotification(
            alert: APNSAlert(title: "Fire"), topic: bundle, sound: .critical(name: "siren.caf", volume: 0.8),
            interruptionLevel: .critical
        ).prepared()
        #expect(
            text(prepared)
                == #"{"aps":{"alert":{"title":"Fire"},"interruption-level":"critical","sound":{"critical":1,"name":"siren.caf","volume":0.8}}}"#
        )
    }

    @Test(
        "Alert: field rules",
        arguments: [
            (APNSAlertNotification(alert: APNSAlert(body: "x"), topic: bundle, badge: -1), "aps.badge"),
            (APNSAlertNotification(alert: APNSAlert(body: "x"), topic: bundle, relevanceScore: 1.5), "aps.relevance-score"),
            (APNSAlertNotification(alert: APNSAlert(body: "x"), topic: bundle, sound: .critical(volume: 2)), "aps.sound.volume"),
            (APNSAlertNotification(alert: APNSAlert(), topic: bundle), "aps.alert"),
        ]
    )
    func alertRules(_ notification: APNSAlertNotification<APNSNoCustomKeys>, _ field: String) {
        do {
            _ = try notification.prepared()
            Issue.record("accepted")
        } catch {
            #expect(error.code == .badPayload)
            #expect(error.field == field)
        }
    }

    @Test("A badge alone is a valid alert push")
    func badgeOnly() throws {
        #expect(text(try APNSAlertNotification(alert: APNSAlert(), topic: bundle, badge: 0).prepared()) == #"{"aps":{"badge":0}}"#)
    }

    @Test("Alert: the request for a token")
    func alertRequest() throws {
        let id = try APNSID("123e4567-e89b-12d3-a456-426614174000")
        let prepared = try APNSAlertNotification(
            alert: APNSAlert(body: "Hi"), topic: bundle, priority: .consideringDevicePower,
            expiration: .immediately, collapseID: try APNSCollapseID("score"), apnsID: id
        ).prepared()
        let request = prepared.request(to: token)
        #expect(request.method == "POST")
        #expect(request.path == "/3/device/" + token.hexString)
        #expect(
            request.headers.map(\.description) == [
                "apns-push-type: alert", "apns-topic: com.example.app", "apns-priority: 5", "apns-expiration: 0",
                "apns-collapse-id: score", "apns-id: 123e4567-e89b-12d3-a456-426614174000",
            ]
        )
        #expect(request.body == prepared.body)
        let other = try APNSID("00000000-0000-0000-0000-000000000001")
        #expect(prepared.request(to: token, apnsID: other)[header: "apns-id"] == other.description)
        let plain = try APNSAlertNotification(alert: APNSAlert(body: "Hi"), topic: bundle).prepared()
        #expect(plain.request(to: token, apnsID: other)[header: "apns-id"] == other.description)
    }

    @Test("Requests of one prepared notification share one parts object; changing a request changes it alone")
    func sharedRequestParts() throws {
        let prepared = try APNSAlertNotification(alert: APNSAlert(body: "Hi"), topic: bundle).prepared()
        let other = try DeviceToken(String(repeating: "cd", count: 32))
        let first = prepared.request(to: token), second = prepared.request(to: other)
        #expect(first.shared === second.shared)
        #expect(first.path != second.path && first.headers == second.headers && first.body == second.body)
        // A push's own apns-id rides beside the shared parts, after the shared headers.
        let id = try APNSID("00000000-0000-0000-0000-000000000001")
        let own = prepared.request(to: token, apnsID: id)
        #expect(own.shared === first.shared && own.headers.last == APNSHeaderField("apns-id", id.description))
        // A notification with its own apns-id: the per-push one replaces it, in that request only.
        let withID = try APNSAlertNotification(alert: APNSAlert(body: "Hi"), topic: bundle, apnsID: id).prepared()
        let replaced = withID.request(to: token, apnsID: try APNSID("00000000-0000-0000-0000-000000000002"))
        #expect(replaced[header: "apns-id"] == "00000000-0000-0000-0000-000000000002")
        #expect(replaced.headers.filter { $0.name == "apns-id" }.count == 1)
        // Those pushes share one parts object too (the notification's headers without its apns-id).
        let replacedToo = withID.request(to: other, apnsID: try APNSID("00000000-0000-0000-0000-000000000003"))
        #expect(replacedToo.shared === replaced.shared && replaced.shared !== withID.request(to: token).shared)
        #expect(replaced.headers.dropLast() == withID.headers.dropLast())
        #expect(withID.request(to: token)[header: "apns-id"] == id.description)
        // Value semantics: a changed copy leaves the others and the notification as they were.
        var changed = first
        changed.body = Array("{}".utf8)
        changed.headers.append(APNSHeaderField("x-extra", "1"))
        #expect(changed.shared !== first.shared && first.body == prepared.body && second.headers == prepared.headers)
        #expect(changed.path == first.path && changed.headers.count == first.headers.count + 1)
        #expect(prepared.request(to: token) == first && prepared.request(to: token).hashValue == first.hashValue)
    }

    @Test("Background: content-available only, priority 5, custom data")
    func background() throws {
        let prepared = try APNSBackgroundNotification(topic: bundle, payload: ["type": "task_sync"]).prepared()
        #expect(text(prepared) == #"{"aps":{"content-available":1},"type":"task_sync"}"#)
        #expect(prepared.request(to: token).headers.map(\.description) == [
            "apns-push-type: background", "apns-topic: com.example.app", "apns-priority: 5",
        ])
        #expect(text(try APNSBackgroundNotification(topic: bundle).prepared()) == #"{"aps":{"content-available":1}}"#)
    }

    @Test("Live Activity update: integer timestamps, default date strategy inside content-state")
    func liveActivityUpdate() throws {
        let state = Delivery.ContentState(
            status: "On its way", etaMinutes: 12, updatedAt: Date(timeIntervalSinceReferenceDate: 100)
        )
        let prepared = try APNSLiveActivityNotification(
            event: .update, contentState: state, timestamp: Date(timeIntervalSince1970: 1_760_000_000.7),
            topic: bundle, staleDate: Date(timeIntervalSince1970: 1_760_000_900), relevanceScore: 50,
            alert: APNSLiveActivityAlert(title: .localized(key: "ETA", arguments: ["12"]), body: "Soon", sound: "default"),
            priority: .consideringDevicePower
        ).prepared()
        #expect(
            text(prepared)
                == #"{"aps":{"alert":{"body":"Soon","sound":"default","title":{"loc-args":["12"],"loc-key":"ETA"}},"#
                + #""content-state":{"etaMinutes":12,"status":"On its way","updatedAt":100},"event":"update","#
                + #""relevance-score":50,"stale-date":1760000900,"timestamp":1760000000}}"#
        )
        #expect(prepared.topic.rawValue == "com.example.app.push-type.liveactivity")
        #expect(prepared.request(to: token)[header: "apns-push-type"] == "liveactivity")
    }

    @Test("Live Activity end with a dismissal date")
    func liveActivityEnd() throws {
        let prepared = try APNSLiveActivityNotification(
            event: .end(dismissalDate: Date(timeIntervalSince1970: 1_760_003_600)), contentState: ["status": "Delivered"],
            timestamp: Date(timeIntervalSince1970: 1_760_000_000), topic: bundle
        ).prepared()
        #expect(
            text(prepared)
                == #"{"aps":{"content-state":{"status":"Delivered"},"dismissal-date":1760003600,"event":"end","timestamp":1760000000}}"#
        )
    }

    @Test("Live Activity priority 1 is refused")
    func liveActivityPriorityOne() {
        #expect(throws: APNSValidationError(.badPriority, field: "", rule: "")) {
            try APNSLiveActivityNotification(
                event: .update, contentState: ["a": 1], timestamp: Date(), topic: bundle, priority: .prioritizingDevicePower
            ).prepared()
        }
    }

    @Test("Live Activity start: attributes, alert and input push token")
    func liveActivityStart() throws {
        let prepared = try APNSLiveActivityStartNotification(
            attributesType: "DeliveryAttributes", attributes: Delivery(orderNumber: "A-17"),
            contentState: ["status": "Packed"], alert: APNSLiveActivityAlert(title: "Order A-17", body: "Packed"),
            timestamp: Date(timeIntervalSince1970: 1_760_000_000), topic: bundle, inputPushToken: true
        ).prepared()
        #expect(
            text(prepared)
                == #"{"aps":{"alert":{"body":"Packed","title":"Order A-17"},"attributes":{"orderNumber":"A-17"},"#
                + #""attributes-type":"DeliveryAttributes","content-state":{"status":"Packed"},"event":"start","#
                + #""input-push-token":1,"timestamp":1760000000}}"#
        )
    }

    @Test("Live Activity start: input channel, and the rules")
    func liveActivityStartRules() throws {
        let channel = try APNSChannelID("dHJhY2tpbmc=")
        let prepared = try APNSLiveActivityStartNotification(
            attributesType: "A", attributes: ["k": "v"], contentState: ["s": 1],
            alert: APNSLiveActivityAlert(title: "t", body: "b"), timestamp: Date(timeIntervalSince1970: 1),
            topic: bundle, inputPushChannel: channel
        ).prepared()
        #expect(text(prepared).contains(#""input-push-channel":"dHJhY2tpbmc=""#))
        #expect(throws: APNSValidationError(.badPayload, field: "", rule: "")) {
            try APNSLiveActivityStartNotification(
                attributesType: "A", attributes: ["k": "v"], contentState: ["s": 1],
                alert: APNSLiveActivityAlert(title: "t", body: "b"), timestamp: Date(), topic: bundle,
                inputPushToken: true, inputPushChannel: channel
            ).prepared()
        }
        #expect(throws: APNSValidationError(.badPayload, field: "", rule: "")) {
            try APNSLiveActivityStartNotification(
                attributesType: "", attributes: ["k": "v"], contentState: ["s": 1],
                alert: APNSLiveActivityAlert(title: "t", body: "b"), timestamp: Date(), topic: bundle
            ).prepared()
        }
    }

    @Test("Broadcast: path with the bare bundle id, required headers, no topic")
    func broadcast() throws {
        let requestID = try APNSID("123e4567-e89b-12d3-a456-426614174000")
        let prepared = try APNSBroadcastNotification(
            channelID: try APNSChannelID("dHJhY2tpbmc="), bundleID: bundle, event: .update,
            contentState: ["score": "2-1"], timestamp: Date(timeIntervalSince1970: 1_760_000_000),
            priority: .consideringDevicePower, requestID: requestID
        ).prepared()
        let request = prepared.request()
        #expect(request.path == "/4/broadcasts/apps/com.example.app")
        #expect(
            request.headers.map(\.description) == [
                "apns-channel-id: dHJhY2tpbmc=", "apns-push-type: liveactivity", "apns-priority: 5",
                "apns-expiration: 0", "apns-request-id: 123e4567-e89b-12d3-a456-426614174000",
            ]
        )
        #expect(
            String(decoding: request.body, as: UTF8.self)
                == #"{"aps":{"content-state":{"score":"2-1"},"event":"update","timestamp":1760000000}}"#
        )
    }

    @Test("Broadcast: no expiration is refused")
    func broadcastNeedsExpiration() throws {
        #expect(throws: APNSValidationError(.badExpiration, field: "", rule: "")) {
            try APNSBroadcastNotification(
                channelID: try APNSChannelID("AAAA"), bundleID: bundle, event: .end(), contentState: ["s": 1],
                timestamp: Date(), expiration: .none
            ).prepared()
        }
    }

    @Test("Whole-payload push types")
    func wholePayloads() throws {
        let voip = try APNSPayloadNotification.voip(["caller": "Ada"], bundleID: bundle).prepared()
        #expect(text(voip) == #"{"caller":"Ada"}"#)
        #expect(voip.topic.rawValue == "com.example.app.voip")
        #expect(text(APNSPayloadNotification.widgets(bundleID: bundle)) == #"{"aps":{"content-changed":true}}"#)
        #expect(try APNSPayloadNotification.widgets(bundleID: bundle).prepared().topic.rawValue == "com.example.app.push-type.widgets")
        #expect(try APNSPayloadNotification.controls(bundleID: bundle).prepared().topic.rawValue == "com.example.app.push-type.controls")
        let mdm = try APNSPayloadNotification.mdm(pushMagic: "magic", topic: "com.apple.mgmt.External.abc").prepared()
        #expect(text(mdm) == #"{"mdm":"magic"}"#)
        #expect(mdm.topic.rawValue == "com.apple.mgmt.External.abc")
        #expect(try APNSPayloadNotification.complication(["a": 1], bundleID: bundle).prepared().topic.rawValue == "com.example.app.complication")
        #expect(try APNSPayloadNotification.fileProvider(["a": 1], bundleID: bundle).prepared().topic.rawValue == "com.example.app.pushkit.fileprovider")
        #expect(try APNSPayloadNotification.location(["a": 1], bundleID: bundle).prepared().topic.rawValue == "com.example.app.location-query")
        #expect(try APNSPayloadNotification.pushToTalk(["a": 1], bundleID: bundle).prepared().topic.rawValue == "com.example.app.voip-ptt")
    }

    @Test(
        "Raw JSON bodies must be one JSON object",
        arguments: ["", "[]", "\"aps\"", "{", #"{"aps":}"#, #"{"a":1} {"b":2}"#, #"{"a":01}"#, "{'a':1}", "{\"a\":\"\u{1}\"}"]
    )
    func rawBodies(_ json: String) {
        let notification = APNSPayloadNotification(
            pushType: .alert, topic: APNSTopic(bundleID: bundle, pushType: .alert), json: Array(json.utf8)
        )
        #expect(throws: APNSValidationError(.badPayload, field: "", rule: "")) { try notification.prepared() }
    }
}

extension PayloadEncodingTests {
    struct RawBody: Sendable, CustomTestStringConvertible {
        var name: String
        var bytes: [UInt8]
        var rule: String
        var testDescription: String { self.name }
    }

    static let unreadableBodies: [RawBody] = [
        RawBody(name: "a byte that is not UTF-8", bytes: Array(#"{"a":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
                rule: "must be UTF-8 (byte 0xff at column 7 is not UTF-8)"),
        RawBody(name: "an overlong form", bytes: Array(#"{"a":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8), rule: "must be UTF-8"),
        RawBody(name: "an encoded surrogate", bytes: Array(#"{"a":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),
                rule: "must be UTF-8"),
        RawBody(name: "a truncated sequence", bytes: Array(#"{"a":""#.utf8) + [0xE2, 0x82] + Array(#""}"#.utf8),
                rule: "must be UTF-8 (bytes 0xe2 0x82 0x22 at column 7 are not UTF-8)"),
        RawBody(name: "Latin-1 outside a string", bytes: Array(#"{"a":1}"#.utf8) + [0xE9], rule: "must be UTF-8"),
        RawBody(name: "an unpaired high surrogate escape", bytes: Array(#"{"a":"\ud800x"}"#.utf8),
                rule: #"must be one JSON object: \uD800 at column 7 is half a surrogate pair"#),
        RawBody(name: "a lone low surrogate escape", bytes: Array(#"{"a":"\udc00"}"#.utf8), rule: "half a surrogate pair"),
        RawBody(name: "a badge of 1e999", bytes: Array(#"{"aps":{"badge":1e999}}"#.utf8),
                rule: "must hold only numbers that fit a 64-bit double (the number 1e999 at column 17 is too large for a 64-bit double)"),
        RawBody(name: "minus 1e400", bytes: Array(#"{"v":-1E+400}"#.utf8), rule: "too large for a 64-bit double"),
        RawBody(name: "an integer of 400 digits", bytes: Array(#"{"v":"#.utf8) + Array(repeating: UInt8(ascii: "9"), count: 400) + [0x7D],
                rule: "too large for a 64-bit double"),
        RawBody(name: "an array", bytes: Array("[1]".utf8), rule: "must be one JSON object: the top level is an array, not an object"),
    ]

    @Test("Raw bodies a device cannot read are refused, naming the rule", arguments: unreadableBodies)
    func unreadableBody(_ body: RawBody) {
        let notification = APNSPayloadNotification(
            pushType: .alert, topic: APNSTopic(bundleID: bundle, pushType: .alert), json: body.bytes
        )
        #expect(throws: APNSValidationError(.badPayload, field: "", rule: "")) { try notification.prepared() }
        do {
            _ = try notification.prepared()
        } catch {
            #expect(error.field == "payload")
            #expect(error.rule.contains(body.rule), "\(error.rule)")
        }
        #expect((try? JSONSerialization.jsonObject(with: Data(body.bytes))) as? [String: Any] == nil, "Foundation refuses it too")
    }

    @Test(
        "Raw bodies at the edges that a device reads are accepted",
        arguments: [#"{"v":1e-999}"#, #"{"v":123456789012345678901234567890}"#, #"{"v":"\ud83d\ude00"}"#, #"{"v":"😀é"}"#, #"{"v":1.7976931348623157e308}"#]
    )
    func readableEdges(_ json: String) throws {
        let notification = APNSPayloadNotification(pushType: .alert, topic: APNSTopic(bundleID: bundle, pushType: .alert), json: Array(json.utf8))
        _ = try notification.prepared()
        #expect(try JSONSerialization.jsonObject(with: Data(json.utf8)) is [String: Any])
    }
}

private func text(_ notification: APNSPayloadNotification) -> String { String(decoding: notification.body, as: UTF8.self) }
