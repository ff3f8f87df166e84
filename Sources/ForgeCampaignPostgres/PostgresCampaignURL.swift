public import PostgresNIO
import Foundation

/// The `--postgres` URL of a campaign's database, as libpq's URIs write it:
///
/// - TCP: `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=require|prefer|disable]`. TLS is
///   required and verified (system trust roots, host name) unless `sslmode=disable` turns it off;
///   `prefer` uses it when the server offers it, as libpq does.
/// - Unix socket: `postgres://USER@/DATABASE?host=/SOCKET/DIR[&port=PORT]` (or `postgres:///DATABASE?host=…`):
///   the server's socket `/SOCKET/DIR/.s.PGSQL.PORT` (port 5432 unless given); no TLS.
///
/// The password may also come from `PGPASSWORD`; the user defaults to `USER` of the environment.
/// `postgresql://` is accepted as well.
public struct PostgresCampaignURL: Sendable, CustomStringConvertible {
    public let configuration: PostgresConnection.Configuration
    /// The URL without its password, for messages.
    public let description: String

    /// Parses `text`.
    /// - Throws: ``PostgresCampaignError`` (`badURL`) naming the part that is wrong.
    /// - Parameter environment: where `PGPASSWORD` and `USER` are looked up (the process's by default).
    public init(_ text: String, environment: [String: String]? = nil) throws {
        let environment = environment ?? ProcessInfo.processInfo.environment
        func bad(_ rule: String) -> PostgresCampaignError {
            PostgresCampaignError(.badURL, "--postgres: \(rule) (postgres://USER@HOST:PORT/DB, or postgres://USER@/DB?host=/socket/dir)")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else { throw bad("not a postgres:// URL") }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard let value = item.value else { throw bad("query parameter '\(item.name)' has no value") }
            guard ["host", "port", "sslmode", "user", "password", "dbname"].contains(item.name) else {
                throw bad("unknown query parameter '\(item.name)' (host, port, sslmode, user, password, dbname)")
            }
            query[item.name] = value
        }
        let user = query["user"] ?? components.user.flatMap { $0.isEmpty ? nil : $0 } ?? environment["USER"] ?? "postgres"
        let password = query["password"] ?? components.password ?? environment["PGPASSWORD"]
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let database = query["dbname"] ?? (path.isEmpty ? nil : path)
        let portText = query["port"] ?? components.port.map(String.init)
        let port: Int
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else { throw bad("port '\(portText)' is not 1-65535") }
            port = value
        } else {
            port = 5432
        }
        // libpq: a host that starts with "/" is the folder of the server's Unix socket.
        let host = query["host"] ?? components.host.flatMap { $0.isEmpty ? nil : $0 }
        var redacted = components
        if redacted.password != nil { redacted.password = "***" }
        redacted.queryItems = redacted.queryItems?.map { $0.name == "password" ? URLQueryItem(name: $0.name, value: "***") : $0 }
        self.description = redacted.string ?? "postgres://…"
        guard let host else { throw bad("no host: give HOST, or ?host=/socket/dir for a Unix socket") }
        if host.hasPrefix("/") {
            guard query["sslmode"] == nil || query["sslmode"] == "disable" else { throw bad("sslmode applies to TCP; a Unix socket has no TLS") }
            let socket = URL(fileURLWithPath: host).appendingPathComponent(".s.PGSQL.\(port)").path
            self.configuration = PostgresConnection.Configuration(unixSocketPath: socket, username: user, password: password, database: database)
            return
        }
        let tls: PostgresConnection.Configuration.TLS
        switch query["sslmode"] ?? "require" {
        case "disable":
            tls = .disable
        case "require", "verify-full", "prefer":
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: .makeClientConfiguration())
            } catch {
                throw PostgresCampaignError(.badURL, "--postgres: TLS cannot be set up: \(error)")
            }
            // prefer, as libpq means it: TLS when the server offers it, else without.
            tls = query["sslmode"] == "prefer" ? .prefer(context) : .require(context)
        case let mode:
            throw bad("sslmode '\(mode)' is not require (TLS, verified; the default), prefer (TLS when offered) or disable")
        }
        self.configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls
        )
    }
}

/// Why a PostgreSQL campaign operation failed.
public struct PostgresCampaignError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// The `--postgres` URL cannot be used.
        case badURL
        /// `create`: a campaign of that name exists.
        case exists
        /// No campaign of that name.
        case notFound
        /// The database refused or failed (connection, SQL, schema version).
        case database
    }

    public var kind: Kind
    public var description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// A database error with the server's message (PSQLError's own description hides it).
    static func database(_ error: any Error, doing what: String) -> PostgresCampaignError {
        if let error = error as? PostgresCampaignError { return error }
        if let error = error as? PSQLError, error.code == .sslUnsupported {
            return PostgresCampaignError(
                .database, "\(what): the server does not offer TLS; for a database on a trusted network add ?sslmode=disable to --postgres"
            )
        }
        if let error = error as? PSQLError {
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            let underlying = error.underlying.map { ": \($0)" } ?? ""
            return PostgresCampaignError(.database, "\(what): \(message)\(underlying)")
        }
        return PostgresCampaignError(.database, "\(what): \(error)")
    }
}
