/// The 10-character identifier of a provider-token signing key (the `kid` of the JWT header).
///
/// Apple prints it beside the key and in the file name `AuthKey_<KEYID>.p8`.
/// - Important: exactly 10 characters, each an upper-case letter A–Z or a digit 0–9.
public struct APNSKeyID: Hashable, Sendable, CustomStringConvertible {
    /// The identifier as sent in the JWT header.
    public let rawValue: String

    /// Validates `rawValue`.
    /// - Throws: ``APNSValidationError/Code/badKeyID`` naming the rule that failed.
    public init(_ rawValue: String) throws(APNSValidationError) {
        guard isAppleIdentifier(rawValue) else {
            throw APNSValidationError(
                .badKeyID,
                field: "key id",
                rule: appleIdentifierRule(rawValue)
            )
        }
        self.rawValue = rawValue
    }

    public var description: String { self.rawValue }
}

/// The 10-character identifier of an Apple developer team (the `iss` claim of the JWT).
///
/// - Important: exactly 10 characters, each an upper-case letter A–Z or a digit 0–9.
public struct APNSTeamID: Hashable, Sendable, CustomStringConvertible {
    /// The identifier as sent in the JWT claims.
    public let rawValue: String

    /// Validates `rawValue`.
    /// - Throws: ``APNSValidationError/Code/badTeamID`` naming the rule that failed.
    public init(_ rawValue: String) throws(APNSValidationError) {
        guard isAppleIdentifier(rawValue) else {
            throw APNSValidationError(
                .badTeamID,
                field: "team id",
                rule: appleIdentifierRule(rawValue)
            )
        }
        self.rawValue = rawValue
    }

    public var description: String { self.rawValue }
}

private func isAppleIdentifier(_ value: String) -> Bool {
    var count = 0
    for byte in value.utf8 {
        count += 1
        guard (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        else { return false }
    }
    return count == 10
}

private func appleIdentifierRule(_ value: String) -> String {
    let count = value.count
    if count != 10 {
        return "must be exactly 10 characters (got \(count))"
    }
    return "must contain only upper-case letters A-Z and digits 0-9"
}
