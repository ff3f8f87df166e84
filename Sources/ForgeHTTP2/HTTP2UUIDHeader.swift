/// A header whose value is a UUID, written in its canonical lower-case form (8-4-4-4-12) straight
/// into the request's header block, no string made for it: a push's own `apns-id`, one per push.
/// Never indexed: a value new on every push would only push the repeating fields out of both HPACK
/// tables.
package struct HTTP2UUIDHeader: Hashable, Sendable {
    /// The name, lower case.
    package var name: StaticString
    /// The UUID's 16 bytes, big-endian: the first 8 and the last 8.
    package var high: UInt64
    package var low: UInt64

    /// The bytes of a UUID (`uuid_t`, or `UUID.uuid`), in order.
    package init(_ name: StaticString, bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) {
        self.name = name
        var high: UInt64 = 0
        var low: UInt64 = 0
        withUnsafeBytes(of: bytes) { raw in
            for index in 0..<8 { high = high << 8 | UInt64(raw[index]) }
            for index in 8..<16 { low = low << 8 | UInt64(raw[index]) }
        }
        self.high = high
        self.low = low
    }

    /// The value's length: 32 hex digits and 4 dashes.
    static let valueLength = 36

    /// Writes the value into `text` (at least ``valueLength`` bytes): 8-4-4-4-12 hex digits, each
    /// group written from its end, without a branch per digit (a campaign writes one per push).
    func writeValue(into text: UnsafeMutablePointer<UInt8>) {
        Self.writeHex(self.high >> 32, digits: 8, into: text)
        text[8] = UInt8(ascii: "-")
        Self.writeHex(self.high >> 16, digits: 4, into: text + 9)
        text[13] = UInt8(ascii: "-")
        Self.writeHex(self.high, digits: 4, into: text + 14)
        text[18] = UInt8(ascii: "-")
        Self.writeHex(self.low >> 48, digits: 4, into: text + 19)
        text[23] = UInt8(ascii: "-")
        Self.writeHex(self.low, digits: 12, into: text + 24)
    }

    /// The low `digits` nibbles of `value` as lower-case hex, most significant first.
    @inline(__always)
    private static func writeHex(_ value: UInt64, digits: Int, into text: UnsafeMutablePointer<UInt8>) {
        var value = value
        for position in stride(from: digits - 1, through: 0, by: -1) {
            let nibble = UInt8(truncatingIfNeeded: value & 0x0F)
            // 0-9 → "0"-"9", 10-15 → "a"-"f": 39 more past 9 (the mask is 0xFF then, else 0).
            text[position] = nibble &+ 48 &+ (39 & (0 &- ((nibble &+ 6) >> 4)))
            value >>= 4
        }
    }

    /// The value as text, for messages and tests.
    package var value: String {
        String(unsafeUninitializedCapacity: Self.valueLength) { text in
            self.writeValue(into: text.baseAddress!)
            return Self.valueLength
        }
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.name.description == rhs.name.description && lhs.high == rhs.high && lhs.low == rhs.low
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.name.description)
        hasher.combine(self.high)
        hasher.combine(self.low)
    }
}
