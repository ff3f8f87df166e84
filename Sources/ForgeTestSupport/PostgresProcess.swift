import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A private PostgreSQL cluster for one test: `initdb` in a temporary folder (trust
/// authentication, superuser `forge`), `postgres` listening on a Unix socket in that folder (and,
/// when asked, on 127.0.0.1 at a free port, without TLS), stopped and removed by ``stop()``.
///
/// initdb and postgres refuse to run as root: as root (CI, containers) they run as the `postgres`
/// user Debian's package creates, through `runuser`, and the folder is given to that user.
/// The programs come from Debian's `postgresql` package (`make deps`), in /usr/lib/postgresql/VERSION/bin.
public final class PostgresProcess: Sendable {
    /// The cluster's folder (data and socket); removed by ``stop()``.
    public let folder: TemporaryFolder
    /// The folder of the server's socket, `.s.PGSQL.<port>`.
    public let socketDirectory: String
    /// The port in the socket's name, and the TCP port on 127.0.0.1 when ``listensOnTCP``.
    public let port: Int
    /// Whether the server also listens on 127.0.0.1 (TCP, no TLS).
    public let listensOnTCP: Bool
    /// The `--postgres` URL of the cluster's `postgres` database, as user `forge`, over the socket.
    public var url: String { "postgres://forge@/postgres?host=\(self.socketDirectory)&port=\(self.port)" }

    private let bin: URL
    private let dataDirectory: String
    private let server: ChildProcess

    /// Creates the cluster and starts its server; returns once it accepts connections (at most `timeout`).
    /// - Parameter tcp: also listen on 127.0.0.1, at a port the system reports free (TLS off, as initdb sets it up).
    public init(timeout: Duration = .seconds(60), tcp: Bool = false) throws {
        self.listensOnTCP = tcp
        self.port = tcp ? try Self.freeLoopbackPort() : 5432
        let bin = try Self.binaries()
        let folder = try TemporaryFolder("pg")
        self.folder = folder
        self.bin = bin
        self.dataDirectory = folder.url.appendingPathComponent("data").path
        self.socketDirectory = folder.url.appendingPathComponent("socket").path
        do {
            try FileManager.default.createDirectory(atPath: self.socketDirectory, withIntermediateDirectories: true)
            try Self.giveToServerUser(folder.path, self.socketDirectory)
            let initdb = try ChildProcess.run(
                Self.asServerUser(bin.appendingPathComponent("initdb")).executable,
                Self.asServerUser(bin.appendingPathComponent("initdb")).prefix
                    + ["-D", self.dataDirectory, "-A", "trust", "-U", "forge", "-E", "UTF8", "--no-sync"],
                mergesStandardError: true, currentDirectory: folder.url, timeout: timeout
            )
            guard initdb.exitCode == 0 else { throw ChildProcessError("initdb failed (\(initdb.exitCode)): \(initdb.stdout)") }
            let postgres = Self.asServerUser(bin.appendingPathComponent("postgres"))
            // fsync off: the tests kill clients, never the server, so nothing relies on the disk.
            self.server = try ChildProcess(
                executable: postgres.executable,
                arguments: postgres.prefix + [
                    "-D", self.dataDirectory, "-k", self.socketDirectory, "-c", "listen_addresses=\(tcp ? "127.0.0.1" : "")", "-p", String(self.port),
                    "-c", "fsync=off", "-c", "max_connections=50",
                ],
                mergesStandardError: true, currentDirectory: folder.url
            )
        } catch {
            folder.remove()
            throw error
        }
        let deadline = ContinuousClock.now + timeout
        while true {
            let ready = try ChildProcess.run(
                bin.appendingPathComponent("pg_isready"), ["-h", self.socketDirectory, "-p", String(self.port), "-q"], timeout: .seconds(10)
            )
            if ready.exitCode == 0 { break }
            guard self.server.isRunning, ContinuousClock.now < deadline else {
                let log = self.server.standardOutputSoFar
                self.stop()
                throw ChildProcessError("postgres did not accept connections within \(timeout): \(log)")
            }
            // Polling at a bounded interval until the server answers (pg_isready has no wait of its own below a second).
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// A port on 127.0.0.1 that nothing listens on now (bound to port 0, read back, closed).
    private static func freeLoopbackPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ChildProcessError("socket: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw ChildProcessError("bind 127.0.0.1:0: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs `sql` with psql (an oracle independent of postgres-nio); returns its unaligned output
    /// (`|` between columns, a row a line).
    public func psql(_ sql: String) throws -> String {
        let result = try ChildProcess.run(
            self.bin.appendingPathComponent("psql"),
            ["-h", self.socketDirectory, "-p", String(self.port), "-U", "forge", "-d", "postgres", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-c", sql],
            timeout: .seconds(30)
        )
        guard result.exitCode == 0 else { throw ChildProcessError("psql failed (\(result.exitCode)): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops the server (fast shutdown: clients are disconnected) and removes the folder.
    public func stop() {
        let pgctl = Self.asServerUser(self.bin.appendingPathComponent("pg_ctl"))
        _ = try? ChildProcess.run(
            pgctl.executable, pgctl.prefix + ["stop", "-D", self.dataDirectory, "-m", "fast", "-w", "-t", "30"], mergesStandardError: true,
            currentDirectory: self.folder.url, timeout: .seconds(40)
        )
        if !self.server.waitForExit(timeout: .seconds(10)) { self.server.kill() }
        self.folder.remove()
    }

    /// The newest /usr/lib/postgresql/VERSION/bin with initdb.
    private static func binaries() throws -> URL {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let found = versions.compactMap { Int($0) }.sorted(by: >).map { URL(fileURLWithPath: "\(root)/\($0)/bin") }
            .first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("initdb").path) }
        guard let found else { throw ChildProcessError("PostgreSQL's initdb is not in \(root)/VERSION/bin: run `make deps`") }
        return found
    }

    private static var isRoot: Bool { getuid() == 0 }

    /// `program`, through `runuser -u postgres --` when this process is root.
    private static func asServerUser(_ program: URL) -> (executable: URL, prefix: [String]) {
        guard Self.isRoot else { return (program, []) }
        return (URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "postgres", "--", program.path])
    }

    /// As root: `paths` belong to the `postgres` user, who runs the server.
    private static func giveToServerUser(_ paths: String...) throws {
        guard Self.isRoot else { return }
        guard let user = getpwnam("postgres") else { throw ChildProcessError("no user 'postgres' to run PostgreSQL as (run `make deps`)") }
        for path in paths where chown(path, user.pointee.pw_uid, user.pointee.pw_gid) != 0 {
            throw ChildProcessError("chown \(path) to postgres failed: errno \(errno)")
        }
    }
}
