import ForgeAPNsCore
import Foundation
import Testing

private let bundle = try! APNSBundleID("com.example.app")

@Suite("Push types: topics, priorities and limits")
struct PushTypeRuleTests {
    static let expectedTopics: [(APNSPushType, String)] = [
        (.alert, "com.example.app"),
        (.background, "com.example.app"),
        (.complication, "com.example.app.complication"),
        (.controls, "com.example.app.push-type.controls"),
        (.fileprovider, "com.example.app.pushkit.fileprovider"),
        (.liveactivity, "com.example.app.push-type.liveactivity"),
        (.location, "com.example.app.location-query"),
        (.mdm, "com.example.app"),
        (.pushtotalk, "com.example.app.voip-ptt"),
        (.voip, "com.example.app.voip"),
        (.widgets, "com.example.app.push-type.widgets"),
    ]

    @Test("There are exactly the 11 documented push types")
    func allCases() {
        #expect(APNSPushType.allCases.map(\.rawValue).sorted() == Self.expectedTopics.map(\.0.rawValue).sorted())
        #expect(APNSPushType(rawValue: "Alert") == nil)
        #expect(APNSPushType(rawValue: "notification") == nil)
    }

    @Test("The topic is derived from the bundle id", arguments: expectedTopics)
    func derivedTopic(_ pushType: APNSPushType, _ topic: String) throws {
        #expect(APNSTopic(bundleID: bundle, pushType: pushType).rawValue == topic)
        // Given by a person: the bundle id, or the full topic, give the same header.
        #expect(try APNSTopic("com.example.app", pushType: pushType).rawValue == topic)
        #expect(try APNSTopic(topic, pushType: pushType).rawValue == topic)
    }

    @Test("A topic with another push type's suffix is refused", arguments: APNSPushType.allCases)
    func wrongSuffix(_ pushType: APNSPushType) {
        for (other, topic) in Self.expectedTopics where other != pushType && topic != "com.example.app" {
            if pushType == .mdm { continue }  // mdm takes the topic as given
            do {
                _ = try APNSTopic(topic, pushType: pushType)
                Issue.record("\(topic) accepted for \(pushType)")
            } catch {
                #expect(error.code == .badTopic)
                #expect(error.field == "apns-topic")
                #expect(error.rule.contains("the suffix of push type \(other)"))
                #expect(error.rule.contains("give the bundle id 'com.example.app'"))
            }
        }
    }

    @Test("An MDM topic is taken as given")
    func mdmTopic() throws {
        let topic = "com.apple.mgmt.External.3f1c8f5e-8a0b-4d6c-9f51-2b7a1c3d4e5f"
        #expect(try APNSTopic(topic, pushType: .mdm).rawValue == topic)
    }

