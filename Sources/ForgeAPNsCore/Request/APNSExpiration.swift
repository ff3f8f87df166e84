public import struct Foundation.Date

/// The `apns-expiration` header: how long APNs stores a notification it cannot deliver at once.
public struct APNSExpiration: Hashable, Sendable, CustomStringConvertible {
    /// Seconds since 1970, or `nil` for no header.
    public let secondsSince1970: Int?

    private init(seconds: Int?) { self.secondsSince1970 = seconds }

    /// No header: APNs applies its own storage policy.
    public static let none = APNSExpiration(seconds: nil)

    /// `0`: one delivery attempt, nothing stored.
    public static let immediately = APNSExpiration(seconds: 0)

    /// Stored and retried until `date` (best effort), in whole seconds rounded down.
    /// Dates before 1970 are sent as `0` (deliver once, never store).
    public static func at(_ date: Date) -> APNSExpiration {
        APNSExpiration(seconds: max(0, Int(date.timeIntervalSince1970.rounded(.down))))
    }

    /// An expiration at `seconds` since 1970.
    /// - Throws: ``APNSValidationError/Code/badExpiration`` when `seconds` is negative.
    public init(secondsSince1970 seconds: Int) throws(APNSValidationError) {
        guard seconds >= 0 else {
            throw APNSValidationError(
                .badExpiration,
                field: "apns-expiration",
                rule: "must be a non-negative number of seconds since 1970 (got \(seconds))"
            )
        }
        self.secondsSince1970 = seconds
    }

    /// Parses a header value such as `0` or `1760000000`.
    /// - Throws: ``APNSValidationError/Code/badExpiration`` unless `string` is a non-negative integer.
    public init(headerValue string: String) throws(APNSValidationError) {
        guard !string.isEmpty, string.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let seconds = Int(string) else {
            throw APNSValidationError(
                .badExpiration,
                field: "apns-expiration",
                rule: "must be a non-negative whole number of seconds since 1970, or 0 (got '\(string)')"
            )
        }
        self.secondsSince1970 = seconds
    }

    /// The header value, or `nil` when no header is sent.
    public var headerValue: String? { self.secondsSince1970.map { String($0) } }

    public var description: String { self.headerValue ?? "none" }
}
