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

    /// The other port Apple serves APNs on (production and sandbox), for networks that block 443 outbound.
    public static let alternatePort = 2197

    /// This environment on `port`: Apple's hosts serve 443 and ``alternatePort`` (2197); a custom
    /// endpoint any port 1-65535. Channel management stays where it was (Apple's hosts keep their own ports).
    ///
    /// ```swift
    /// let environment = try APNSEnvironment.production.port(APNSEnvironment.alternatePort)
    /// ```
    /// - Throws: ``APNSValidationError`` (`badConfiguration`, field `port`) for another port.
    public func port(_ port: Int) throws(APNSValidationError) -> APNSEnvironment {
        if self.name != nil, port != 443, port != Self.alternatePort {
            throw APNSValidationError(
                .badConfiguration, field: "port", rule: "\(self.host) serves APNs on 443 and \(Self.alternatePort) only (got \(port))"
            )
        }
        guard (1...65_535).contains(port) else {
            throw APNSValidationError(.badConfiguration, field: "port", rule: "must be 1-65535 (got \(port))")
        }
        return APNSEnvironment(name: self.name, host: self.host, port: port)
    }

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

    public var description: String {
        guard let name else { return self.authority }
        return self.port == 443 || self.name?.hasSuffix("channels") == true ? name : "\(name) (port \(self.port))"
    }
}
