public import struct Foundation.UUID

/// The `apns-id` of a notification: a UUID that APNs echoes in its response.
///
/// Sent in canonical 8-4-4-4-12 form with lower-case hex. APNs generates one (in upper case) when a
/// request has none, so compare values as ``APNSID``, never as strings.
public struct APNSID: Hashable, Sendable, CustomStringConvertible {
    /// The identifier.
    public let uuid: UUID

    /// A new random identifier.
    public init() { self.uuid = UUID() }

    /// Wraps a UUID.
    public init(_ uuid: UUID) { self.uuid = uuid }

    /// The `apns-id` of the push at `index` of a campaign (a bulk send that may run more than once):
    /// the same for the same campaign and index on every run, so a push sent twice carries one id
    /// in APNs' and the local server's records. The first 20 hex digits come from `campaign`, the
    /// last 12 are `index` (RFC 9562 version 8, the variant bits set); `index` must be below 2^48.
    public init(campaign: UUID, index: Int) {
        precondition(index >= 0 && index < 1 << 48, "a campaign index must be 0 ..< 2^48")
        var bytes = campaign.uuid
        withUnsafeMutableBytes(of: &bytes) { raw in
            for position in 0..<6 { raw[10 + position] = UInt8(truncatingIfNeeded: index >> (8 * (5 - position))) }
            raw[6] = (raw[6] & 0x0F) | 0x80  // version 8: custom
            raw[8] = (raw[8] & 0x3F) | 0x80  // variant 10
        }
        self.uuid = UUID(uuid: bytes)
    }

    /// Parses the canonical form, in either case.
    /// - Throws: ``APNSValidationError/Code/badAPNSID`` when `string` is not a UUID.
    public init(_ string: String) throws(APNSValidationError) {
        guard string.utf8.count == 36, let uuid = UUID(uuidString: string) else {
            throw APNSValidationError(
                .badAPNSID,
                field: "apns-id",
                rule: "must be a UUID in 8-4-4-4-12 hex form, such as 123e4567-e89b-12d3-a456-426614174000"
            )
        }
        self.uuid = uuid
    }

    /// The header value: canonical, lower case.
    public var description: String { self.uuid.uuidString.lowercased() }
}
