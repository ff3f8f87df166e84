/// The `apns-collapse-id`: notifications with the same value are shown as one on the device.
/// - Important: 1 to 64 bytes of UTF-8, with no control characters.
public struct APNSCollapseID: Hashable, Sendable, CustomStringConvertible {
    /// The most bytes APNs accepts; longer values are answered with `BadCollapseId`.
    public static let maximumByteCount = 64

    /// The value as sent in the header.
    public let rawValue: String

    /// Validates a collapse id.
    /// - Throws: ``APNSValidationError/Code/badCollapseID`` naming the rule and the size.
    public init(_ rawValue: String) throws(APNSValidationError) {
        let count = rawValue.utf8.count
        guard count > 0 else {
            throw APNSValidationError(.badCollapseID, field: "apns-collapse-id", rule: "must not be empty")
        }
        guard count <= Self.maximumByteCount else {
            throw APNSValidationError(
                .badCollapseID,
                field: "apns-collapse-id",
                rule: "must be at most \(Self.maximumByteCount) bytes of UTF-8 (got \(count))"
            )
        }
        guard !rawValue.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
            throw APNSValidationError(
                .badCollapseID,
                field: "apns-collapse-id",
                rule: "must not contain control characters such as CR or LF"
            )
        }
        self.rawValue = rawValue
    }

    public var description: String { self.rawValue }
}
