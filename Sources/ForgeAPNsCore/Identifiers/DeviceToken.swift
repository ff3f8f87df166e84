/// The hex-encoded token APNs issued to one app on one device.
///
/// Tokens are normalised to lower-case hex, the form APNs documents. Their length varies (Apple says
/// not to assume 32 bytes; simulator and newer tokens are longer), so the accepted range is a
/// parameter with a generous default.
///
/// - Important: a token belongs to one environment. A sandbox token sent to production is answered
///   with `BadDeviceToken`.
public struct DeviceToken: Hashable, Sendable, CustomStringConvertible {
    /// The accepted lengths in hex characters when no other range is given: 32 to 100 bytes.
    public static let defaultAllowedLengths: ClosedRange<Int> = 64...200

    /// The token as lower-case hex, as it appears in `:path`.
    public let hexString: String

    /// Validates and normalises a hex token.
    /// - Parameters:
    ///   - hexString: the token as hex; upper-case digits are accepted and lowered.
    ///   - allowedLengths: the accepted number of hex characters.
    /// - Throws: ``APNSValidationError/Code/badDeviceToken`` naming the rule that failed.
    public init(_ hexString: String, allowedLengths: ClosedRange<Int> = Self.defaultAllowedLengths)
        throws(APNSValidationError)
    {
        // A bulk send parses every token: scan the contiguous UTF-8 directly when there is one.
        let scanned = hexString.utf8.withContiguousStorageIfAvailable { Self.scan($0) } ?? Self.scan(hexString.utf8)
        let needsLowering = scanned.needsLowering
        let count = scanned.count
        if let (position, byte) = scanned.firstBad {
            throw APNSValidationError(
                .badDeviceToken,
                field: "device token",
                rule: "must contain only hex digits 0-9 and a-f (found \(Self.describe(byte)) at position \(position + 1))"
            )
        }
        guard count % 2 == 0 else {
            throw APNSValidationError(
                .badDeviceToken,
                field: "device token",
                rule: "must have an even number of hex digits (got \(count))"
            )
        }
        guard allowedLengths.contains(count) else {
            throw APNSValidationError(
                .badDeviceToken,
                field: "device token",
                rule: "must be \(allowedLengths.lowerBound) to \(allowedLengths.upperBound) hex digits long (got \(count))"
            )
        }
        self.hexString = needsLowering ? hexString.lowercased() : hexString
    }

    /// Creates a token from the raw bytes the device reported (as `Data` from
    /// `didRegisterForRemoteNotificationsWithDeviceToken`).
    /// - Throws: ``APNSValidationError/Code/badDeviceToken`` when the length is outside `allowedLengths`.
    public init(bytes: some Collection<UInt8>, allowedLengths: ClosedRange<Int> = Self.defaultAllowedLengths)
        throws(APNSValidationError)
    {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0f)])
        }
        try self.init(String(decoding: hex, as: UTF8.self), allowedLengths: allowedLengths)
    }

    public var description: String { self.hexString }

    /// The byte count, whether upper-case digits occur, and the first byte that is not a hex digit.
    @inline(__always)
    private static func scan<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> (needsLowering: Bool, count: Int, firstBad: (Int, UInt8)?) {
        var needsLowering = false
        var count = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"):
                break
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                needsLowering = true
            default:
                return (needsLowering, count, (count, byte))
            }
            count += 1
        }
        return (needsLowering, count, nil)
    }

    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7f {
            return "'\(Character(Unicode.Scalar(byte)))'"
        }
        return "byte 0x\(String(byte, radix: 16))"
    }
}
