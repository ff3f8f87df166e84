import Foundation

/// An outbound proxy a client connection tunnels through: HTTP `CONNECT` or SOCKS5.
///
/// TLS runs end to end through the tunnel: the proxy sees the target's host and port, never the
/// requests; SNI and certificate checks are for the target, not the proxy. The password never
/// appears in ``description``, in errors or in logs.
///
/// ```swift
/// let proxy = try HTTP2Proxy(url: "http://user:secret@proxy.internal:3128")
/// var configuration = HTTP2ClientConfiguration(host: "api.push.apple.com")
/// configuration.proxy = proxy
/// ```
package struct HTTP2Proxy: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// How the tunnel is asked for.
    package enum Kind: String, Hashable, Sendable {
        /// `CONNECT host:port HTTP/1.1`, with `Proxy-Authorization: Basic` when credentials are given.
        case httpConnect = "http"
        /// SOCKS5 (RFC 1928), with user/password authentication (RFC 1929) when credentials are
        /// given. The proxy resolves the target's name.
        case socks5
    }

    /// How the tunnel is asked for.
    package var kind: Kind
    /// The proxy's host name or IP address.
    package var host: String
    /// The proxy's TCP port.
    package var port: Int
    /// The user name, when the proxy asks for one.
    package var username: String?
    /// The password; shown nowhere (``description`` prints `***`).
    package var password: String?

    /// Creates a proxy setting.
    package init(_ kind: Kind, host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    /// The port a proxy URL without one gets, as curl does.
    package static let defaultPort = 1080

    /// A proxy from a URL as curl and `HTTPS_PROXY` take it: `http://[user:password@]host[:port]`
    /// (HTTP CONNECT), `socks5://…` or `socks5h://…` (SOCKS5; both let the proxy resolve the
    /// target's name). Without a scheme, `http://`. User and password are percent-decoded.
    /// - Throws: ``HTTP2ProxyURLError`` naming the rule; its text shows the URL without its password.
    package init(url text: String) throws(HTTP2ProxyURLError) {
        let full = text.contains("://") ? text : "http://" + text
        guard let components = URLComponents(string: full), let scheme = components.scheme?.lowercased() else {
            throw HTTP2ProxyURLError(url: text, rule: "is not a URL: give scheme://[user:password@]host[:port]")
        }
        switch scheme {
        case "http": self.kind = .httpConnect
        case "socks5", "socks5h": self.kind = .socks5
        case "https":
            throw HTTP2ProxyURLError(url: text, rule: "https:// (TLS to the proxy itself) is not supported: use http://, socks5:// or socks5h://")
        default:
            throw HTTP2ProxyURLError(url: text, rule: "has the scheme '\(scheme)': use http://, socks5:// or socks5h://")
        }
        guard let host = components.host, !host.isEmpty else {
            throw HTTP2ProxyURLError(url: text, rule: "names no host")
        }
        guard components.path.isEmpty || components.path == "/", components.query == nil, components.fragment == nil else {
            throw HTTP2ProxyURLError(url: text, rule: "names the proxy only, without a path or query")
        }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        guard let port = Self.port(in: full) else {
            throw HTTP2ProxyURLError(url: text, rule: "has a port outside 1-65535")
        }
        self.port = port
        self.username = components.user.flatMap { $0.isEmpty ? nil : $0 }
        self.password = components.password
    }

    /// `host:port` (IPv6 in brackets): how errors and logs name the proxy.
    package var endpoint: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "\(host):\(self.port)"
    }

    /// The URL with the password replaced by `***`.
    package var description: String {
        var userInfo = ""
        if let username {
            let encoded = username.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed) ?? username
            userInfo = self.password == nil ? "\(encoded)@" : "\(encoded):***@"
        } else if self.password != nil {
            userInfo = ":***@"
        }
        return "\(self.kind.rawValue)://\(userInfo)\(self.endpoint)"
    }

    package var debugDescription: String { self.description }

    /// Reflection (`dump`, default struct printing) shows the redacted URL only.
    package var customMirror: Mirror { Mirror(self, children: ["url": self.description]) }

    /// The port after the host in `scheme://[user@]host[:port]`: `defaultPort` when none is given,
    /// `nil` when it is not 1-65535 (read from the text: URLComponents drops a port too large for an Int).
    private static func port(in url: String) -> Int? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        var authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if let bracket = authority.lastIndex(of: "]") { authority = authority[authority.index(after: bracket)...] }
        guard let colon = authority.lastIndex(of: ":") else { return Self.defaultPort }
        guard let number = Int(authority[authority.index(after: colon)...]), (1...65_535).contains(number) else { return nil }
        return number
    }
}

/// A proxy URL that cannot be used; the text shows the URL without its password.
package struct HTTP2ProxyURLError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The URL as given, with any password replaced by `***`.
    package let redactedURL: String
    /// What is wrong with it.
    package let rule: String

    init(url: String, rule: String) {
        self.redactedURL = redactingPassword(in: url)
        self.rule = rule
    }

    package var description: String { "the proxy URL '\(self.redactedURL)' \(self.rule)" }
}

/// `scheme://user:password@host…` with the password replaced by `***`; text without one unchanged.
func redactingPassword(in url: String) -> String {
    let start = url.range(of: "://")?.upperBound ?? url.startIndex
    let authorityEnd = url[start...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
    guard let at = url[start..<authorityEnd].lastIndex(of: "@"),
          let colon = url[start..<at].firstIndex(of: ":") else { return url }
    return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
}
