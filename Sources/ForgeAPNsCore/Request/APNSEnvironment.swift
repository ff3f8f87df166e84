/// Where requests go: Apple's production or sandbox service, or any other APNs-compatible server
/// (such as ForgePush's local server).
///
/// - Important: device tokens belong to one environment. A token from a development build is only
///   valid in ``sandbox``.
public struct APNSEnvironment: Hashable, Sendable, CustomStringConvertible {
    /// The host name sent as `:authority` and SNI.
    public let host: String
    /// The TCP port.
    public let port: Int

    private let name: String?

    private init(name: String?, host: String, port: Int) {
        self.name = name
        self.host = host
        self.port = port
    }

    /// `api.push.apple.com:443`: apps from the App Store, TestFlight and ad-hoc builds.
    public static let production = APNSEnvironment(name: "production", host: "api.push.apple.com", port: 443)

    /// `api.sandbox.push.apple.com:443`: apps built for development.
    public static let sandbox = APNSEnvironment(name: "sandbox", host: "api.sandbox.push.apple.com", port: 443)

    /// Any other endpoint, such as `127.0.0.1` and the port of a local test server.
    public static func custom(host: String, port: Int) -> APNSEnvironment {
        APNSEnvironment(name: nil, host: host, port: port)
    }

    /// Where the broadcast channel API is: `api-manage-broadcast.push.apple.com:2196` for
    /// production, `api-manage-broadcast.sandbox.push.apple.com:2195` for sandbox, the same endpoint
    /// for a custom one (the local server serves both).
    public var channelManagement: APNSEnvironment {
        switch self.name {
        case "production": return APNSEnvironment(name: "production channels", host: "api-manage-broadcast.push.apple.com", port: 2196)
        case "sandbox":
            return APNSEnvironment(name: "sandbox channels", host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)
        default: return self
        }
    }

    /// The `:authority` value: the host, with the port when it is not 443 (IPv6 literals in brackets).
    public var authority: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return self.port == 443 ? host : "\(host):\(self.port)"
    }

    public var description: String { self.name ?? self.authority }
}
