import ForgeAPNs
import ForgeAPNsCore
import ForgeCampaign
import ForgeCampaignPostgres
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
import Logging
import Testing

/// A worker's wall clock: the test's, `offset` seconds ahead (workers started at different seconds).
private struct OffsetClock: APNSWallClock {
    let base: ManualWallClock
    let offset: TimeInterval
    var now: Date { self.base.now + self.offset }
}

private let key = try! APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
private let keyID = try! APNSKeyID("FORGEKEY01")
private let teamID = try! APNSTeamID("FORGETEAM1")
private let topic = "com.example.forgepush"

/// A private cluster, a manual clock and a log capture, and stores on them named by owner.
private struct Fixture {
    let postgres: PostgresProcess
    let url: PostgresCampaignURL
    let clock = ManualWallClock(SharedProviderTokenTests.start)
    let capture = LogCapture()

    init() async throws {
        self.postgres = try await offPool { try PostgresProcess() }
        self.url = try PostgresCampaignURL(self.postgres.url)
    }

    func store(_ owner: String) -> PostgresProviderTokenStore {
        PostgresProviderTokenStore(
            url: self.url, key: key, keyID: keyID, teamID: teamID, owner: owner, clock: self.clock, logger: self.capture.logger(label: owner)
        )
    }
}

@Suite("PostgresProviderTokenStore: one provider token per key for every worker", .serialized, .timeLimit(.minutes(3)))
struct SharedProviderTokenTests {
    static let start = Date(timeIntervalSince1970: 1_760_000_000)

    /// A campaign of `count` tokens in batches of `batchSize`.
    private static func campaign(_ name: String, tokens count: Int, batchSize: Int, url: PostgresCampaignURL) async throws -> PostgresCampaign {
        let notification = try APNSPreparedNotification(
            pushType: .alert, topic: APNSTopic(topic, pushType: .alert), body: Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        )
        var next = 0
        return try await PostgresCampaign.create(
            .init(name: name, notification: notification, tokensPath: "tokens.txt", batchSize: batchSize), url: url, logger: Logger(label: "test")
        ) {
            guard next < count else { return nil }
            defer { next += 1 }
            return CampaignJournal.Entry(index: next, line: next + 1, token: String(format: "%064x", next + 1))
        }
    }

