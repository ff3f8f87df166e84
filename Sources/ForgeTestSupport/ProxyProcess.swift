public import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real outbound proxy a test runs on 127.0.0.1, in a temporary folder of its own: Debian's
/// `tinyproxy` (HTTP CONNECT, optionally with basic authentication) or `microsocks` (SOCKS5,
/// optionally with user and password). Both are installed by `make deps`.
///
/// microsocks listens on port 0 and the port is read from /proc; tinyproxy needs a port in its
/// configuration, so a free one is picked, and when another process takes it first, tinyproxy
/// exits and the start is tried again with another (at most five times). Readiness is the
/// listening socket appearing, never a fixed sleep.
public final class ProxyProcess: Sendable {
    /// Which proxy program.
    public enum Kind: Sendable {
        /// tinyproxy: HTTP CONNECT.
        case httpConnect
        /// microsocks: SOCKS5.
        case socks5
    }

    public let kind: Kind
    /// The running proxy.
    public let child: ChildProcess
    /// The port it listens on (127.0.0.1).
    public let port: Int
    /// The user name and password it requires, if any.
    public let credentials: (user: String, password: String)?
    /// The folder with its configuration, removed by ``stop()``.
    public let directory: URL

    private init(kind: Kind, child: ChildProcess, port: Int, credentials: (user: String, password: String)?, directory: URL) {
        self.kind = kind
        self.child = child
        self.port = port
        self.credentials = credentials
        self.directory = directory
    }

    deinit {
        self.child.kill()
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// Starts a proxy that allows tunnels to `targetPort` on loopback.
    /// - Parameter credentials: what the proxy requires; `nil` lets anyone through.
    public static func start(_ kind: Kind, targetPort: Int, credentials: (user: String, password: String)? = nil) async throws -> ProxyProcess {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("forge-proxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError: (any Error)?
        for _ in 0..<5 {
            do {
                switch kind {
                case .socks5:
                    var arguments = ["-i", "127.0.0.1", "-p", "0"]
                    if let credentials { arguments += ["-u", credentials.user, "-P", credentials.password] }
                    let child = try ChildProcess(
                        executable: URL(fileURLWithPath: "/usr/bin/microsocks"), arguments: arguments, mergesStandardError: true
                    )
                    let port = try await child.listeningPort(timeout: .seconds(10))
                    return ProxyProcess(kind: kind, child: child, port: port, credentials: credentials, directory: directory)
                case .httpConnect:
                    let port = try Self.freePort()
                    var configuration = """
                        Port \(port)
                        Listen 127.0.0.1
                        Timeout 30
                        MaxClients 50
                        LogLevel Connect
                        ConnectPort \(targetPort)

                        """
                    if let credentials { configuration += "BasicAuth \(credentials.user) \(credentials.password)\n" }
                    let file = directory.appendingPathComponent("tinyproxy.conf")
                    try configuration.write(to: file, atomically: true, encoding: .utf8)
                    let child = try ChildProcess(
                        executable: URL(fileURLWithPath: "/usr/bin/tinyproxy"), arguments: ["-d", "-c", file.path],
                        mergesStandardError: true
                    )
                    let listening = try await child.listeningPort(timeout: .seconds(10))
                    guard listening == port else {
                        child.kill()
                        throw ChildProcessError("tinyproxy listens on \(listening), not the configured \(port)")
                    }
                    return ProxyProcess(kind: kind, child: child, port: port, credentials: credentials, directory: directory)
                }
            } catch {
                lastError = error
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastError ?? ChildProcessError("the proxy did not start")
    }

    /// The proxy's URL, with `password` instead of the one it requires when given (a wrong one).
    public func url(password: String? = nil) -> String {
        let scheme = self.kind == .httpConnect ? "http" : "socks5h"
        guard let credentials else { return "\(scheme)://127.0.0.1:\(self.port)" }
        return "\(scheme)://\(credentials.user):\(password ?? credentials.password)@127.0.0.1:\(self.port)"
    }

    /// What the proxy logged so far (tinyproxy logs each connection; microsocks logs nothing).
    public var log: String { self.child.standardOutputSoFar }

    /// How many CONNECT requests tinyproxy received so far.
    public var connectRequests: Int {
        self.log.split(separator: "\n").filter { $0.contains("Request (file descriptor") && $0.contains("CONNECT ") }.count
    }

    /// Stops the proxy and removes its folder.
    public func stop() {
        self.child.kill()
        try? FileManager.default.removeItem(at: self.directory)
    }

    /// A port nothing listens on now: bound to port 0 on 127.0.0.1, then released, so a
    /// process started next can listen on it. Another process may take it in the meantime:
    /// a test that needs a port nobody answers on uses ``ClosedPort``.
    public static func freePort() throws -> Int {
        let descriptor = try ClosedPort.boundSocket()
        defer { close(descriptor) }
        return try ClosedPort.port(of: descriptor)
    }
}
