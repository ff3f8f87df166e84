import ForgeAPNsCore
import Foundation
import Testing

@Suite("Device tokens")
struct DeviceTokenTests {
    @Test("Accepted lengths: 64, 108, 160 and 200 hex digits", arguments: [64, 108, 160, 200])
    func acceptedLengths(_ length: Int) throws {
        let hex = String(repeating: "a1", count: length / 2)
        #expect(try DeviceToken(hex).hexString == hex)
    }

    @Test("Upper-case hex is normalised to lower case")
    func lowercased() throws {
        let token = try DeviceToken(String(repeating: "AB", count: 32))
        #expect(token.hexString == String(repeating: "ab", count: 32))
    }

    @Test("Odd length is refused with the count")
    func oddLength() {
        #expect(rule(String(repeating: "a", count: 65)) == "must have an even number of hex digits (got 65)")
    }

    @Test("Too short and too long are refused with the bounds", arguments: [62, 202])
    func outOfRange(_ length: Int) {
        #expect(rule(String(repeating: "0", count: length)) == "must be 64 to 200 hex digits long (got \(length))")
    }

    @Test("A custom length range is honoured")
    func customRange() throws {
        _ = try DeviceToken(String(repeating: "0", count: 32), allowedLengths: 32...64)
    }

    @Test("A non-hex character is named with its position")
    func nonHex() {
        let token = String(repeating: "a", count: 10) + "g" + String(repeating: "a", count: 53)
        #expect(rule(token) == "must contain only hex digits 0-9 and a-f (found 'g' at position 11)")
        #expect(rule(" " + String(repeating: "a", count: 64))?.contains("byte 0x20 at position 1") == true)
    }

    @Test("Raw token bytes become lower-case hex")
    func fromBytes() throws {
        let token = try DeviceToken(bytes: [UInt8](repeating: 0xAB, count: 31) + [0x0F])
        #expect(token.hexString == String(repeating: "ab", count: 31) + "0f")
    }

    private func rule(_ value: String) -> String? {
        do {
            _ = try DeviceToken(value)
            return nil
        } catch {
            #expect(error.code == .badDeviceToken)
            #expect(error.field == "device token")
            return error.rule
        }
    }
}

@Suite("Bundle ids, collapse ids, apns-id, channel ids")
struct SmallIdentifierTests {
    @Test("Well-formed bundle ids", arguments: ["com.example.app", "a", "com.example-co.App2", "X.Y.Z"])
    func goodBundleIDs(_ value: String) throws {
        #expect(try APNSBundleID(value).rawValue == value)
    }

    @Test(
        "Malformed bundle ids name the rule",
        arguments: [
            ("", "must not be empty"),
            (".com.example", "must not start with '.'"),
            ("com..example", "must not contain an empty part ('..')"),
            ("com.example.", "must not end with '.'"),
            ("com.exa mple", "may contain only letters, digits, '-' and '.' (found byte 0x20 at position 8)"),
            ("com.example_app", "may contain only letters, digits, '-' and '.' (found '_' at position 12)"),
        ]
    )
    func badBundleIDs(_ value: String, _ rule: String) {
        #expect(throws: APNSValidationError(.badBundleID, field: "", rule: "")) { try APNSBundleID(value) }
        #expect((try? APNSBundleID(value)) == nil)
        do {
            _ = try APNSBundleID(value)
        } catch {
            #expect(error.rule == rule)
            #expect(error.field == "bundle id")
        }
    }

    @Test("Collapse id: 64 bytes accepted, 65 refused, counted in UTF-8 bytes")
    func collapseIDBoundary() throws {
        _ = try APNSCollapseID(String(repeating: "x", count: 64))
        _ = try APNSCollapseID(String(repeating: "é", count: 32))  // 64 bytes
        for value in [String(repeating: "x", count: 65), String(repeating: "é", count: 33)] {
            do {
                _ = try APNSCollapseID(value)
                Issue.record("accepted \(value.utf8.count) bytes")
            } catch {
                #expect(error.code == .badCollapseID)
                #expect(error.field == "apns-collapse-id")
                #expect(error.rule == "must be at most 64 bytes of UTF-8 (got \(value.utf8.count))")
            }
        }
    }

    @Test("Collapse id: empty and control characters refused", arguments: ["", "a\r\nb", "tab\there"])
    func collapseIDShape(_ value: String) {
        #expect(throws: APNSValidationError(.badCollapseID, field: "", rule: "")) { try APNSCollapseID(value) }
    }

    @Test("apns-id: canonical UUIDs in either case, printed lower case")
    func apnsID() throws {
        let id = try APNSID("123E4567-E89B-12D3-A456-426614174000")
        #expect(id.description == "123e4567-e89b-12d3-a456-426614174000")
        #expect(try APNSID("123e4567-e89b-12d3-a456-426614174000") == id)
    }

