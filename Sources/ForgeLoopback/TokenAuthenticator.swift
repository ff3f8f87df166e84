public import ForgeAPNsCore
public import ForgeCrypto
package import struct Foundation.Date
internal import ForgeSupport

/// A provider-token signing key the local server knows.
public struct LocalAPNSKey: Sendable {
    /// The key id (`kid`).
    public var keyID: APNSKeyID
    /// The team the key belongs to (`iss` must match).
    public var teamID: APNSTeamID
    /// The public key that verifies its tokens.
    public var verificationKey: APNSVerificationKey
    /// The environment the key is restricted to, or `nil` for a key valid in both.
    public var environment: LocalAPNSConfiguration.Environment?
    /// The bundle ids a topic-specific key covers, or `nil` for a team-scoped key (every topic).
    public var bundleIDs: Set<String>?

    /// Creates a key.
    public init(
        keyID: APNSKeyID, teamID: APNSTeamID, verificationKey: APNSVerificationKey,
        environment: LocalAPNSConfiguration.Environment? = nil, bundleIDs: Set<String>? = nil
    ) {
        self.keyID = keyID
        self.teamID = teamID
        self.verificationKey = verificationKey
        self.environment = environment
        self.bundleIDs = bundleIDs
    }
}

/// Token authentication as APNs applies it, rules A1-A8 of docs/local-server-rules.md, with the state APNs keeps
/// per connection: the team and key of the first push, and the last token and when it changed.
public final class TokenAuthenticator: Sendable {
    private struct ConnectionState {
        var teamID: String
        var keyID: String
        /// The whole `authorization` value last accepted, its key and `iat`: a push repeating it
        /// (nearly every push) is checked without parsing or hashing the token again.
        var authorization: String
        var key: LocalAPNSKey
        var issuedAt: Date
        var changedAt: Date
    }

    private let keys: [APNSKeyID: LocalAPNSKey]
    private let verifier: APNSProviderTokenVerifier
    private let environment: LocalAPNSConfiguration.Environment
    private let clock: any APNSWallClock
    private let badEnvironmentKeyReason: APNSErrorReason
    private let connections = LockedBox<[UInt64: ConnectionState]>([:])
    /// Per key id: when its current token was first accepted, and the `iat` of every token it had
    /// (only kept with a ``tokenUpdateLimit``).
    private struct KeyTokens {
        var changedAt: Date
        var history: [Date]
    }
    private let keyTokens = LockedBox<[String: KeyTokens]>([:])
    /// The shortest time between two tokens of one key, across connections; `nil`: not checked.
    public let tokenUpdateLimit: Duration?
    private let tokenUpdateLimitSeconds: Double
    /// Tokens whose signature verified, by JWT string: clients reuse one token for up to an hour,
    /// so the ES256 check runs once per token, not once per push. Age is checked on every use.
    private let verified = LockedBox<[String: APNSVerifiedProviderToken]>([:])
    private static let verifiedCacheLimit = 1024

    /// The registered keys, by key id.
    var registeredKeys: [LocalAPNSKey] { self.keys.values.sorted { $0.keyID.rawValue < $1.keyID.rawValue } }

    /// The shortest time between two different tokens on one connection (A5; 20 minutes per Apple).
    public static let tokenUpdateInterval: Double = 20 * 60

