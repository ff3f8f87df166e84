public import ForgeAPNsCore
internal import Foundation

/// What an app posts to its backend about its Live Activities, as JSON:
///
/// ```json
/// {"kind": "push_to_start_token", "installation": "i-42", "bundle_id": "com.example.shop",
///  "attributes_type": "OrderAttributes", "token": "7c1d…", "sequence": 3, "environment": "production"}
/// {"kind": "update_token", "activity": "order-17", "token": "80a4…", "sequence": 4}
/// {"kind": "ended", "activity": "order-17", "sequence": 5}
/// ```
///
/// `push_to_start_token` needs `installation`, `bundle_id`, `attributes_type` and `token`, and
/// takes `"channels": true` from an app that can start an activity on a broadcast channel (iOS 18
/// and a build that handles `input-push-channel`: a start in a group then subscribes it to the
/// group's channel);
/// `update_token` needs `activity` and `token` (and `bundle_id` and `attributes_type` for an
/// activity the app started itself, which the manager then registers; `installation` and `group`
/// optionally: the group the activity then belongs to);
/// `ended` needs `activity` (and takes the ended activity's update token as `token`). `sequence` (a number the app increases with each report, or its
/// timestamp in milliseconds) orders reports: one older than a report already applied is refused
/// (field `sequence`) and changes nothing. `environment` is `sandbox` or `production` (the default).
public struct ActivityReportJSON: Codable, Hashable, Sendable {
    public var kind: String
    public var installation: String?
    public var bundleID: String?
    public var attributesType: String?
    public var activity: String?
    public var token: String?
    public var sequence: Int64?
    public var environment: String?
    public var channels: Bool?
    public var group: String?

    enum CodingKeys: String, CodingKey {
        case kind, installation, activity, token, sequence, environment, channels, group
        case bundleID = "bundle_id"
        case attributesType = "attributes_type"
    }

    public init(
        kind: String, installation: String? = nil, bundleID: String? = nil, attributesType: String? = nil, activity: String? = nil,
        token: String? = nil, sequence: Int64? = nil, environment: String? = nil, channels: Bool? = nil, group: String? = nil
    ) {
        self.group = group
        self.channels = channels
        self.kind = kind
        self.installation = installation
        self.bundleID = bundleID
        self.attributesType = attributesType
        self.activity = activity
        self.token = token
        self.sequence = sequence
        self.environment = environment
    }
}

/// A validated report (see ``ActivityReportJSON`` for the JSON an app posts).
public enum ActivityReport: Hashable, Sendable {
    /// The app's push-to-start token for an attributes type (at install, and after each rotation);
    /// `channels`: whether the app can start an activity on a broadcast channel.
    case pushToStartToken(PushToStartKey, token: DeviceToken, sequence: Int64?, environment: ActivityEnvironment, channels: Bool = false)
    /// An activity's update token (it may change while the activity runs). `registration` is given
    /// for an activity the app started itself: the manager registers it when it does not know it.
    case updateToken(LiveActivityID, token: DeviceToken, sequence: Int64?, registration: Registration?)
    /// The activity ended on the device (dismissed, or ended by iOS). `token`, the update token of
    /// the activity that ended, tells an end of the current activity from that of one a renewal
    /// replaced (both are the same id to the app).
    case ended(LiveActivityID, sequence: Int64?, token: DeviceToken? = nil)

    /// What the manager needs to register an activity it did not start.
    public struct Registration: Hashable, Sendable {
        public var bundleID: APNSBundleID
        public var attributesType: String
        public var installation: InstallationID?
        /// The group it joins (its group's updates reach it through its token).
        public var group: LiveActivityGroupID?

        public init(
            bundleID: APNSBundleID, attributesType: String, installation: InstallationID? = nil, group: LiveActivityGroupID? = nil
        ) throws(LiveActivityError) {
            try checkAttributesType(attributesType)
            self.bundleID = bundleID
            self.attributesType = attributesType
            self.installation = installation
            self.group = group
        }
    }