    /// The local server with `--token-update-limit 20m`, judging on `clock`.
    private static func server(clock: any APNSWallClock) throws -> (LocalAPNSServer, TokenAuthenticator) {
        let authenticator = TokenAuthenticator(
            keys: [LocalAPNSKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: .sandbox, clock: clock,
            tokenUpdateLimit: .seconds(20 * 60)
        )
        let tls = HTTP2ServerTLSConfiguration(certificateChainFile: KeysExample.path("server.pem"), privateKeyFile: KeysExample.path("server.key"))
        let server = try LocalAPNSServer.start(
            LocalAPNSConfiguration(keepsHistory: false), http2: HTTP2ServerConfiguration(tls: tls), authenticator: authenticator, clock: clock
        )
        return (server, authenticator)
    }

    /// Runs `workers` workers of `campaign` at once, each with its own client on `authentication(i)`
    /// and `clock(i)`; returns every committed verdict.
    private static func work(
        _ campaign: PostgresCampaign, workers: Int, port: Int, clock: @escaping @Sendable (Int) -> any APNSWallClock,
        authentication: @escaping @Sendable (Int) -> APNSClient.Authentication
    ) async throws -> [CampaignReport.Line] {
        let lines = LockedBox<[CampaignReport.Line]>([])
        try await withThrowingTaskGroup(of: PostgresCampaignWorker.Outcome.self) { group in
            for index in 0..<workers {
                group.addTask {
                    let configuration = APNSClient.Configuration(
                        authentication: authentication(index), environment: .custom(host: "localhost", port: port),
                        tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem")),
                        // TooManyProviderTokenUpdates is a 429: report it at once instead of backing off.
                        retry: APNSClient.RetryPolicy(attempts: 1), clock: clock(index)
                    )
                    let worker = PostgresCampaignWorker(campaign: campaign, owner: "w\(index)")
                    return try await withAPNSClient(configuration: configuration) { client in
                        try await worker.run(client: client) { event in
                            if case .committed(let committed) = event { lines.withLock { $0 += committed } }
                        }
                    }
                }
            }
            for try await outcome in group { #expect(outcome == .complete) }
        }
        return lines.withLock { $0 }
    }

    private static func rejections(_ lines: [CampaignReport.Line]) -> Int {
        lines.filter { $0.reason == "TooManyProviderTokenUpdates" }.count
    }

    @Test("8 workers on one campaign against --token-update-limit 20m: each signing its own token, pushes are rejected; sharing one, none are, and the server sees one token per refresh")
    func eightWorkers() async throws {
        let postgres = try await offPool { try PostgresProcess() }
        defer { postgres.stop() }
        let url = try PostgresCampaignURL(postgres.url)
        let workers = 8, tokens = 256, batchSize = 16
        let clock = ManualWallClock(Self.start)
        let workerClock: @Sendable (Int) -> any APNSWallClock = { OffsetClock(base: clock, offset: Double($0)) }

        // Each worker signs its own token, a second apart: the server keeps the first it sees.
        let (perWorkerServer, perWorkerAuth) = try Self.server(clock: clock)
        let perWorker = try await Self.work(
            try await Self.campaign("per-worker", tokens: tokens, batchSize: batchSize, url: url), workers: workers,
            port: perWorkerServer.port, clock: workerClock
        ) { _ in .jwt(key: key, keyID: keyID, teamID: teamID) }
        await perWorkerServer.shutdown()
        #expect(perWorker.count == tokens)
        let perWorkerRejected = Self.rejections(perWorker)
        #expect(perWorkerRejected > 0 && perWorkerRejected < tokens)
        #expect(perWorkerAuth.tokenIssueDates(keyID: keyID).count == 1)

        // One store per worker (as one per process), all on the campaign's database.
        let capture = LogCapture()
        let stores = (0..<workers).map { index in
            PostgresProviderTokenStore(
                url: url, key: key, keyID: keyID, teamID: teamID, owner: "w\(index)", clock: workerClock(index),
                logger: capture.logger(label: "store")
            )
        }
        let (sharedServer, sharedAuth) = try Self.server(clock: clock)
        let first = try await Self.work(
            try await Self.campaign("shared-1", tokens: tokens, batchSize: batchSize, url: url), workers: workers,
            port: sharedServer.port, clock: workerClock
        ) { .jwt(source: stores[$0].source) }
        // 41 minutes later the token is due: one worker signs the next, the others read it.
        clock.advance(by: 41 * 60)
        let second = try await Self.work(
            try await Self.campaign("shared-2", tokens: tokens, batchSize: batchSize, url: url), workers: workers,
            port: sharedServer.port, clock: workerClock
        ) { .jwt(source: stores[$0].source) }
        await sharedServer.shutdown()
        #expect(first.count == tokens && second.count == tokens)
        #expect(Self.rejections(first) == 0 && Self.rejections(second) == 0)
        #expect(first.allSatisfy { $0.outcome == "accepted" } && second.allSatisfy { $0.outcome == "accepted" })
        let seen = sharedAuth.tokenIssueDates(keyID: keyID)
        #expect(seen.count == 2)
        if seen.count == 2 { #expect(seen[1].timeIntervalSince(seen[0]) >= 40 * 60) }
        let counts = stores.map(\.counts)
        #expect(counts.map(\.writes).reduce(0, +) == 2)
        #expect(counts.map(\.localSignings).reduce(0, +) == 0)
        #expect(try await offPool { try postgres.psql("SELECT count(*) FROM campaign_provider_tokens") } == "1")
        print("8 workers, \(tokens) tokens: per-worker signing \(perWorkerRejected) rejected TooManyProviderTokenUpdates; "
              + "shared store 0 rejected, \(seen.count) tokens over two refresh periods, \(counts.map(\.reads).reduce(0, +)) row reads")
        // Nothing logged a token: only key ids, iats and fingerprints.
        #expect(!capture.lines.contains { $0.contains("eyJ") })
    }

    @Test("A row whose token does not verify against the key is ignored, logged, and replaced by a token signed here")
    func badRow() async throws {
        let fixture = try await Fixture()
        defer { fixture.postgres.stop() }
        let (postgres, clock, capture, store) = (fixture.postgres, fixture.clock, fixture.capture, fixture.store)
        // A token for the same kid and iss, signed by another key.
        let forged = try APNSProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: Self.start, key: try APNSSigningKey.generate())
        _ = try await store("a").currentToken()
        _ = try await offPool {
            try postgres.psql("UPDATE campaign_provider_tokens SET jwt = '\(forged.jwt)', issued_at = \(Int(Self.start.timeIntervalSince1970)), lease_owner = NULL")
        }
        let b = store("b")
        let token = try await b.currentToken()
        #expect(token != forged)
        _ = try APNSProviderToken(verifying: token.jwt, keyID: keyID, teamID: teamID, key: key.publicKey, now: clock.now)
        #expect(b.counts.writes == 1)
        #expect(capture.lines.contains { $0.contains("ignored the shared provider token: it does not verify against the key") })
        #expect(!capture.lines.contains { $0.contains(forged.jwt) || $0.contains(token.jwt) })
        // The row now holds the good token: a third process reads it.
        #expect(try await store("c").currentToken() == token)
    }

    @Test("After a rejection the row is read once more; if it still holds the rejected token, the process signs locally and logs it")
    func rejection() async throws {
        let fixture = try await Fixture()
        defer { fixture.postgres.stop() }
        let (postgres, clock, capture) = (fixture.postgres, fixture.clock, fixture.capture)
        let a = fixture.store("a"), b = fixture.store("b")
        let shared = try await a.currentToken()
        #expect(try await b.currentToken() == shared)
        clock.advance(by: 1)
        let local = try await b.token(afterRejecting: shared)
        #expect(local != shared && local.issuedAt == Self.start + 1)
        #expect(b.counts.localSignings == 1 && b.counts.reads == 1)
        #expect(capture.lines.contains { $0.contains("signed a provider token locally instead of the shared one") })
        // The local token is b's own: the row still holds the shared one.
        #expect(try await offPool { try postgres.psql("SELECT issued_at FROM campaign_provider_tokens") } == "\(Int(Self.start.timeIntervalSince1970))")
    }

    @Test("A due token while another process holds the row's lease: kept (no second signer) and read again every 30 s; the lease once expired is taken over; an empty row under another's lease makes the process sign locally")
    func leaseHeldElsewhere() async throws {
        let fixture = try await Fixture()
        defer { fixture.postgres.stop() }
        let (postgres, clock, capture) = (fixture.postgres, fixture.clock, fixture.capture)
        let a = fixture.store("a"), b = fixture.store("b")
        let first = try await a.currentToken()
        // 41 minutes on, the token is due; a is signing (its lease runs ten more minutes).
        clock.advance(by: 41 * 60)
        let now = Int(clock.now.timeIntervalSince1970)
        _ = try await offPool { try postgres.psql("UPDATE campaign_provider_tokens SET lease_owner = 'a', lease_expires_at = \(now + 600)") }
        #expect(try await b.currentToken() == first)
        #expect(b.counts.writes == 0 && b.counts.localSignings == 0 && b.counts.reads == 1)
        // Within 30 s, b sends the cached token without reading the row; after them it reads again.
        clock.advance(by: 20)
        #expect(try await b.currentToken() == first && b.counts.reads == 1)
        clock.advance(by: 20)
        #expect(try await b.currentToken() == first && b.counts.reads == 2 && b.counts.writes == 0)
        // a's lease expires without a new token (a crashed): b takes the lease and signs.
        clock.advance(by: 600)
        let second = try await b.currentToken()
        #expect(second != first && second.issuedAt == clock.now && b.counts.writes == 1)
        #expect(try await offPool { try postgres.psql("SELECT lease_owner FROM campaign_provider_tokens") } == "b")
        // A row with no token at all while c holds its lease: d cannot wait for a token that is not there.
        let later = Int(clock.now.timeIntervalSince1970)
        _ = try await offPool {
            try postgres.psql("UPDATE campaign_provider_tokens SET jwt = NULL, issued_at = NULL, lease_owner = 'c', lease_expires_at = \(later + 600)")
        }
        let d = fixture.store("d")
        let local = try await d.currentToken()
        #expect(local != second && d.counts.localSignings == 1 && d.counts.writes == 0)
        #expect(capture.lines.contains { $0.contains("signed a provider token locally instead of the shared one") && $0.contains("c holds the lease") },
                "\(capture.lines)")
    }
}
