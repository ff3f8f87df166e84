import ArgumentParser
import ForgeCampaignPostgres
import ForgeLiveActivities
import ForgeLiveActivitiesPostgres
import ForgeLiveActivitiesSQLite
import Logging
import PostgresNIO

/// `--store S`: where the managed Live Activities live: `sqlite:FILE` (one process at a time on
/// the machine, the file created when missing) or a `postgres://` URL (any number of processes,
/// the tables created when missing).
struct ActivityStoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The registry: sqlite:FILE, or postgres://USER@HOST:PORT/DB (libpq's URL form; ?sslmode=disable for a server without TLS).",
            valueName: "store"
        )
    )
    var store: String

    /// The store named by `--store`, open for `body`, closed after it on every path.
    /// - Throws: ``CLIFailure``: 64 for a `--store` of neither form; 65 for a file that is not a
    ///   store, a URL that cannot be used, or a schema newer than this build's; 73 for a file that
    ///   cannot be opened or created; 69 for a PostgreSQL server that cannot be reached.
    func withStore<Result: Sendable>(_ body: (any LiveActivityStore) async throws -> Result) async throws -> Result {
        if self.store.hasPrefix("sqlite:") {
            let path = String(self.store.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw ValidationError("--store sqlite: needs a file: sqlite:activities.sqlite") }
            let store: SQLiteLiveActivityStore
            do {
                store = try SQLiteLiveActivityStore(path: path)
            } catch {
                // A file that exists and is not a store, or of a newer schema, is bad data; the rest
                // is a file that cannot be opened or created.
                let data = error.rule.contains("is not a Live Activity store") || error.rule.contains("schema version")
                throw CLIFailure(message: "--store: \(error.rule)", exitCode: data ? CLIExit.dataError : CLIExit.cannotCreate)
            }
            return try await body(store)
        }
        guard self.store.hasPrefix("postgres://") || self.store.hasPrefix("postgresql://") else {
            throw ValidationError("--store '\(CLIFailure.abbreviate(self.store))': must be sqlite:FILE or a postgres:// URL")
        }
        let url: PostgresCampaignURL
        do {
            url = try PostgresCampaignURL(self.store)
        } catch let error as PostgresCampaignError {
            // The parser names its own flag; this command's is --store.
            let message = error.description.hasPrefix("--postgres: ") ? String(error.description.dropFirst("--postgres: ".count)) : error.description
            throw CLIFailure(message: "--store: \(message)", exitCode: CLIExit.dataError)
        }
        var logger = Logger(label: "apnsctl.activities.postgres")
        logger.logLevel = .critical
        // One connection first: a server that is down or refuses the login fails now, with its
        // reason, where the pool would retry for a minute and name only its circuit breaker.
        do {
            let connection = try await PostgresConnection.connect(configuration: url.configuration, id: 0, logger: logger)
            try await connection.close()
        } catch {
            throw CLIFailure(message: "--store \(url): cannot connect: \(Self.reason(error))", exitCode: CLIExit.unavailable)
        }
        do {
            return try await PostgresLiveActivityStore.withStore(configuration: Self.clientConfiguration(url.configuration), logger: logger) { store in
                try await body(store)
            }
        } catch let error as LiveActivityError where error.code == .store {
            let newer = error.rule.contains("newer than this build")
            throw CLIFailure(message: "--store \(url): \(error.rule)", exitCode: newer ? CLIExit.dataError : CLIExit.unavailable)
        }
    }

    /// The server's message, or the connection's failure, in words (PSQLError's own description hides them).
    private static func reason(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        if let message = error.serverInfo?[.message] { return message }
        return error.underlying.map { "\($0)" } ?? "\(error.code)"
    }

    /// A pool's configuration for the server and credentials of one connection's.
    private static func clientConfiguration(_ connection: PostgresConnection.Configuration) -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        if let socket = connection.unixSocketPath {
            configuration = PostgresClient.Configuration(
                unixSocketPath: socket, username: connection.username, password: connection.password, database: connection.database
            )
        } else {
            let tls: PostgresClient.Configuration.TLS =
                connection.tls.isEnforced
                ? .require(.makeClientConfiguration()) : connection.tls.isAllowed ? .prefer(.makeClientConfiguration()) : .disable
            configuration = PostgresClient.Configuration(
                host: connection.host ?? "localhost", port: connection.port ?? 5432, username: connection.username,
                password: connection.password, database: connection.database, tls: tls
            )
        }
        // A command makes a few requests in a row; a server that does not answer fails it soon.
        configuration.options.connectTimeout = .seconds(10)
        configuration.options.maximumConnections = 4
        return configuration
    }
}
