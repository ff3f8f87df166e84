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