    /// Creates an authenticator.
    /// - Parameters:
    ///   - keys: the registered keys; a provider token must name one of them.
    ///   - environment: the environment the server plays.
    ///   - clock: the time against which tokens are judged (age, the update limit).
    ///   - badEnvironmentKeyReason: A7's reason: the spelling APNs was seen sending by default.
    ///   - lenient: also accept what APNs was seen accepting but no client should send (A3): DER
    ///     signatures and a string `iat` (APNSwift 6.4 sends one). Strict by default.
    ///   - tokenUpdateLimit: when set, a key's new token (an `iat` not seen before for the key)
    ///     is accepted only this long after the key's previous new token was first seen, on any
    ///     connection; sooner is `TooManyProviderTokenUpdates`. Apple documents "refresh no more
    ///     than once every 20 minutes"; off by default, as the per-connection rule (A5) is what
    ///     APNs is known to enforce. A token the key had before stays accepted (a sender that
    ///     reads the replacement a few seconds late).
    public init(
        keys: [LocalAPNSKey],
        environment: LocalAPNSConfiguration.Environment,
        clock: any APNSWallClock = .system,
        badEnvironmentKeyReason: APNSErrorReason = .badEnvironmentKeyInToken,
        lenient: Bool = false,
        tokenUpdateLimit: Duration? = nil
    ) {
        self.tokenUpdateLimit = tokenUpdateLimit
        self.tokenUpdateLimitSeconds = tokenUpdateLimit.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 } ?? 0
        self.keys = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { _, last in last })
        var verifier = APNSProviderTokenVerifier(keys: self.keys.mapValues(\.verificationKey), acceptsDERSignatures: lenient)
        verifier.acceptsStringIssuedAt = lenient
        self.verifier = verifier
        self.environment = environment
        self.clock = clock
        self.badEnvironmentKeyReason = badEnvironmentKeyReason
    }

    /// Checks the `authorization` header of a push to `bundleID` on `connectionID`.
    /// - Parameters:
    ///   - authorization: the request's `authorization` header, if any.
    ///   - bundleID: the push's bundle id.
    ///   - connectionID: the connection it came on (one team and key per connection).
    ///   - topicNotCoveredReason: the reason when a topic-specific key does not cover
    ///     `bundleID`: `InvalidProviderToken` for device pushes (A8), `TopicMismatch` for broadcasts (B5).
    /// - Returns: the reason APNs would give, or `nil` when the token is good.
    package func check(
        authorization: String?, bundleID: String, connectionID: UInt64,
        topicNotCoveredReason: APNSErrorReason = .invalidProviderToken
    ) -> APNSErrorReason? {
        // A1
        guard let authorization, authorization.hasPrefix("bearer "), authorization.utf8.count > 7 else {
            return .missingProviderToken
        }
        let now = self.clock.now
        let maximumAge = Double(self.verifier.maximumAge.components.seconds)
        // The fast path: the token this connection used last time.
        let repeated = self.connections.withLock { connections -> ConnectionState? in
            guard let state = connections[connectionID], state.authorization == authorization else { return nil }
            return state
        }
        if let state = repeated {
            guard now.timeIntervalSince(state.issuedAt) <= maximumAge else { return .expiredProviderToken }
            return self.keyRules(state.key, bundleID: bundleID, topicNotCoveredReason: topicNotCoveredReason)
        }
        let jwt = String(authorization.dropFirst(7))
        // A2, A4
        let verified: APNSVerifiedProviderToken
        if let cached = self.verified.withLock({ $0[jwt] }) {
            guard now.timeIntervalSince(cached.issuedAt) <= maximumAge else { return .expiredProviderToken }
            verified = cached
        } else {
            do {
                verified = try self.verifier.verify(jwt, now: now)
            } catch {
                return error.code == .expired ? .expiredProviderToken : .invalidProviderToken
            }
            self.verified.withLock { cache in
                if cache.count >= Self.verifiedCacheLimit { cache.removeAll(keepingCapacity: true) }
                cache[jwt] = verified
            }
        }
        guard let keyID = try? APNSKeyID(verified.keyID), let key = self.keys[keyID], key.teamID.rawValue == verified.teamID else {
            return .invalidProviderToken
        }
        return self.connections.withLock { connections -> APNSErrorReason? in
            if let state = connections[connectionID] {
                // A8: another team on this connection; A6: a key unrelated to the first push's.
                if state.teamID != verified.teamID { return .invalidProviderToken }
                if state.keyID != verified.keyID { return .unrelatedKeyIDInToken }
            }
            if let reason = self.keyRules(key, bundleID: bundleID, topicNotCoveredReason: topicNotCoveredReason) { return reason }
            if let state = connections[connectionID] {
                // Another request verified the same token first: it is this connection's token, not a new one.
                if state.authorization == authorization { return nil }
                // A5: a new token on a bound connection.
                if now.timeIntervalSince(state.changedAt) < Self.tokenUpdateInterval { return .tooManyProviderTokenUpdates }
            }
            if self.tokenUpdateLimit != nil, !self.acceptKeyToken(keyID: verified.keyID, issuedAt: verified.issuedAt, now: now) {
                return .tooManyProviderTokenUpdates
            }
            connections[connectionID] = ConnectionState(
                teamID: verified.teamID, keyID: verified.keyID, authorization: authorization, key: key,
                issuedAt: verified.issuedAt, changedAt: now
            )
            return nil
        }
    }

    /// The key-wide rule: a token with an `iat` the key never had is accepted only
    /// ``tokenUpdateLimit`` after the key's previous new token was first seen. Called with the
    /// connections' lock held, so two connections presenting new tokens at once are judged one
    /// after the other.
    private func acceptKeyToken(keyID: String, issuedAt: Date, now: Date) -> Bool {
        self.keyTokens.withLock { keys in
            guard var tokens = keys[keyID] else {
                keys[keyID] = KeyTokens(changedAt: now, history: [issuedAt])
                return true
            }
            if tokens.history.contains(issuedAt) { return true }
            guard now.timeIntervalSince(tokens.changedAt) >= self.tokenUpdateLimitSeconds else { return false }
            tokens.changedAt = now
            tokens.history.append(issuedAt)
            keys[keyID] = tokens
            return true
        }
    }

    /// The `iat` of every token `keyID` had, in the order they were first accepted (kept only
    /// with a ``tokenUpdateLimit``): one per refresh when the senders share their token.
    package func tokenIssueDates(keyID: APNSKeyID) -> [Date] {
        self.keyTokens.withLock { $0[keyID.rawValue]?.history ?? [] }
    }

    /// A7 and A8's coverage rule for a verified key.
    private func keyRules(_ key: LocalAPNSKey, bundleID: String, topicNotCoveredReason: APNSErrorReason) -> APNSErrorReason? {
        if let environment = key.environment, environment != self.environment { return self.badEnvironmentKeyReason }
        if let bundles = key.bundleIDs, !bundles.contains(bundleID) { return topicNotCoveredReason }
        return nil
    }
}

extension TokenAuthenticator {
    /// Forgets what was bound to a closed connection.
    package func forget(connectionID: UInt64) {
        _ = self.connections.withLock { $0.removeValue(forKey: connectionID) }
    }
}
