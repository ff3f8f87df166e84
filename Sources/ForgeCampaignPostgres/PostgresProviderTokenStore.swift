public import ForgeAPNs
public import Logging
internal import ForgeSupport
import struct Foundation.Date
import PostgresNIO

/// One provider token per key, shared by every process that sends with the key, in a PostgreSQL
/// table (`campaign_provider_tokens`, one row per team and key): an ``APNSProviderTokenSource``
/// for ``APNSClient/Authentication/jwt(source:)``.
///
/// APNs refuses a key's token updated more than once every 20 minutes
/// (`TooManyProviderTokenUpdates`), so N replicas that each sign their own break the rule as soon
/// as N > 1. With this store they send one token:
///
/// - A process reads the row when its cached token is ``refreshAge`` (40 minutes) old, at most
///   every 30 seconds while the row's token is still usable (under 55 minutes).
/// - The read locks the row (`FOR UPDATE`) for one short transaction. The process that finds the
///   token due and the row's lease free (no owner, its own, or expired) takes the lease for
///   `lease`, signs a new token and writes it; the others wait for that transaction and read the
///   new token. A process that finds the token due while another holds the lease keeps the
///   current token while it is usable.
/// - A row whose token does not verify against the key (another key, a damaged row) is ignored
///   and logged; the process then signs its own (and writes it when it may take the lease).
/// - After APNs answers `ExpiredProviderToken` or `InvalidProviderToken`, the row is read once
///   more; if it still holds the rejected token, the process signs locally and logs it.
///
/// The table is created when missing, so the store also serves replicas that share a database but
/// no campaign: give them the same URL.
///
/// ```swift
/// let store = PostgresProviderTokenStore(url: url, key: key, keyID: keyID, teamID: teamID, owner: hostName, logger: logger)
/// let configuration = APNSClient.Configuration(authentication: .jwt(source: store.source), environment: .production)
/// ```
public final class PostgresProviderTokenStore: Sendable {
    /// The age at which the token in the row is replaced: 40 minutes, so a token read just before
    /// that is still 20 minutes from APNs' one-hour limit, and replacements are 40 minutes apart
    /// (APNs: at most one every 20 minutes).
    public static let refreshAge: Duration = .seconds(40 * 60)
    /// The oldest token handed out: five minutes before APNs' one-hour limit.
    static let maximumUseAge: Double = 55 * 60
    /// How often a process re-reads a row whose token is due while another holds the lease.
    static let recheckInterval: Double = 30

    /// The table, created when missing (also with a campaign's tables).
    static let createTable: PostgresQuery = """
        CREATE TABLE IF NOT EXISTS campaign_provider_tokens (
            team_id text NOT NULL, key_id text NOT NULL,
            jwt text, issued_at bigint,
            lease_owner text, lease_expires_at bigint,
            PRIMARY KEY (team_id, key_id)
        )
        """

    /// The advisory lock held while the table is created (the campaign schema's is 7262746567).
    static let createLock: Int64 = 7_262_746_568

    /// The key id of every token.
    public let keyID: APNSKeyID
    /// The team id of every token.
    public let teamID: APNSTeamID
    /// The name this process's lease carries (`lease_owner`).
    public let owner: String
    /// How long a lease taken to sign lasts.
    public let lease: Duration

    private let url: PostgresCampaignURL
    private let key: APNSSigningKey
    private let verificationKey: APNSVerificationKey
    private let clock: any APNSWallClock
    private let logger: Logger

    private struct Cache {
        var token: APNSProviderToken?
        /// When the row was last read.
        var readAt: Date?
        /// The token a rejection already made this process reload the row for.
        var reloadedFor: APNSProviderToken?
        var tableReady = false
        var reads = 0
        var writes = 0
        var localSignings = 0
    }

    private let cache = LockedBox(Cache())
    private let flight = SingleFlight()

    /// Creates a store; nothing is read until the first token is asked for.
    /// - Parameters:
    ///   - url: the database (a campaign's, or any other).
    ///   - owner: this process's name in the lease (a host name and process id).
    ///   - lease: how long the process signing holds the row's lease (at least a second).
    ///   - clock: the time of `iat`s, token ages and leases.
    ///   - logger: ignored rows, local signing and written tokens, at info level (key id and `iat` only, never a token).
    public init(
        url: PostgresCampaignURL, key: APNSSigningKey, keyID: APNSKeyID, teamID: APNSTeamID, owner: String,
        lease: Duration = .seconds(60), clock: any APNSWallClock = .system, logger: Logger
    ) {
        precondition(lease >= .seconds(1), "a token lease shorter than a second cannot cover a signing")
        self.url = url
        self.key = key
        self.verificationKey = key.publicKey
        self.keyID = keyID
        self.teamID = teamID
        self.owner = owner
        self.lease = lease
        self.clock = clock
        var logger = logger
        logger[metadataKey: "apns.key_id"] = "\(keyID)"
        self.logger = logger
    }

