import ArgumentParser
import ForgeLiveActivities
import ForgeLiveActivitiesPostgres
import ForgeLiveActivitiesSQLite
import ForgeTestSupport
import Foundation
import Logging
import PostgresNIO

extension APNSBench.Activities {
    /// A store the benchmark measures.
    enum StoreKind: String, ExpressibleByArgument, CaseIterable {
        case memory, sqlite, postgres
        /// Every store, in the order above.
        case all

        /// The stores this choice stands for.
        var kinds: [StoreKind] { self == .all ? [.memory, .sqlite, .postgres] : [self] }
    }

    /// `--sqlite-durability`: the SQLite store's ``SQLiteLiveActivityStore/Durability``.
    enum SQLiteDurability: String, ExpressibleByArgument, CaseIterable, Sendable {
        case full, normal

        var durability: SQLiteLiveActivityStore.Durability { self == .full ? .full : .normal }
    }

    /// Where the round's fresh stores are made: a folder for SQLite files, and the PostgreSQL
    /// cluster when a PostgreSQL store is measured (started once for the whole run).
    struct StoreFactory: Sendable {
        let folder: TemporaryFolder
        let postgres: PostgresProcess?
        let connections: Int
        let sqliteDurability: SQLiteDurability

        /// Makes the folder, and starts a PostgreSQL cluster in it when `postgres` says so.
        /// - Throws: a `ValidationError` that says what is missing when PostgreSQL's programs are not installed.
        static func make(postgres: Bool, connections: Int, sqliteDurability: SQLiteDurability) async throws -> StoreFactory {
            let folder = try TemporaryFolder("apns-bench-activities")
            guard postgres else { return StoreFactory(folder: folder, postgres: nil, connections: connections, sqliteDurability: sqliteDurability) }
            do {
                // initdb and pg_isready block: a thread of their own, not one of the cooperative pool's.
                let cluster = try await offPool { try PostgresProcess(tcp: true) }
                return StoreFactory(folder: folder, postgres: cluster, connections: connections, sqliteDurability: sqliteDurability)
            } catch {
                folder.remove()
                throw ValidationError(
                    "--store postgres needs PostgreSQL's initdb and postgres (Debian's postgresql package, /usr/lib/postgresql/VERSION/bin; "
                        + "`make deps` installs it), and could not start a cluster: \(error)"
                )
            }
        }

        /// Stops the cluster and removes the folder.
        func remove() {
            self.postgres?.stop()
            self.folder.remove()
        }

        /// Runs `body` with a new, empty store of `kind` (a new SQLite file; a new PostgreSQL
        /// database, its client with `connections` connections), removed afterwards.
        func withFreshStore<Result: Sendable>(
            _ kind: StoreKind, name: String, _ body: (any LiveActivityStore) async throws -> Result
        ) async throws -> Result {
            switch kind {
            case .memory, .all:
                return try await body(InMemoryLiveActivityStore())
            case .sqlite:
                let path = self.folder.url.appendingPathComponent("\(name).sqlite").path
                defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
                return try await body(try SQLiteLiveActivityStore(path: path, durability: self.sqliteDurability.durability))
            case .postgres:
                guard let cluster = self.postgres else { preconditionFailure("a PostgreSQL store without its cluster") }
                _ = try await offPool { try cluster.psql("CREATE DATABASE \(name)") }
                var configuration = PostgresClient.Configuration(
                    host: "127.0.0.1", port: cluster.port, username: "forge", password: nil, database: name, tls: .disable
                )
                configuration.options.maximumConnections = self.connections
                let result: Swift.Result<Result, any Error>
                do {
                    result = .success(
                        try await PostgresLiveActivityStore.withStore(configuration: configuration, logger: quietLogger) { try await body($0) }
                    )
                } catch {
                    result = .failure(error)
                }
                _ = try await offPool { try cluster.psql("DROP DATABASE \(name) WITH (FORCE)") }
                return try result.get()
            }
        }
    }
}

/// The PostgreSQL client's logger: nothing is logged while measuring.
let quietLogger = Logger(label: "apns-bench", factory: { _ in SwiftLogNoOpLogHandler() })
