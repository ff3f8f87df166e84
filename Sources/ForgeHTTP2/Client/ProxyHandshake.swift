import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Asks a proxy for a tunnel to `host:port`, without I/O: it says what to send and how much to
/// read next, and judges what came back (HTTP CONNECT, or SOCKS5 per RFC 1928 and RFC 1929).
///
/// Reads are exact, so no byte of the target's stream is taken by the handshake: an HTTP answer's
/// head is read through its blank line (``Read/httpHead``), SOCKS replies by their known lengths.
struct ProxyHandshake {
    /// How much the driver reads before calling ``receive(_:)``.
    enum Read: Equatable {
        /// Exactly this many bytes.
        case exactly(Int)
        /// An HTTP response head, through its `\r\n\r\n` and not one byte further.
        case httpHead
    }

    /// What the driver does next.
    enum Step: Equatable {
        /// Write these bytes, then read.
        case send([UInt8], then: Read)
        /// Read (nothing to write).
        case read(Read)
        /// The tunnel is open: the next byte on the socket is the target's.
        case open
    }

    /// Why the proxy gave no tunnel. Its description names the proxy, never its password.
    struct Failure: Error, CustomStringConvertible {
        var proxy: HTTP2Proxy
        var reason: String
        /// Trying again cannot help within a run (credentials refused or missing, target forbidden).
        var isPermanent: Bool

        var description: String { "proxy \(self.proxy.endpoint) (\(Self.name(self.proxy.kind))): \(self.reason)" }

        static func name(_ kind: HTTP2Proxy.Kind) -> String {
            switch kind {
            case .httpConnect: "HTTP CONNECT"
            case .socks5: "SOCKS5"
            }
        }
    }

    private enum Phase {
        case start
        case httpResponse
        case socksMethod
        case socksAuthentication
        case socksReplyHead
        case socksReplyDomainLength
        case socksReplyAddress
        case open
    }

    let proxy: HTTP2Proxy
    let targetHost: String
    let targetPort: Int
    private var phase = Phase.start

    init(proxy: HTTP2Proxy, targetHost: String, targetPort: Int) {
        self.proxy = proxy
        self.targetHost = targetHost
        self.targetPort = targetPort
    }

    private var hasCredentials: Bool { self.proxy.username != nil || self.proxy.password != nil }

    /// The first step: the request (HTTP) or the greeting (SOCKS5).
    mutating func start() throws(Failure) -> Step {
        precondition(self.phase == .start, "a proxy handshake starts once")
        switch self.proxy.kind {
        case .httpConnect:
            self.phase = .httpResponse
            let authority = self.targetHost.contains(":") ? "[\(self.targetHost)]:\(self.targetPort)" : "\(self.targetHost):\(self.targetPort)"
            var request = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
            if self.hasCredentials {
                let pair = "\(self.proxy.username ?? ""):\(self.proxy.password ?? "")"
                request += "Proxy-Authorization: Basic \(Data(pair.utf8).base64EncodedString())\r\n"
            }
            request += "\r\n"
            return .send(Array(request.utf8), then: .httpHead)
        case .socks5:
            self.phase = .socksMethod
            // 0x00: no authentication; 0x02: user/password (offered only with credentials).
            let methods: [UInt8] = self.hasCredentials ? [0x00, 0x02] : [0x00]
            return .send([0x05, UInt8(methods.count)] + methods, then: .exactly(2))
        }
    }

