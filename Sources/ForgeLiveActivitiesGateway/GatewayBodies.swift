internal import ForgeAPNsCore
internal import ForgeLiveActivities
internal import Foundation

/// The JSON bodies of the activity routes, read strictly: an unknown field, a wrong type or a
/// missing field is a 400 naming it, before anything is stored or sent.
struct GatewayBody {
    private let fields: [String: CodableJSON]

    /// Parses `bytes` as one JSON object whose keys are all in `allowed`.
    init(_ bytes: [UInt8], allowed: [String]) throws(GatewayFailure) {
        let value: CodableJSON
        do {
            value = try CodableJSON(parsing: bytes)
        } catch {
            throw GatewayFailure.invalid("body", "must be a JSON object: \(CodableJSON.describe(error))")
        }
        guard case .object(let fields) = value else { throw GatewayFailure.invalid("body", "must be a JSON object ({…})") }
        if let unknown = fields.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw GatewayFailure.invalid(unknown, "is not a field of this request (fields: \(allowed.joined(separator: ", ")))")
        }
        self.fields = fields
    }

    /// A field's value, `nil` when absent or null.
    private func value(_ name: String) -> CodableJSON? {
        guard let value = self.fields[name], value != .null else { return nil }
        return value
    }

    private func required(_ name: String) throws(GatewayFailure) -> CodableJSON {
        guard let value = self.value(name) else { throw GatewayFailure.invalid(name, "is required") }
        return value
    }

    func string(_ name: String) throws(GatewayFailure) -> String {
        guard case .string(let text) = try self.required(name) else { throw GatewayFailure.invalid(name, "must be a string") }
        return text
    }

    /// A JSON object (a content state, attributes), required or optional.
    func object(_ name: String, required: Bool = true) throws(GatewayFailure) -> CodableJSON? {
        guard let value = required ? try self.required(name) : self.value(name) else { return nil }
        guard case .object = value else { throw GatewayFailure.invalid(name, "must be a JSON object ({…})") }
        return value
    }

    /// An optional string field.
    func optionalString(_ name: String) throws(GatewayFailure) -> String? {
        guard let value = self.value(name) else { return nil }
        guard case .string(let text) = value else { throw GatewayFailure.invalid(name, "must be a string") }
        return text
    }

    /// An optional date as seconds since 1970 (a JSON number, not a string).
    func secondsSince1970(_ name: String) throws(GatewayFailure) -> Date? {
        let seconds: Double
        switch self.value(name) {
        case nil: return nil
        case .int(let value): seconds = Double(value)
        case .uint(let value): seconds = Double(value)
        case .double(let value): seconds = value
        case .string: throw GatewayFailure.invalid(name, "must be a number of seconds since 1970, not a string (0: at once)")
        default: throw GatewayFailure.invalid(name, "must be a number of seconds since 1970 (0: at once)")
        }
        guard seconds.isFinite, seconds >= 0 else { throw GatewayFailure.invalid(name, "must be a number of seconds since 1970, not negative") }
        return Date(timeIntervalSince1970: seconds)
    }

    /// A nested object's fields, read the same way.
    func nested(_ name: String, allowed: [String]) throws(GatewayFailure) -> GatewayBody {
        guard case .object(let fields) = try self.required(name) else { throw GatewayFailure.invalid(name, "must be a JSON object ({…})") }
        if let unknown = fields.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw GatewayFailure.invalid("\(name).\(unknown)", "is not a field of \(name) (fields: \(allowed.joined(separator: ", ")))")
        }
        return GatewayBody(fields: fields.mapKeys(prefix: name))
    }

    private init(fields: [String: CodableJSON]) {
        self.fields = fields
    }
}

extension Dictionary where Key == String {
    /// The keys as `prefix.key`, so that a nested field's error names its path.
    fileprivate func mapKeys(prefix: String) -> [String: Value] {
        Dictionary(uniqueKeysWithValues: self.map { ("\(prefix).\($0.key)", $0.value) })
    }
}

/// `POST /v1/activities/{id}/start`.
struct StartRequest {
    static let fields = ["installation", "bundle_id", "attributes_type", "attributes", "content_state", "alert", "group"]
    var installation: InstallationID
    var bundleID: APNSBundleID
    var attributesType: String
    var attributes: CodableJSON
    var contentState: CodableJSON
    var alert: APNSLiveActivityAlert
    var group: LiveActivityGroupID?

    init(_ bytes: [UInt8]) throws(GatewayFailure) {
        let body = try GatewayBody(bytes, allowed: Self.fields)
        let installation = try body.string("installation")
        do throws(LiveActivityError) { self.installation = try InstallationID(installation) } catch { throw GatewayFailure(error) }
        let bundle = try body.string("bundle_id")
        do throws(APNSValidationError) { self.bundleID = try APNSBundleID(bundle) } catch { throw GatewayFailure.invalid("bundle_id", error.rule) }
        self.attributesType = try body.string("attributes_type")
        self.attributes = try body.object("attributes")!
        self.contentState = try body.object("content_state")!
        let alert = try body.nested("alert", allowed: ["title", "body"])
        self.alert = APNSLiveActivityAlert(title: .plain(try alert.string("alert.title")), body: .plain(try alert.optionalString("alert.body") ?? ""))
        if let group = try body.optionalString("group") {
            do throws(LiveActivityError) { self.group = try LiveActivityGroupID(group) } catch { throw GatewayFailure.invalid("group", error.rule) }
        }
    }
}

/// `POST /v1/activities/{id}/update` and `POST /v1/groups/{group}/update`.
struct UpdateRequest {
    static let fields = ["content_state", "importance"]
    var contentState: CodableJSON
    var importance: UpdateImportance

    init(_ bytes: [UInt8]) throws(GatewayFailure) {
        let body = try GatewayBody(bytes, allowed: Self.fields)
        self.contentState = try body.object("content_state")!
        switch try body.optionalString("importance") ?? "routine" {
        case "routine": self.importance = .routine
        case "alerting": self.importance = .alerting
        default: throw GatewayFailure.invalid("importance", "must be routine (apns-priority 5) or alerting (10 within the activity's budget)")
        }
    }
}

/// `POST /v1/activities/{id}/end` and `POST /v1/groups/{group}/end`.
struct EndRequest {
    static let fields = ["content_state", "dismissal_date"]
    var contentState: CodableJSON?
    var dismissalDate: Date?

    init(_ bytes: [UInt8]) throws(GatewayFailure) {
        let body = try GatewayBody(bytes, allowed: Self.fields)
        self.contentState = try body.object("content_state", required: false)
        self.dismissalDate = try body.secondsSince1970("dismissal_date")
    }
}
