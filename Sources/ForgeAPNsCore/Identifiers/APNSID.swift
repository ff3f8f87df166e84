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
    package init(campaign: UUID, index: Int) {
        precondition(index >= 0 && index < 1 << 48, "a campaign index must be 0 ..< 2^48")
        var bytes = campaign.uuid
        withUnsafeMutableBytes(of: &bytes) { raw in
            for position in 0..<6 { raw[10 + position] = UInt8(truncatingIfNeeded: index >> (8 * (5 - position))) }
            raw[6] = (raw[6] & 0x0F) | 0x80  // version 8: custom
            raw[8] = (raw[8] & 0x3F) | 0x80  // variant 10
        }
        self.uuid = UUID(uuid: bytes)
    }

    /// The UUID's 16 bytes, in order.
    package var bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) {
        self.uuid.uuid
    }

    /// Parses the canonical form, in either case.
    /// - Throws: ``APNSValidationError/Code/badAPNSID`` when `string` is not a UUID.
    public init(_ string: String) throws(APNSValidationError) {
        guard let uuid = Self.parse(string.utf8) else {
            throw APNSValidationError(
                .badAPNSID,
                field: "apns-id",
                rule: "must be a UUID in 8-4-4-4-12 hex form, such as 123e4567-e89b-12d3-a456-426614174000"
            )
        }
        self.uuid = uuid
    }

    /// The header value: canonical, lower case.
    public var description: String {
        // By hand, into the string's own storage: Foundation's `uuidString` formats with `snprintf`
        // and upper case, then a copy to lower it; a campaign formats one per push.
        withUnsafeBytes(of: self.uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var written = 0
                for (position, byte) in bytes.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        text[written] = UInt8(ascii: "-")
                        written += 1
                    }
                    text[written] = Self.hexDigit(byte >> 4)
                    text[written + 1] = Self.hexDigit(byte & 0x0F)
                    written += 2
                }
                return written
            }
        }
    }

    @inline(__always)
    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") - 10 + value }

    /// The 8-4-4-4-12 form in either case, or nil.
    private static func parse(_ text: String.UTF8View) -> UUID? {
        guard text.count == 36 else { return nil }
        // A native string's bytes in place; a bridged one (rare) through a copy.
        return text.withContiguousStorageIfAvailable(Self.parse(bytes:)) ?? Array(text).withUnsafeBufferPointer(Self.parse(bytes:))
    }

    /// The 36 bytes of the 8-4-4-4-12 form, or nil: straight-line, two digits per output byte (the
    /// local server checks every `apns-id` a campaign sends, about 500,000 a second at full rate).
    private static func parse(bytes text: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard text.count == 36 else { return nil }
        var bytes = (UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0))
        let parsed = withUnsafeMutableBytes(of: &bytes) { raw -> Bool in
            var input = 0
            var invalid: UInt8 = 0
            for output in 0..<16 {
                // The dashes come before output bytes 4, 6, 8 and 10 (input positions 8, 13, 18, 23).
                if output == 4 || output == 6 || output == 8 || output == 10 {
                    guard text[input] == UInt8(ascii: "-") else { return false }
                    input += 1
                }
                let high = Self.nibble(text[input]), low = Self.nibble(text[input + 1])
                invalid |= high | low
                raw[output] = high << 4 | (low & 0x0F)
                input += 2
            }
            return invalid & 0xF0 == 0
        }
        return parsed ? UUID(uuid: bytes) : nil
    }

    /// A hex digit's value, or 0xFF for any other byte.
    @inline(__always)
    private static func nibble(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- (UInt8(ascii: "a") - 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte &- (UInt8(ascii: "A") - 10)
        default: 0xFF
        }
    }

    /// Whether `string` is this identifier, in either case (no `UUID` parsing, no allocation).
    public func matches(_ string: String) -> Bool { Self.parse(string.utf8) == self.uuid }
}
