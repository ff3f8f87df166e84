/// The id of a broadcast channel, as APNs returned it in `apns-channel-id`: a base64 string.
public struct APNSChannelID: Hashable, Sendable, CustomStringConvertible {
    /// The id as sent in the `apns-channel-id` header.
    public let rawValue: String

    /// Validates a channel id.
    /// - Throws: ``APNSValidationError/Code/badChannelID`` unless `rawValue` is non-empty padded base64.
    public init(_ rawValue: String) throws(APNSValidationError) {
        let bytes = Array(rawValue.utf8)
        guard !bytes.isEmpty else {
            throw APNSValidationError(.badChannelID, field: "apns-channel-id", rule: "must not be empty")
        }
        guard bytes.count % 4 == 0 else {
            throw APNSValidationError(
                .badChannelID,
                field: "apns-channel-id",
                rule: "must be base64 with padding, a multiple of 4 characters (got \(bytes.count))"
            )
        }
        let padding = bytes.reversed().prefix(while: { $0 == UInt8(ascii: "=") }).count
        guard padding <= 2 else {
            throw APNSValidationError(.badChannelID, field: "apns-channel-id", rule: "must end in at most two '='")
        }
        for (index, byte) in bytes.dropLast(padding).enumerated() {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                continue
            default:
                throw APNSValidationError(
                    .badChannelID,
                    field: "apns-channel-id",
                    rule: "must be base64 (found \(DeviceToken.describe(byte)) at position \(index + 1))"
                )
            }
        }
        self.rawValue = rawValue
    }

    public var description: String { self.rawValue }
}
