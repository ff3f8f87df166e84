/// The `apns-priority` header.
///
/// - Important: `background` pushes must use ``consideringDevicePower``; Live Activities use
///   ``immediately`` or ``consideringDevicePower`` (only 10 counts against the ActivityKit budget).
public enum APNSPriority: Int, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// `10`: deliver now. APNs' default when the header is absent.
    case immediately = 10
    /// `5`: deliver according to the device's power state; may be grouped.
    case consideringDevicePower = 5
    /// `1`: device power first; never wakes the device.
    case prioritizingDevicePower = 1

    /// Parses the header value.
    /// - Throws: ``APNSValidationError/Code/badPriority`` unless `string` is `10`, `5` or `1`.
    public init(headerValue string: String) throws(APNSValidationError) {
        guard let number = Int(string), let priority = APNSPriority(rawValue: number) else {
            throw APNSValidationError(.badPriority, field: "apns-priority", rule: "must be 10, 5 or 1 (got '\(string)')")
        }
        self = priority
    }

    /// The header value.
    public var headerValue: String { String(self.rawValue) }

    public var description: String { self.headerValue }
}