    /// The source a client takes: ``currentToken()`` and ``token(afterRejecting:)``.
    public var source: APNSProviderTokenSource {
        APNSProviderTokenSource(keyID: self.keyID, teamID: self.teamID) {
            try await self.currentToken()
        } afterRejection: { rejected in
            try await self.token(afterRejecting: rejected)
        }
    }

    /// How often this process read the row, wrote a token to it, and signed a token it did not write.
    public var counts: (reads: Int, writes: Int, localSignings: Int) {
        self.cache.withLock { ($0.reads, $0.writes, $0.localSignings) }
    }

    /// The token to send now: the cached one while it is younger than ``refreshAge``, else the row's.
    /// - Throws: ``PostgresCampaignError`` when the database fails, or what signing throws.
    public func currentToken() async throws -> APNSProviderToken {
        let now = self.clock.now
        if let token = self.cache.withLock({ Self.usable($0, now: now) }) { return token }
        return try await self.flight.run {
            let now = self.clock.now
            if let token = self.cache.withLock({ Self.usable($0, now: now) }) { return token }
            return try await self.exchange(now: now, rejected: nil)
        }
    }

    /// The token to retry with after APNs rejected `rejected` (expired or invalid): a newer one
    /// already cached, else the row's once, else one signed locally.
    public func token(afterRejecting rejected: APNSProviderToken) async throws -> APNSProviderToken {
        try await self.flight.run {
            let now = self.clock.now
            let (current, reloaded) = self.cache.withLock { ($0.token, $0.reloadedFor) }
            if let current, current != rejected { return current }
            guard reloaded != rejected else {
                return try self.signLocally(now: now, because: "APNs rejected the token at iat \(Self.seconds(rejected.issuedAt)) again")
            }
            self.cache.withLock { $0.reloadedFor = rejected }
            return try await self.exchange(now: now, rejected: rejected)
        }
    }

    /// The cached token when it may be sent without reading the row.
    private static func usable(_ cache: Cache, now: Date) -> APNSProviderToken? {
        guard let token = cache.token else { return nil }
        let age = now.timeIntervalSince(token.issuedAt)
        guard age > -60 else { return nil }
        if age < Self.seconds(Self.refreshAge) { return token }
        if age < Self.maximumUseAge, let readAt = cache.readAt, now.timeIntervalSince(readAt) < Self.recheckInterval { return token }
        return nil
    }

    /// One transaction on the key's row: read it locked, and sign and write a new token when it is
    /// due and the lease may be taken.
    private func exchange(now: Date, rejected: APNSProviderToken?) async throws -> APNSProviderToken {
        let logger = self.logger
        let team = self.teamID.rawValue, kid = self.keyID.rawValue, owner = self.owner
        let nowSeconds = Self.seconds(now)
        let decision: Decision
        do {
            decision = try await PostgresCampaign.withConnection(self.url, logger: logger) { connection in
                if !self.cache.withLock({ $0.tableReady }) {
                    // Replicas starting together would race on CREATE TABLE IF NOT EXISTS (two creators
                    // of one new table: a unique violation in pg_type); the lock makes them take turns.
                    try await connection.withTransaction(logger: logger) { connection in
                        try await connection.query("SELECT pg_advisory_xact_lock(\(Self.createLock))", logger: logger)
                        try await connection.query(Self.createTable, logger: logger)
                    }
                    self.cache.withLock { $0.tableReady = true }
                }
                return try await connection.withTransaction(logger: logger) { connection -> Decision in
                    try await connection.query(
                        "INSERT INTO campaign_provider_tokens (team_id, key_id) VALUES (\(team), \(kid)) ON CONFLICT DO NOTHING",
                        logger: logger
                    )
                    let rows = try await connection.query(
                        """
                        SELECT jwt, issued_at, lease_owner, lease_expires_at FROM campaign_provider_tokens
                        WHERE team_id = \(team) AND key_id = \(kid) FOR UPDATE
                        """,
                        logger: logger
                    )
                    var row: Row?
                    for try await values in rows.decode((String?, Int?, String?, Int?).self) {
                        row = Row(jwt: values.0, leaseOwner: values.2, leaseExpiresAt: values.3)
                    }
                    let decision = self.decide(row ?? Row(), now: now, rejected: rejected)
                    if case .write(let token, _) = decision {
                        let iat = Self.seconds(token.issuedAt)
                        let expires = nowSeconds + Int(self.lease.components.seconds)
                        try await connection.query(
                            """
                            UPDATE campaign_provider_tokens SET jwt = \(token.jwt), issued_at = \(iat),
                                lease_owner = \(owner), lease_expires_at = \(expires)
                            WHERE team_id = \(team) AND key_id = \(kid)
                            """,
                            logger: logger
                        )
                    }
                    return decision
                }
            }
        } catch let error as PostgresCampaignError {
            throw error
        } catch {
            throw PostgresCampaignError.database(error, doing: "provider token of key \(self.keyID)")
        }
        switch decision {
        case .use(let token):
            self.remember(token, now: now, wrote: false)
            return token
        case .write(let token, let replaced):
            self.remember(token, now: now, wrote: true)
            logger.info("signed the key's shared provider token", metadata: [
                "apns.token.iat": "\(Self.seconds(token.issuedAt))", "apns.token.replaced": "\(replaced)",
            ])
            return token
        case .signLocally(let why):
            return try self.signLocally(now: now, because: why)
        }
    }

