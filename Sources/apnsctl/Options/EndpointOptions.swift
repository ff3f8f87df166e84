import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import Foundation

/// Where requests go: Apple's environment, or any APNs-compatible server by URL, and how its
/// certificate is checked.
struct EndpointOptions: ParsableArguments {
    enum Environment: String, CaseIterable, ExpressibleByArgument {
        case production, sandbox
    }

    @Option(name: .long, help: "production or sandbox (or APNS_ENVIRONMENT); production when unset.")
    var environment: Environment?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Any other APNs-compatible endpoint, such as the local server: https://127.0.0.1:2197 (TLS) or http://127.0.0.1:2197 (cleartext h2c, loopback only).",
            valueName: "url"
        )
    )
    var url: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Trust this CA (PEM) instead of the system's.", valueName: "path"))
    var caFile: String?

    @Flag(name: .customLong("insecure-loopback"), help: "Skip certificate verification; refused unless the host is 127.0.0.1, ::1 or localhost.")
    var insecureLoopback = false

    /// The chosen environment: `--url` when given, else `--environment` / `APNS_ENVIRONMENT`.
    /// - Throws: `ValidationError` for an unknown `APNS_ENVIRONMENT` or a URL that is not http(s)://host:port.
    func resolved() throws -> APNSEnvironment {
        if let url = self.url {
            return try Self.parse(url: url).environment
        }
        let text = EnvironmentFallback.value(self.environment?.rawValue, "APNS_ENVIRONMENT") ?? "production"
        switch Environment(rawValue: text) {
        case .production: return .production
        case .sandbox: return .sandbox
        case nil: throw ValidationError("APNS_ENVIRONMENT must be production or sandbox (got '\(text)').")
        }
    }

    /// The TLS options: the CA file, the loopback-only insecure mode, cleartext for `http://` URLs.
    /// - Throws: ``CLIFailure`` (66) for a CA file that does not exist, (65) for one that holds no
    ///   certificate; `ValidationError` (64) for `--insecure-loopback` with a host that is not loopback.
    func tls() throws -> APNSClient.TLS {
        if let caFile = self.caFile {
            try InputFiles.requireReadable(caFile, flag: "--ca-file")
            try ClientFactory.check(HTTP2TLSConfiguration(trustRoots: .file(caFile)))
        }
        let cleartext = try self.url.map { try Self.parse(url: $0).cleartext } ?? false
        if self.insecureLoopback, !cleartext {
            let host = try self.resolved().host
            guard host == "localhost" || host == "::1" || host.hasPrefix("127.") else {
                throw ValidationError(
                    "--insecure-loopback skips certificate checks, so it is refused for \(host): use it with 127.0.0.1, ::1 or localhost only."
                )
            }
        }
        return APNSClient.TLS(caFile: self.caFile, insecureLoopbackOnly: self.insecureLoopback, cleartextLoopbackOnly: cleartext)
    }

    /// `https://host[:port]` or `http://host:port`; IPv6 hosts in brackets.
    static func parse(url text: String) throws -> (environment: APNSEnvironment, cleartext: Bool) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              scheme == "https" || scheme == "http", let host = components.host, !host.isEmpty
        else {
            throw ValidationError("--url must be https://host[:port] or http://host:port (got '\(text)').")
        }
        guard components.path.isEmpty || components.path == "/", components.query == nil else {
            throw ValidationError("--url names the server only, without a path (got '\(text)'); apnsctl adds /3/device/….")
        }
        let bareHost = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        // Read from the text: URLComponents drops a port too large for an Int, and a port above
        // 65535 would wrap around when the socket address is made.
        var port = scheme == "https" ? 443 : 80
        if let portText = Self.portText(in: text) {
            guard let number = Int(portText), (1...65_535).contains(number) else {
                throw ValidationError("--url: the port must be 1-65535 (got '\(portText)' in '\(text)').")
            }
            port = number
        }
        return (.custom(host: bareHost, port: port), scheme == "http")
    }

    /// The text after the host's `:` in `scheme://[user@]host:port[/…]`, or `nil` when no port is given.
    private static func portText(in url: String) -> Substring? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        var authority = url[schemeEnd.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if let bracket = authority.lastIndex(of: "]") { authority = authority[authority.index(after: bracket)...] }
        guard let colon = authority.lastIndex(of: ":") else { return nil }
        return authority[authority.index(after: colon)...]
    }
}