    /// The report's sequence, if it has one.
    public var sequence: Int64? {
        switch self {
        case .pushToStartToken(_, _, let sequence, _, _), .updateToken(_, _, let sequence, _), .ended(_, let sequence, _): sequence
        }
    }

    /// Validates the JSON shape.
    /// - Throws: ``LiveActivityError/Code/invalidInput`` naming the first field at fault.
    public init(_ json: ActivityReportJSON) throws(LiveActivityError) {
        func required(_ value: String?, _ field: String) throws(LiveActivityError) -> String {
            guard let value, !value.isEmpty else {
                throw LiveActivityError(.invalidInput, field: field, rule: "is required for a \(json.kind) report")
            }
            return value
        }
        func token(_ value: String?) throws(LiveActivityError) -> DeviceToken {
            let hex = try required(value, "token")
            do {
                return try DeviceToken(hex)
            } catch {
                throw LiveActivityError(.invalidInput, field: "token", rule: error.rule)
            }
        }
        func bundleID(_ value: String) throws(LiveActivityError) -> APNSBundleID {
            do {
                return try APNSBundleID(value)
            } catch {
                throw LiveActivityError(.invalidInput, field: "bundle_id", rule: error.rule)
            }
        }
        if let sequence = json.sequence, sequence < 0 {
            throw LiveActivityError(.invalidInput, field: "sequence", rule: "must not be negative (got \(sequence))")
        }
        switch json.kind {
        case "push_to_start_token":
            let installation = try InstallationID(try required(json.installation, "installation"))
            let bundle = try bundleID(try required(json.bundleID, "bundle_id"))
            let type = try required(json.attributesType, "attributes_type")
            try checkAttributesType(type)
            guard let environment = ActivityEnvironment(rawValue: json.environment ?? "production") else {
                throw LiveActivityError(.invalidInput, field: "environment", rule: "must be sandbox or production (got \(json.environment ?? ""))")
            }
            self = .pushToStartToken(
                PushToStartKey(installation: installation, bundleID: bundle, attributesType: type), token: try token(json.token),
                sequence: json.sequence, environment: environment, channels: json.channels ?? false
            )
        case "update_token":
            let activity = try LiveActivityID(try required(json.activity, "activity"))
            let token = try token(json.token)
            var registration: Registration?
            if json.bundleID != nil || json.attributesType != nil || json.group != nil {
                registration = try Registration(
                    bundleID: try bundleID(try required(json.bundleID, "bundle_id")),
                    attributesType: try required(json.attributesType, "attributes_type"),
                    installation: try json.installation.map { value throws(LiveActivityError) in try InstallationID(value) },
                    group: try json.group.map { value throws(LiveActivityError) in try LiveActivityGroupID(value) }
                )
            }
            self = .updateToken(activity, token: token, sequence: json.sequence, registration: registration)
        case "ended":
            let activity = try LiveActivityID(try required(json.activity, "activity"))
            self = .ended(activity, sequence: json.sequence, token: try json.token.map { value throws(LiveActivityError) in try token(value) })
        default:
            throw LiveActivityError(.invalidInput, field: "kind", rule: "must be push_to_start_token, update_token or ended (got \(json.kind))")
        }
    }

    /// Decodes and validates a report posted as JSON (`Foundation.JSONDecoder`, as an app's
    /// `JSONEncoder` wrote it).
    /// - Throws: ``LiveActivityError/Code/invalidInput``: `body` for JSON that is not the shape,
    ///   else the field at fault.
    public init(json body: some Collection<UInt8>) throws(LiveActivityError) {
        let decoded: ActivityReportJSON
        do {
            decoded = try JSONDecoder().decode(ActivityReportJSON.self, from: Data(body))
        } catch let DecodingError.keyNotFound(key, _) {
            throw LiveActivityError(.invalidInput, field: key.stringValue, rule: "is required")
        } catch let DecodingError.typeMismatch(_, context) {
            throw LiveActivityError(.invalidInput, field: context.codingPath.map(\.stringValue).joined(separator: "."), rule: "has the wrong type")
        } catch {
            throw LiveActivityError(.invalidInput, field: "body", rule: "must be a JSON object with a kind")
        }
        try self.init(decoded)
    }
}
