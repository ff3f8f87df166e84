public import struct Foundation.Date

/// One push as the device receives it: what the local APNs server accepted, as plain values.
///
/// The device does not know the server. The loopback wiring turns each accepted request into a
/// `DevicePush` and calls ``SimulatedDevice/deliver(_:)``.
public struct DevicePush: Sendable, Equatable {
    /// The device token (or push-to-start / activity update token) the push was sent to, lower-case
    /// hex; empty for a broadcast.
    public var token: String
    /// The broadcast channel (`apns-channel-id`) of a broadcast; `nil` for a push to a token.
    public var channelID: String?
    /// The `apns-push-type` header (`alert`, `background`, `liveactivity`, ...).
    public var pushType: String
    /// The request's headers, names in lower case.
    public var headers: [String: String]
    /// The JSON payload as sent.
    public var payload: [UInt8]
    /// The `apns-id` the server answered with.
    public var apnsID: String
    /// The `apns-collapse-id` header, if any.
    public var collapseID: String?
    /// The environment the push was sent to, if known; `nil` matches a token of either environment.
    public var environment: DeviceEnvironment?
    /// When the server accepted the push.
    public var date: Date

    /// Creates a push.
    /// - Parameters:
    ///   - token: the token, in any case; it is stored in lower case.
    ///   - pushType: the `apns-push-type` header; `nil` (header absent) means `alert`.
    ///   - headers: the request's headers; names are lower-cased.
    ///   - payload: the JSON payload bytes.
    ///   - apnsID: the `apns-id`.
    ///   - collapseID: the `apns-collapse-id`, if any.
    ///   - environment: sandbox or production, if known.
    ///   - date: when the server accepted it.
    public init(
        token: String, pushType: String? = nil, headers: [String: String] = [:], payload: [UInt8], apnsID: String,
        collapseID: String? = nil, environment: DeviceEnvironment? = nil, date: Date
    ) {
        self.token = token.lowercased()
        self.channelID = nil
        self.pushType = pushType ?? "alert"
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.payload = payload
        self.apnsID = apnsID
        self.collapseID = collapseID
        self.environment = environment
        self.date = date
    }

    /// A broadcast on `channelID` (a `liveactivity` push to every subscribed Live Activity).
    /// - Parameters:
    ///   - channelID: the `apns-channel-id`.
    ///   - payload: the JSON payload bytes.
    ///   - apnsID: the `apns-request-id` the server answered with.
    ///   - date: when the server accepted it.
    public static func broadcast(channelID: String, payload: [UInt8], apnsID: String, date: Date) -> DevicePush {
        var push = DevicePush(token: "", pushType: "liveactivity", payload: payload, apnsID: apnsID, date: date)
        push.channelID = channelID
        return push
    }

    /// The identifier iOS gives the notification: `apns-collapse-id` if given, else `apns-id`.
    public var notificationIdentifier: String { self.collapseID ?? self.apnsID }
}

/// The APNs environment a device token belongs to, and the one a local APNs server plays
/// (`LocalAPNSConfiguration.Environment` is this type).
public enum DeviceEnvironment: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The development (sandbox) environment.
    case sandbox
    /// The production environment.
    case production

    public var description: String { self.rawValue }
}
