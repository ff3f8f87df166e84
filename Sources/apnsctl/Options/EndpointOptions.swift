import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import Foundation

/// Where requests go: Apple's environment, or any APNs-compatible server by URL, and how its
/// certificate is checked. Every command that sends takes these flags.
typealias EndpointOptions = APNSEndpointOptions<ApplePortOption>

/// Apple's port as a flag, `--port`.
struct ApplePortOption: ApplePortFlag {
    @Option(name: .long, help: "Apple's port: 443 (default) or 2197, for networks that block 443 outbound (or APNS_PORT).")
    var port: Int?
}

/// No `--port` flag, for a command whose `--port` is the one it listens on (`activities serve`):
/// Apple's port comes from `APNS_PORT`, or from the port of `--url`.
struct NoApplePortOption: ApplePortFlag {
    var port: Int? { nil }
}

/// Whether a command's endpoint flags include Apple's `--port`.
protocol ApplePortFlag: ParsableArguments {
    var port: Int? { get }
}

/// ``EndpointOptions``, with or without Apple's `--port` (`Port`).
struct APNSEndpointOptions<Port: ApplePortFlag>: ParsableArguments {
    @Option(
        name: .long, help: "production, sandbox or development (the sandbox's other name) (or APNS_ENVIRONMENT); production when unset.",
        transform: { try EnvironmentName.parse($0) }
    )
    var environment: EnvironmentName?

    @OptionGroup var applePort: Port

