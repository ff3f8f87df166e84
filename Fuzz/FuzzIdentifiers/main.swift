import ForgeAPNsCore
import ForgeFuzzSupport

/// The identifiers read from files, flags and headers: device tokens, apns-id, apns-collapse-id,
/// topics, bundle, key and team ids.
enum IdentifiersFuzz {
    static func test(_ bytes: [UInt8]) {
        let text = FuzzFields.text(bytes)
        if let token = try? DeviceToken(text) {
            // Normalised once, it parses to itself.
            guard (try? DeviceToken(token.hexString)) == token else { fatalError("DeviceToken does not round-trip") }
        }
        if let token = try? DeviceToken(bytes: bytes) {
            guard token.hexString.utf8.count == bytes.count * 2 else { fatalError("DeviceToken(bytes:) lost bytes") }
        }
        if let id = try? APNSID(text) {
            guard (try? APNSID(id.description)) == id else { fatalError("APNSID does not round-trip") }
        }
        if let collapseID = try? APNSCollapseID(text) {
            guard (try? APNSCollapseID(collapseID.rawValue)) == collapseID else { fatalError("APNSCollapseID does not round-trip") }
        }
        for pushType in APNSPushType.allCases { _ = try? APNSTopic(text, pushType: pushType) }
        _ = try? APNSBundleID(text)
        _ = try? APNSChannelID(text)
        _ = try? APNSKeyID(text)
        _ = try? APNSTeamID(text)
    }
}

@main
enum FuzzIdentifiers {
    static func main() { FuzzDriver.main(IdentifiersFuzz.test) }
}
