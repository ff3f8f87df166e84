/// An input that APNs would reject, found before anything was sent.
///
/// Every validation error names the ``field`` (a header such as `apns-collapse-id`, or a payload key
/// such as `aps.timestamp`) and the ``rule`` it broke, in words a person can act on. Errors compare
/// equal when their ``code`` is equal, so tests and callers can match on the kind of problem without
/// depending on the wording.
///
/// ```swift
/// do {
///     _ = try APNSCollapseID(String(repeating: "x", count: 65))
/// } catch let error as APNSValidationError where error.code == .badCollapseID {
///     print(error.field, error.rule)   // apns-collapse-id  at most 64 bytes of UTF-8 (got 65)
/// }
/// ```
public struct APNSValidationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of validation failure. New codes may be added in minor releases.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case badDeviceToken
            case badBundleID
            case badTopic
            case badCollapseID
            case badAPNSID
            case badKeyID
            case badTeamID
            case badChannelID
            case badPushType
            case badPriority
            case badExpiration
            case badPayload
            case payloadTooLarge
            case badConfiguration
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The device token is not even-length hex of an accepted length.
        public static let badDeviceToken = Code(.badDeviceToken)
        /// The bundle id is empty or has characters a bundle id cannot have.
        public static let badBundleID = Code(.badBundleID)
        /// The `apns-topic` is malformed, or carries the suffix of another push type.
        public static let badTopic = Code(.badTopic)
        /// The `apns-collapse-id` is empty or longer than 64 bytes.
        public static let badCollapseID = Code(.badCollapseID)
        /// The `apns-id` is not a UUID.
        public static let badAPNSID = Code(.badAPNSID)
        /// The key id is not 10 characters of A–Z and 0–9.
        public static let badKeyID = Code(.badKeyID)
        /// The team id is not 10 characters of A–Z and 0–9.
        public static let badTeamID = Code(.badTeamID)
        /// The broadcast channel id is not base64.
        public static let badChannelID = Code(.badChannelID)
        /// The push type is not one of the documented values.
        public static let badPushType = Code(.badPushType)
        /// The priority is not 10, 5 or 1, or not allowed for the push type.
        public static let badPriority = Code(.badPriority)
        /// The expiration is not a non-negative whole number of seconds.
        public static let badExpiration = Code(.badExpiration)
        /// The payload is not what the push type needs (not a JSON object, a missing key, a wrong type).
        public static let badPayload = Code(.badPayload)
        /// The encoded payload is larger than the push type's limit.
        public static let payloadTooLarge = Code(.payloadTooLarge)
        /// A configuration value is outside its allowed range (for example the token refresh age).
        public static let badConfiguration = Code(.badConfiguration)

        public var description: String { self.base.rawValue }
    }

    /// What kind of problem this is.
    public var code: Code
    /// The header, payload key or identifier at fault, as it appears on the wire where it has a wire name.
    public var field: String
    /// The rule the value broke, with the observed value's size or shape where that helps.
    public var rule: String
    /// Where the error was thrown.
    public var file: String
    /// Where the error was thrown.
    public var line: Int

    /// Creates an error; `file` and `line` default to the caller's location.
    public init(_ code: Code, field: String, rule: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.field = field
        self.rule = rule
        self.file = file
        self.line = line
    }

    public var description: String { "\(self.field): \(self.rule)" }

    /// A short, bounded string that is safe as a metrics label.
    public var shortDescription: String { self.code.description }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
}
