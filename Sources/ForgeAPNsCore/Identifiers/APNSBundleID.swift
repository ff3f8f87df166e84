/// An app's bundle identifier, such as `com.example.app`: the base of every `apns-topic`.
///
/// Give the bundle id, never a topic with a push-type suffix: ``APNSTopic`` adds the suffix that the
/// push type needs.
/// - Important: letters, digits, `-` and `.` only, in non-empty dot-separated parts.
public struct APNSBundleID: Hashable, Sendable, CustomStringConvertible {
    /// The bundle id as given.
    public let rawValue: String

    /// Validates a bundle id.
    /// - Throws: ``APNSValidationError/Code/badBundleID`` naming the rule that failed.
    public init(_ rawValue: String) throws(APNSValidationError) {
        if let rule = APNSBundleID.brokenRule(rawValue) {
            throw APNSValidationError(.badBundleID, field: "bundle id", rule: rule)
        }
        self.rawValue = rawValue
    }

    public var description: String { self.rawValue }

    /// The longest identifier accepted; a sanity bound on a header value.
    static let maximumLength = 255

    /// The rule `value` breaks as a bundle id or topic, or `nil` when it is well formed.
    static func brokenRule(_ value: String) -> String? {
        let bytes = value.utf8
        if bytes.isEmpty { return "must not be empty" }
        if bytes.count > maximumLength { return "must be at most \(maximumLength) characters (got \(bytes.count))" }
        var previous = UInt8(ascii: ".")
        for (index, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                break
            case UInt8(ascii: "."):
                if previous == UInt8(ascii: ".") {
                    return index == 0 ? "must not start with '.'" : "must not contain an empty part ('..')"
                }
            default:
                return "may contain only letters, digits, '-' and '.' (found \(DeviceToken.describe(byte)) at position \(index + 1))"
            }
            previous = byte
        }
        if previous == UInt8(ascii: ".") { return "must not end with '.'" }
        return nil
    }
}
