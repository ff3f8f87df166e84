@testable import ForgeCampaignPostgres
import ForgeTestSupport
import Logging
import PostgresNIO
import Testing

/// sslmode against a real PostgreSQL on 127.0.0.1 without TLS (initdb's default): require says
/// what to add, prefer and disable connect.
@Suite("--postgres sslmode against a server without TLS", .timeLimit(.minutes(2)))
struct PostgresTLSModeTests {
    @Test("require (the default): the error says the server offers no TLS and names ?sslmode=disable; prefer and disable connect")
    func modes() async throws {
        let postgres = try await offPool { try PostgresProcess(tcp: true) }
        defer { postgres.stop() }
        let base = "postgres://forge@127.0.0.1:\(postgres.port)/postgres"
        let logger = Logger(label: "test")
        let required = try PostgresCampaignURL(base, environment: [:])
        do {
            try await PostgresCampaign.withConnection(required, logger: logger) { _ in }
            Issue.record("connected with TLS required to a server without TLS")
        } catch let error as PostgresCampaignError {
            #expect(error.description.contains("the server does not offer TLS; for a database on a trusted network add ?sslmode=disable to --postgres"),
                    "\(error)")
        }
        for mode in ["prefer", "disable"] {
            let url = try PostgresCampaignURL(base + "?sslmode=\(mode)", environment: [:])
            let value = try await PostgresCampaign.withConnection(url, logger: logger) { connection in
                try await connection.query("SELECT 1::int", logger: logger).collect().first?.decode(Int.self)
            }
            #expect(value == 1, "sslmode=\(mode)")
        }
    }
}
