internal import Synchronization

/// `apns-id`s, `apns-unique-id`s and request ids the server makes up: UUID-shaped (version 4
/// layout), unique within the process by a counter and across processes by a random prefix.
/// Foundation's `UUID()` reads the kernel's random source and formats with `snprintf` on every
/// call: the largest single cost of a judged push before this.
enum GeneratedID {
    private static let prefix: UInt64 = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)
    private static let upperHex = Array("0123456789ABCDEF".utf8)
    private static let lowerHex = Array("0123456789abcdef".utf8)

    /// An upper-case id, as APNs generates `apns-id`.
    static func upper() -> String { Self.make(Self.upperHex) }

    /// A lower-case id, for `apns-unique-id`.
    static func lower() -> String { Self.make(Self.lowerHex) }

    private static func make(_ digits: [UInt8]) -> String {
        let sequence = Self.counter.wrappingAdd(1, ordering: .relaxed).newValue
        // Version 4 and RFC 4122 variant bits, so the result parses as a UUID everywhere.
        let high = (Self.prefix & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let low = (sequence & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, nibbles: Int, from shift: Int) {
                for n in 0..<nibbles {
                    buffer[index] = digits[Int((value >> UInt64(shift - 4 * n)) & 0xF)]
                    index += 1
                }
            }
            func dash() {
                buffer[index] = UInt8(ascii: "-")
                index += 1
            }
            put(high, nibbles: 8, from: 60)
            dash()
            put(high, nibbles: 4, from: 28)
            dash()
            put(high, nibbles: 4, from: 12)
            dash()
            put(low, nibbles: 4, from: 60)
            dash()
            put(low, nibbles: 12, from: 44)
            return index
        }
    }
}