    private struct Row {
        var jwt: String?
        var leaseOwner: String?
        var leaseExpiresAt: Int?
    }

    private enum Decision: Sendable {
        /// Send the row's token.
        case use(APNSProviderToken)
        /// A token signed now, to write to the row (the lease taken); `replaced` says why.
        case write(APNSProviderToken, replaced: String)
        /// Sign one for this process only.
        case signLocally(String)
    }

    /// What to do with the row, in its transaction. Signs when it writes.
    private func decide(_ row: Row, now: Date, rejected: APNSProviderToken?) -> Decision {
        var stored: APNSProviderToken?
        var problem = "the row has no token"
        if let jwt = row.jwt {
            do {
                stored = try APNSProviderToken(
                    verifying: jwt, keyID: self.keyID, teamID: self.teamID, key: self.verificationKey, now: now,
                    maximumAge: .seconds(Int64(Self.maximumUseAge))
                )
            } catch {
                problem = "the row's token is not usable (\(error.code): \(error.detail))"
                if error.code != .expired {
                    self.logger.info("ignored the shared provider token: it does not verify against the key", metadata: [
                        "apns.token.problem": "\(error.code)", "apns.token.fingerprint": "\(Self.fingerprint(jwt))",
                    ])
                }
            }
        }
        if let token = stored, let rejected, token == rejected {
            // The row still holds what APNs refused (reloaded once): this process signs for itself, and says so.
            return .signLocally("APNs rejected the row's token (iat \(Self.seconds(token.issuedAt)))")
        }
        let age = stored.map { now.timeIntervalSince($0.issuedAt) }
        if let stored, let age, age < Self.seconds(Self.refreshAge) { return .use(stored) }
        let leaseFree = row.leaseOwner == nil || row.leaseOwner == self.owner || (row.leaseExpiresAt ?? 0) <= Self.seconds(now)
        if leaseFree {
            do {
                let token = try APNSProviderToken.sign(keyID: self.keyID, teamID: self.teamID, issuedAt: now, key: self.key)
                return .write(token, replaced: age.map { "\(Int($0) / 60) minutes old" } ?? problem)
            } catch {
                return .signLocally("signing failed: \(error)")
            }
        }
        if let stored { return .use(stored) }
        return .signLocally("\(problem), and \(row.leaseOwner ?? "another process") holds the lease")
    }

    private func remember(_ token: APNSProviderToken, now: Date, wrote: Bool) {
        self.cache.withLock { cache in
            cache.token = token
            cache.readAt = now
            cache.reads += 1
            if wrote { cache.writes += 1 }
        }
    }

    /// Signs a token for this process only, caches it, and logs why.
    private func signLocally(now: Date, because why: String) throws -> APNSProviderToken {
        let token = try APNSProviderToken.sign(keyID: self.keyID, teamID: self.teamID, issuedAt: now, key: self.key)
        self.cache.withLock { cache in
            cache.token = token
            cache.readAt = now
            cache.localSignings += 1
        }
        self.logger.info("signed a provider token locally instead of the shared one", metadata: [
            "apns.token.iat": "\(Self.seconds(token.issuedAt))", "apns.token.reason": "\(why)",
        ])
        return token
    }

    /// The first 8 hex digits of the JWT's SHA-256: tells rows apart in logs without revealing them.
    private static func fingerprint(_ jwt: String) -> String {
        String((SHA256Digest.hex(Array(jwt.utf8)) ?? "-").prefix(8))
    }

    private static func seconds(_ date: Date) -> Int { Int(date.timeIntervalSince1970.rounded(.down)) }
    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Runs one body at a time for its callers: those who ask while it runs wait for its result.
/// The body's task is awaited by every caller that asked for it, and by no one after it is done.
private actor SingleFlight {
    private var running: Task<APNSProviderToken, any Error>?

    func run(_ body: @escaping @Sendable () async throws -> APNSProviderToken) async throws -> APNSProviderToken {
        if let running { return try await running.value }
        let task = Task { try await body() }
        self.running = task
        defer { self.running = nil }
        return try await task.value
    }
}