    @Test("apns-id: printed and parsed by hand as Foundation's UUID prints and parses them (1000 random ids)")
    func apnsIDAgainstFoundation() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let uuid = UUID()
            let id = APNSID(uuid)
            #expect(id.description == uuid.uuidString.lowercased())
            #expect(try APNSID(uuid.uuidString) == id && id.matches(uuid.uuidString) && id.matches(id.description))
            // One character changed (a hex digit into another, or into a non-hex character) is another id or none.
            var characters = Array(uuid.uuidString)
            let position = [0, 7, 9, 14, 19, 24, 35].randomElement(using: &generator)!
            characters[position] = characters[position] == "0" ? "G" : "0"
            let changed = String(characters)
            #expect(!id.matches(changed))
            #expect((try? APNSID(changed)) == UUID(uuidString: changed).map(APNSID.init))
        }
    }

    @Test("apns-id: every position, every kind of byte (digits, letters at the hex ranges' edges, a dash), as Foundation parses it")
    func apnsIDEveryPositionAgainstFoundation() throws {
        let base = Array("9aF0b1E2-c3D4-a5B6-f7C8-0123456789aB".utf8)
        let replacements = Array("0 9 a f A F g G : @ ` / - ~".utf8).filter { $0 != UInt8(ascii: " ") } + [0x00, 0x7F, 0xC3]
        for position in base.indices {
            for replacement in replacements {
                var bytes = base
                bytes[position] = replacement
                // 0xC3 alone is invalid UTF-8: the String repairs it, and the length is no longer 36.
                let text = String(decoding: bytes, as: UTF8.self)
                if replacement == UInt8(ascii: "-"), ![8, 13, 18, 23].contains(position) {
                    // Foundation on Linux reads "-a" where two hex digits belong as a byte (a sign and
                    // one digit, as sscanf's %2hhx would); RFC 9562's grammar has two hex digits there.
                    #expect((try? APNSID(text)) == nil, "\(text)")
                } else {
                    #expect((try? APNSID(text)) == UUID(uuidString: text).map(APNSID.init), "\(text)")
                }
            }
        }
    }

    @Test("apns-id: non-UUIDs refused", arguments: [
        "", "123", "123e4567e89b12d3a456426614174000", "{123e4567-e89b-12d3-a456-426614174000}", "123e4567-e89b-12d3-a456_426614174000",
        "123e4567-e89b-12d3-a456-42661417400g", "123e4567-e89b-12d3-a456-4266141740000", "123e4567-e89b-12d3-a4566-42661417400",
    ])
    func badAPNSID(_ value: String) {
        #expect(throws: APNSValidationError(.badAPNSID, field: "", rule: "")) { try APNSID(value) }
    }

    @Test("Channel ids are padded base64", arguments: ["dHJhY2tpbmc=", "AAAA", "ab+/cd=="])
    func channelIDs(_ value: String) throws {
        #expect(try APNSChannelID(value).rawValue == value)
    }

    @Test("Channel ids that are not base64 are refused", arguments: ["", "abc", "ab-_", "a===", "ab c"])
    func badChannelIDs(_ value: String) {
        #expect(throws: APNSValidationError(.badChannelID, field: "", rule: "")) { try APNSChannelID(value) }
    }
}

@Suite("Campaign apns-ids")
struct CampaignAPNSIDTests {
    private let campaign = UUID(uuidString: "0F2E8C5A-3B1D-4E6F-8A9B-1C2D3E4F5A6B")!

    @Test("The same campaign and index give the same id; the last 12 hex digits are the index; version 8, RFC variant")
    func deterministic() throws {
        let id = APNSID(campaign: self.campaign, index: 0x1234_5678_9ABC)
        #expect(id == APNSID(campaign: self.campaign, index: 0x1234_5678_9ABC))
        #expect(id.description == "0f2e8c5a-3b1d-8e6f-8a9b-123456789abc")
        #expect(try APNSID(id.description) == id)
        // The variant's two high bits are 10, whatever the campaign had there.
        let other = APNSID(campaign: UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!, index: 1)
        #expect(other.description == "ffffffff-ffff-8fff-bfff-000000000001")
    }

    @Test("Indices and campaigns never share an id", arguments: [0, 1, 255, 65_536, (1 << 48) - 1])
    func distinct(index: Int) {
        #expect(APNSID(campaign: self.campaign, index: index) != APNSID(campaign: self.campaign, index: index == 0 ? 1 : index - 1))
        #expect(APNSID(campaign: self.campaign, index: index) != APNSID(campaign: UUID(), index: index))
    }
}