    @Test("Priority rules per push type", arguments: APNSPushType.allCases)
    func priorityRules(_ pushType: APNSPushType) throws {
        let topic = APNSTopic(bundleID: bundle, pushType: pushType)
        for priority in APNSPriority.allCases {
            let allowed: Bool
            switch pushType {
            case .background: allowed = priority == .consideringDevicePower
            case .liveactivity: allowed = priority != .prioritizingDevicePower
            default: allowed = true
            }
            do {
                let prepared = try APNSPreparedNotification(
                    pushType: pushType, topic: topic, priority: priority, body: Array(#"{"aps":{}}"#.utf8)
                )
                #expect(allowed, "\(pushType) accepted priority \(priority)")
                #expect(prepared.headers.contains(APNSHeaderField("apns-priority", priority.headerValue)))
            } catch {
                #expect(!allowed, "\(pushType) refused priority \(priority): \(error)")
                #expect(error.code == .badPriority)
                #expect(error.field == "apns-priority")
            }
        }
    }

    @Test("Background with priority 10 names the rule")
    func backgroundPriorityTen() {
        do {
            _ = try APNSPreparedNotification(
                pushType: .background, topic: APNSTopic(bundleID: bundle, pushType: .background),
                priority: .immediately, body: Array(#"{"aps":{"content-available":1}}"#.utf8)
            )
            Issue.record("accepted")
        } catch {
            #expect(error.rule == "must be 5 for push type background (got 10)")
        }
    }

    @Test("Background with no priority is sent with 5; others send none")
    func impliedPriority() throws {
        let background = try APNSPreparedNotification(
            pushType: .background, topic: APNSTopic(bundleID: bundle, pushType: .background),
            body: Array(#"{"aps":{"content-available":1}}"#.utf8)
        )
        #expect(background.priority == .consideringDevicePower)
        #expect(background.headers.contains(APNSHeaderField("apns-priority", "5")))
        let alert = try APNSPreparedNotification(
            pushType: .alert, topic: APNSTopic(bundleID: bundle, pushType: .alert), body: Array(#"{"aps":{}}"#.utf8)
        )
        #expect(!alert.headers.contains(where: { $0.name == "apns-priority" }))
    }

    @Test("Priority header parsing", arguments: [("10", true), ("5", true), ("1", true), ("0", false), ("high", false), ("", false)])
    func priorityParsing(_ value: String, _ valid: Bool) {
        #expect(((try? APNSPriority(headerValue: value)) != nil) == valid)
    }

    @Test("Size limit at the byte boundary", arguments: APNSPushType.allCases)
    func sizeLimit(_ pushType: APNSPushType) throws {
        let limit = pushType == .voip ? 5120 : 4096
        #expect(pushType.payloadSizeLimit == limit)
        let topic = APNSTopic(bundleID: bundle, pushType: pushType)
        let priority: APNSPriority? = pushType == .background ? .consideringDevicePower : nil
        _ = try APNSPreparedNotification(pushType: pushType, topic: topic, priority: priority, body: body(size: limit))
        do {
            _ = try APNSPreparedNotification(pushType: pushType, topic: topic, priority: priority, body: body(size: limit + 1))
            Issue.record("\(limit + 1) bytes accepted for \(pushType)")
        } catch {
            #expect(error.code == .payloadTooLarge)
            #expect(error.rule == "is \(limit + 1) bytes; the limit for push type \(pushType) is \(limit) bytes")
        }
    }

    @Test("Broadcast size limit is 5120 bytes")
    func broadcastLimit() throws {
        let channel = try APNSChannelID("dHJhY2tpbmc=")
        _ = try APNSPreparedBroadcast(
            bundleID: bundle, channelID: channel, priority: .immediately, expiration: .immediately, body: body(size: 5120)
        )
        do {
            _ = try APNSPreparedBroadcast(
                bundleID: bundle, channelID: channel, priority: .immediately, expiration: .immediately,
                body: body(size: 5121)
            )
            Issue.record("5121 bytes accepted")
        } catch {
            #expect(error.code == .payloadTooLarge)
            #expect(error.rule == "is 5121 bytes; the limit for broadcasts is 5120 bytes")
        }
    }

    @Test("Expiration header values")
    func expiration() throws {
        #expect(APNSExpiration.none.headerValue == nil)
        #expect(APNSExpiration.immediately.headerValue == "0")
        #expect(APNSExpiration.at(Date(timeIntervalSince1970: 1_760_000_000.9)).headerValue == "1760000000")
        #expect(APNSExpiration.at(Date(timeIntervalSince1970: -5)).headerValue == "0")
        #expect(try APNSExpiration(headerValue: "1760000000").secondsSince1970 == 1_760_000_000)
        for bad in ["", "-1", "1.5", "tomorrow", " 1"] {
            #expect(throws: APNSValidationError(.badExpiration, field: "", rule: "")) { try APNSExpiration(headerValue: bad) }
        }
        #expect(throws: APNSValidationError(.badExpiration, field: "", rule: "")) { try APNSExpiration(secondsSince1970: -1) }
    }

    /// A JSON object of exactly `size` bytes.
    private func body(size: Int) -> [UInt8] {
        let prefix = Array(#"{"aps":{},"pad":""#.utf8)
        return prefix + [UInt8](repeating: UInt8(ascii: "x"), count: size - prefix.count - 2) + Array(#""}"#.utf8)
    }
}