    /// Judges what was read for the last step and says what comes next.
    mutating func receive(_ bytes: [UInt8]) throws(Failure) -> Step {
        switch self.phase {
        case .start, .open:
            preconditionFailure("nothing is read in this phase")
        case .httpResponse:
            return try self.httpResponse(bytes)
        case .socksMethod:
            guard bytes.count == 2, bytes[0] == 0x05 else { throw self.fail("answered with something other than SOCKS5") }
            switch bytes[1] {
            case 0x00:
                return self.socksConnect()
            case 0x02 where self.hasCredentials:
                let user = Array((self.proxy.username ?? "").utf8)
                let password = Array((self.proxy.password ?? "").utf8)
                guard (1...255).contains(user.count), (1...255).contains(password.count) else {
                    throw self.fail("the user name and password must each be 1-255 bytes for SOCKS5 (RFC 1929)", permanent: true)
                }
                self.phase = .socksAuthentication
                return .send([0x01, UInt8(user.count)] + user + [UInt8(password.count)] + password, then: .exactly(2))
            case 0xFF where !self.hasCredentials:
                throw self.fail("requires authentication: give a user name and password in the proxy URL", permanent: true)
            case 0xFF:
                throw self.fail("accepts none of the offered authentication methods", permanent: true)
            default:
                throw self.fail("chose authentication method \(bytes[1]), which was not offered", permanent: true)
            }
        case .socksAuthentication:
            guard bytes.count == 2, bytes[1] == 0x00 else {
                throw self.fail("rejected the user name and password (check the credentials in the proxy URL)", permanent: true)
            }
            return self.socksConnect()
        case .socksReplyHead:
            guard bytes.count == 4, bytes[0] == 0x05 else { throw self.fail("answered the CONNECT request with something other than SOCKS5") }
            guard bytes[1] == 0x00 else {
                let (reason, permanent) = Self.socksReply(bytes[1])
                throw self.fail("refused the tunnel to \(self.targetHost):\(self.targetPort): \(reason)", permanent: permanent)
            }
            switch bytes[3] {
            case 0x01: self.phase = .socksReplyAddress; return .read(.exactly(4 + 2))
            case 0x04: self.phase = .socksReplyAddress; return .read(.exactly(16 + 2))
            case 0x03: self.phase = .socksReplyDomainLength; return .read(.exactly(1))
            default: throw self.fail("answered with address type \(bytes[3]), which RFC 1928 does not define")
            }
        case .socksReplyDomainLength:
            self.phase = .socksReplyAddress
            return .read(.exactly(Int(bytes.first ?? 0) + 2))
        case .socksReplyAddress:
            self.phase = .open
            return .open
        }
    }

    private mutating func socksConnect() -> Step {
        self.phase = .socksReplyHead
        var request: [UInt8] = [0x05, 0x01, 0x00]
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, self.targetHost, &v4) == 1 {
            request.append(0x01)
            withUnsafeBytes(of: &v4) { request.append(contentsOf: $0) }
        } else if inet_pton(AF_INET6, self.targetHost, &v6) == 1 {
            request.append(0x04)
            withUnsafeBytes(of: &v6) { request.append(contentsOf: $0) }
        } else {
            // The proxy resolves the name (where egress is only through the proxy, this host may not resolve it).
            let name = Array(self.targetHost.utf8.prefix(255))
            request += [0x03, UInt8(name.count)] + name
        }
        request += [UInt8(self.targetPort >> 8), UInt8(self.targetPort & 0xFF)]
        return .send(request, then: .exactly(4))
    }

    private mutating func httpResponse(_ head: [UInt8]) throws(Failure) -> Step {
        // Bytes, not Characters: "\r\n" is one Character, so a Character search for "\r" finds nothing.
        let statusLine = String(decoding: head.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw self.fail("did not answer CONNECT with an HTTP/1.x status line")
        }
        let reason = parts.count > 2 ? " \(parts[2])" : ""
        switch status {
        case 200..<300:
            self.phase = .open
            return .open
        // 407 is the standard answer; tinyproxy answers a CONNECT without valid credentials with 401.
        case 401, 407:
            let rule = self.hasCredentials
                ? "rejected the credentials (\(status)\(reason)): check the user name and password in the proxy URL"
                : "requires authentication (\(status)\(reason)): give a user name and password in the proxy URL"
            throw self.fail(rule, permanent: true)
        case 403:
            throw self.fail("refused the tunnel to \(self.targetHost):\(self.targetPort) (403\(reason))", permanent: true)
        default:
            throw self.fail("answered CONNECT \(self.targetHost):\(self.targetPort) with \(status)\(reason)")
        }
    }

    private func fail(_ reason: String, permanent: Bool = false) -> Failure {
        Failure(proxy: self.proxy, reason: reason, isPermanent: permanent)
    }

    /// RFC 1928 §6's reply codes, and whether trying again cannot help.
    private static func socksReply(_ code: UInt8) -> (String, Bool) {
        switch code {
        case 0x01: ("general SOCKS server failure", false)
        case 0x02: ("connection not allowed by ruleset", true)
        case 0x03: ("network unreachable", false)
        case 0x04: ("host unreachable", false)
        case 0x05: ("connection refused", false)
        case 0x06: ("TTL expired", false)
        case 0x07: ("command not supported", true)
        case 0x08: ("address type not supported", true)
        default: ("reply code \(code)", false)
        }
    }
}