    /// `--port`, when the command has it.
    var port: Int? { self.applePort.port }

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Tunnel through this proxy: http://[user:password@]host[:port] (CONNECT) or socks5://… / socks5h://…; else HTTPS_PROXY, https_proxy or ALL_PROXY; NO_PROXY lists hosts that bypass it; --proxy '' connects directly.",
            valueName: "url"
        )
    )
    var proxy: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Any other APNs-compatible endpoint, such as the local server: https://127.0.0.1:2197 (TLS) or http://127.0.0.1:2197 (cleartext h2c, loopback only) (or APNS_URL). Channel commands use the same server.",
            valueName: "url"
        )
    )
    var url: String?

    @Option(name: .customLong("ca-file"), help: ArgumentHelp("Trust this CA (PEM) instead of the system's (or APNS_CA_FILE).", valueName: "path"))
    var caFile: String?

    /// `--url`, else `APNS_URL`.
    private var urlText: String? { EnvironmentFallback.value(self.url, "APNS_URL") }

    /// `--ca-file`, else `APNS_CA_FILE`.
    var caFileText: String? { EnvironmentFallback.value(self.caFile, "APNS_CA_FILE") }

    @Flag(name: .customLong("insecure-loopback"), help: "Skip certificate verification; refused unless the host is 127.0.0.1, ::1 or localhost.")
    var insecureLoopback = false

    /// A warning when a URL (flag or `APNS_URL`) and an environment (flag or `APNS_ENVIRONMENT`) are
    /// both given: the URL wins, which a stale `APNS_URL` makes easy to miss.
    func conflictWarning() -> String? {
        guard self.urlText != nil, let environment = EnvironmentFallback.value(self.environment?.rawValue, "APNS_ENVIRONMENT") else {
            return nil
        }
        let url = self.url == nil ? "APNS_URL" : "--url"
        let named = self.environment == nil ? "APNS_ENVIRONMENT=\(environment)" : "--environment \(environment)"
        return "\(url) (\(self.urlText ?? "")) wins over \(named): the push goes to the URL"
    }

    /// Where a send goes, for the line a terminal shows first: the URL, and where it came from when
    /// that was the environment.
    func destination(_ environment: APNSEnvironment) -> String {
        let scheme = (try? self.urlText.map { try Self.parse(url: $0).cleartext } ?? false) == true ? "http" : "https"
        var text = "\(scheme)://\(environment.authority)"
        if environment.description != environment.authority { text += " (\(environment.description))" }
        if self.url == nil, self.urlText != nil { text += " from APNS_URL" }
        else if self.urlText == nil, self.environment == nil, EnvironmentFallback.value(nil, "APNS_ENVIRONMENT") != nil { text += " from APNS_ENVIRONMENT" }
        return text
    }

    /// The chosen environment: `--url` when given, else `--environment` / `APNS_ENVIRONMENT`.
    /// - Throws: `ValidationError` for an unknown `APNS_ENVIRONMENT` or a URL that is not http(s)://host:port.
    /// - Throws: `ValidationError` for an unknown `APNS_ENVIRONMENT`, a URL that is not
    ///   http(s)://host:port, or a port Apple does not serve (or `--port` with `--url`).
    func resolved() throws -> APNSEnvironment {
        let portText = EnvironmentFallback.value(self.port.map(String.init), "APNS_PORT")
        if let url = self.urlText {
            if self.port != nil { throw ValidationError("--port goes with --environment; with --url, put the port in the URL.") }
            return try Self.parse(url: url).environment
        }
        let text = EnvironmentFallback.value(self.environment?.rawValue, "APNS_ENVIRONMENT") ?? "production"
        guard let environment = EnvironmentName(rawValue: text)?.endpoint else {
            let hint = DidYouMean.suggestion(for: text, among: EnvironmentName.allCases.map(\.rawValue)).map { "; did you mean '\($0)'?" } ?? ""
            throw ValidationError("APNS_ENVIRONMENT must be production, sandbox or development (got '\(text)')\(hint).")
        }
        guard let portText else { return environment }
        let source = self.port == nil ? "APNS_PORT" : "--port"
        guard let port = Int(portText) else { throw ValidationError("\(source) must be 443 or 2197 (got '\(portText)').") }
        do {
            return try environment.port(port)
        } catch {
            throw ValidationError("\(source) must be 443 or 2197, the ports Apple serves APNs on (got \(port)).")
        }
    }

    /// The proxy for `host`, as curl picks it: `--proxy`, else `https_proxy`, `HTTPS_PROXY`,
    /// `all_proxy`, `ALL_PROXY` (lowercase first); none when `NO_PROXY` (`no_proxy` first) lists
    /// the host, a domain it is in, or `*`, or when the chosen value is empty.
    /// - Throws: `ValidationError` naming the flag or variable for a URL that cannot be used, with the password hidden.
    func proxy(for host: String, environment variables: [String: String] = ProcessInfo.processInfo.environment) throws -> APNSClient.Proxy? {
        var source = "--proxy"
        var text = self.proxy
        if text == nil {
            for name in ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] {
                if let value = variables[name] {
                    (source, text) = (name, value)
                    break
                }
            }
        }
        guard let text, !text.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        if let list = variables["no_proxy"] ?? variables["NO_PROXY"], Self.bypasses(host: host, noProxy: list) { return nil }
        do {
            return try APNSClient.Proxy(url: text.trimmingCharacters(in: .whitespaces))
        } catch {
            throw ValidationError("\(source): \(error.detail.replacingOccurrences(of: "proxy: ", with: ""))")
        }
    }

    /// Whether `NO_PROXY`'s comma- (or space-) separated list names `host`: `*` names every host;
    /// an entry names itself and, as a domain, every name under it (a leading dot is optional);
    /// matching ignores case and IPv6 brackets.
    static func bypasses(host: String, noProxy: String) -> Bool {
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]."))
        for raw in noProxy.split(whereSeparator: { $0 == "," || $0 == " " }) {
            let entry = raw.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")).trimmingCharacters(in: .whitespaces)
            if entry == "*" { return true }
            let domain = entry.hasPrefix(".") ? String(entry.dropFirst()) : entry
            guard !domain.isEmpty else { continue }
            if host == domain || host.hasSuffix("." + domain) { return true }
        }
        return false
    }

    /// The TLS options: the CA file, the loopback-only insecure mode, cleartext for `http://` URLs.
    /// - Throws: ``CLIFailure`` (66) for a CA file that does not exist, (65) for one that holds no
    ///   certificate; `ValidationError` (64) for `--insecure-loopback` with a host that is not loopback.
    func tls() throws -> APNSClient.TLS {
        if let caFile = self.caFileText {
            try InputFiles.requireReadable(caFile, flag: self.caFile == nil ? "APNS_CA_FILE" : "--ca-file")
            try ClientFactory.check(HTTP2TLSConfiguration(trustRoots: .file(caFile)))
        }
        let cleartext = try self.urlText.map { try Self.parse(url: $0).cleartext } ?? false
        if self.insecureLoopback, !cleartext {
            let host = try self.resolved().host
            guard host == "localhost" || host == "::1" || host.hasPrefix("127.") else {
                throw ValidationError(
                    "--insecure-loopback skips certificate checks, so it is refused for \(host): use it with 127.0.0.1, ::1 or localhost only."
                )
            }
        }
        return APNSClient.TLS(caFile: self.caFileText, insecureLoopbackOnly: self.insecureLoopback, cleartextLoopbackOnly: cleartext)
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
