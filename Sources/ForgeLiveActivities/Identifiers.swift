/// The backend's own id for a Live Activity (`order-17`): 1 to 64 bytes of UTF-8 without control
/// characters. It is also the start's `apns-collapse-id`, whose limit is the same 64 bytes.
public struct LiveActivityID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    /// - Throws: ``LiveActivityError/Code/invalidInput`` naming `activity`.
    public init(_ rawValue: String) throws(LiveActivityError) {
        try checkName(rawValue, field: "activity")
        self.rawValue = rawValue
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { self.rawValue }
}

/// The backend's id for one install of an app (a user's phone): 1 to 64 bytes of UTF-8 without
/// control characters.
public struct InstallationID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    /// - Throws: ``LiveActivityError/Code/invalidInput`` naming `installation`.
    public init(_ rawValue: String) throws(LiveActivityError) {
        try checkName(rawValue, field: "installation")
        self.rawValue = rawValue
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { self.rawValue }
}

/// The backend's id for a group of activities that share every update (a match: `match-42`):
/// 1 to 64 bytes of UTF-8 without control characters.
public struct LiveActivityGroupID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String

    /// - Throws: ``LiveActivityError/Code/invalidInput`` naming `group`.
    public init(_ rawValue: String) throws(LiveActivityError) {
        try checkName(rawValue, field: "group")
        self.rawValue = rawValue
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { self.rawValue }
}

/// The Swift type name of an activity's attributes (`aps.attributes-type`): 1 to 128 bytes without
/// control characters.
func checkAttributesType(_ name: String) throws(LiveActivityError) {
    guard !name.isEmpty else { throw LiveActivityError(.invalidInput, field: "attributes_type", rule: "must not be empty") }
    guard name.utf8.count <= 128 else {
        throw LiveActivityError(.invalidInput, field: "attributes_type", rule: "must be at most 128 bytes (got \(name.utf8.count))")
    }
    guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
        throw LiveActivityError(.invalidInput, field: "attributes_type", rule: "must not contain control characters")
    }
}

private func checkName(_ value: String, field: String) throws(LiveActivityError) {
    guard !value.isEmpty else { throw LiveActivityError(.invalidInput, field: field, rule: "must not be empty") }
    guard value.utf8.count <= 64 else {
        throw LiveActivityError(.invalidInput, field: field, rule: "must be at most 64 bytes of UTF-8 (got \(value.utf8.count))")
    }
    // Printable ASCII, the usual id, needs no look at Unicode's properties.
    if value.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) { return }
    guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
        throw LiveActivityError(.invalidInput, field: field, rule: "must not contain control characters")
    }
}
