import ForgeCampaignPostgres
import PostgresNIO
import Testing

@Suite("PostgresCampaignURL: the --postgres URL, TCP or Unix socket")
struct PostgresCampaignURLTests {
    @Test("A Unix socket: ?host= names the socket's folder, the port its file name; no password, no TLS")
    func unixSocket() throws {
        let url = try PostgresCampaignURL("postgres://forge@/campaigns?host=/run/pg&port=5433", environment: [:])
        #expect(url.configuration.unixSocketPath == "/run/pg/.s.PGSQL.5433")
        #expect(url.configuration.username == "forge" && url.configuration.database == "campaigns" && url.configuration.password == nil)
        #expect(!url.configuration.tls.isAllowed)
        let bare = try PostgresCampaignURL("postgresql:///db?host=/tmp/s", environment: ["USER": "alice"])
        #expect(bare.configuration.unixSocketPath == "/tmp/s/.s.PGSQL.5432" && bare.configuration.username == "alice")
        // libpq's other spelling: the folder percent-encoded as the host.
        let encoded = try PostgresCampaignURL("postgres://forge@%2Frun%2Fpg:6000/db", environment: [:])
        #expect(encoded.configuration.unixSocketPath == "/run/pg/.s.PGSQL.6000")
    }

    @Test("TCP: TLS required and verified unless sslmode=disable; the password never in the description")
    func tcp() throws {
        let url = try PostgresCampaignURL("postgres://app:s3cret@db.example.com:6432/campaigns", environment: [:])
        #expect(url.configuration.host == "db.example.com" && url.configuration.port == 6432)
        #expect(url.configuration.password == "s3cret" && url.configuration.tls.isEnforced)
        #expect(!url.description.contains("s3cret") && url.description.contains("db.example.com"), "\(url.description)")
        let plain = try PostgresCampaignURL("postgres://app@127.0.0.1/db?sslmode=disable", environment: ["PGPASSWORD": "pw"])
        #expect(plain.configuration.port == 5432 && !plain.configuration.tls.isAllowed && plain.configuration.password == "pw")
    }

    @Test("Bad URLs name what is wrong", arguments: [
        ("mysql://h/db", "not a postgres:// URL"),
        ("postgres://h:99999/db", "port"),
        ("postgres://u@/db", "no host"),
        ("postgres://h/db?sslmode=allow", "sslmode 'allow'"),
        ("postgres://h/db?bogus=1", "unknown query parameter 'bogus'"),
        ("postgres:///db?host=/s&sslmode=require", "a Unix socket has no TLS"),
    ])
    func bad(text: String, complaint: String) {
        #expect(throws: PostgresCampaignError.self) { try PostgresCampaignURL(text, environment: [:]) }
        do {
            _ = try PostgresCampaignURL(text, environment: [:])
        } catch let error as PostgresCampaignError {
            #expect(error.kind == .badURL && error.description.hasPrefix("--postgres: ") && error.description.contains(complaint), "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }
}
