/// The `apns-topic` header: the bundle id plus the suffix the push type requires.
///
/// Build it from a bundle id and a push type, so the suffix is always right:
/// ```swift
/// let topic = APNSTopic(bundleID: try APNSBundleID("com.example.app"), pushType: .liveactivity)
/// topic.rawValue  // "com.example.app.push-type.liveactivity"
/// ```
public struct APNSTopic: Hashable, Sendable, CustomStringConvertible {
    /// The header value.
    public let rawValue: String

    /// The topic for `pushType` on the app `bundleID`.
    ///
    /// For `mdm` the bundle id is used as given: an MDM topic comes from the push certificate.
    public init(bundleID: APNSBundleID, pushType: APNSPushType) {
        self.rawValue = bundleID.rawValue + (pushType.topicSuffix ?? "")
    }

    /// Parses a topic given by a person: either the bundle id (the suffix is added) or the full topic
    /// with the suffix that `pushType` needs.
    ///
    /// - Throws: ``APNSValidationError/Code/badTopic`` when the value is malformed or ends in the
    ///   suffix of another push type (for example `com.example.app.voip` for an `alert`).
    public init(_ string: String, pushType: APNSPushType) throws(APNSValidationError) {
        if let rule = APNSBundleID.brokenRule(string) {
            throw APNSValidationError(.badTopic, field: "apns-topic", rule: rule)
        }
        guard let ownSuffix = pushType.topicSuffix else {
            self.rawValue = string  // mdm: the certificate's topic, as given
            return
        }
        if !ownSuffix.isEmpty, string.hasSuffix(ownSuffix), string.utf8.count > ownSuffix.utf8.count {
            self.rawValue = string
            return
        }
        for other in APNSPushType.allCases where other != pushType {
            guard let suffix = other.topicSuffix, !suffix.isEmpty, string.hasSuffix(suffix) else { continue }
            let bundle = string.dropLast(suffix.count)
            throw APNSValidationError(
                .badTopic,
                field: "apns-topic",
                rule: "'\(string)' ends in '\(suffix)', the suffix of push type \(other); give the bundle id "
                    + "'\(bundle)' and the suffix for \(pushType) "
                    + (ownSuffix.isEmpty ? "(none)" : "('\(ownSuffix)')") + " is added"
            )
        }
        self.rawValue = string + ownSuffix
    }

    public var description: String { self.rawValue }
}
