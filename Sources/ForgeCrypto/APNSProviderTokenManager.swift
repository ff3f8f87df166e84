package import ForgeAPNsCore
internal import struct Foundation.Date
internal import ForgeSupport

/// Makes and reuses the provider token of one (team, key), shared by every connection that uses it.
///
/// A token is reused until it is ``refreshAge`` old (50 minutes by default; APNs refuses tokens older
/// than 60 minutes and new tokens more often than every 20 minutes on one connection), then a new
/// one is signed. Callers that ask while a refresh is being signed wait for it and share it, so one
/// refresh signs once. Time comes from the injected clock only.
package final class APNSProviderTokenManager: Sendable {
    /// The shortest allowed refresh age: APNs answers `TooManyProviderTokenUpdates` to faster churn.
    package static let minimumRefreshAge: Duration = .seconds(20 * 60)
    /// The longest allowed refresh age: five minutes of margin before APNs' one-hour limit.
    package static let maximumRefreshAge: Duration = .seconds(55 * 60)

    private struct State {
        var current: APNSProviderToken?
        var signings = 0
        var lastForcedRefresh: Date?
    }

    private let key: APNSSigningKey
    /// The key id in every token.
    package let keyID: APNSKeyID
    /// The team id in every token.
    package let teamID: APNSTeamID
    /// The age at which a token is replaced.
    package let refreshAge: Duration
    /// ``refreshAge`` in seconds, converted once (each send compares a token's age with it).
    private let refreshSeconds: Double
    private let clock: any APNSWallClock
    private let state = LockedBox(State())

    /// Creates a manager; nothing is signed until the first ``currentToken()``.
    /// - Throws: ``APNSValidationError/Code/badConfiguration`` unless `refreshAge` is 20 to 55 minutes.
    package init(
        key: APNSSigningKey,
        keyID: APNSKeyID,
        teamID: APNSTeamID,
        refreshAge: Duration = .seconds(50 * 60),
        clock: any APNSWallClock = .system
    ) throws(APNSValidationError) {
        guard refreshAge >= Self.minimumRefreshAge, refreshAge <= Self.maximumRefreshAge else {
            throw APNSValidationError(
                .badConfiguration,
                field: "token refresh age",
                rule: "must be between 20 and 55 minutes (got \(refreshAge.components.seconds) s)"
            )
        }
        self.key = key
        self.keyID = keyID
        self.teamID = teamID
        self.refreshAge = refreshAge
        self.refreshSeconds = Self.seconds(refreshAge)
        self.clock = clock
    }

    /// How many tokens this manager has signed.
    package var signingCount: Int { self.state.withLock { $0.signings } }

    /// The token to send now: the cached one while it is younger than ``refreshAge``, else a new one.
    /// - Throws: ``APNSKeyError/Code/signingFailed`` if OpenSSL fails.
    package func currentToken() throws(APNSKeyError) -> APNSProviderToken {
        // Read before the lock: every send comes here, and the lock is held for a comparison only.
        let now = self.clock.now
        return try self.state.withLock { (state: inout State) throws(APNSKeyError) -> APNSProviderToken in
            // A clock that stepped back more than a minute before the token's iat would have APNs see a
            // token from the future; sign a fresh one then too.
            if let token = state.current {
                let age = Self.age(of: token, at: now)
                if age < self.refreshSeconds, age > -60 { return token }
            }
            return try self.sign(at: now, into: &state)
        }
    }

    /// The token to retry with after APNs answered `ExpiredProviderToken` for `rejected`.
    ///
    /// If a newer token already replaced `rejected`, that one. Otherwise a new token, but never more
    /// than one forced refresh per 20 minutes: within that window the current token is returned
    /// unchanged (and the caller should report the rejection rather than loop).
    package func tokenAfterExpiredProviderToken(rejected: APNSProviderToken) throws(APNSKeyError) -> APNSProviderToken {
        try self.state.withLock { (state: inout State) throws(APNSKeyError) -> APNSProviderToken in
            let now = self.clock.now
            if let current = state.current, current != rejected { return current }
            if let last = state.lastForcedRefresh, now.timeIntervalSince(last) < Self.seconds(Self.minimumRefreshAge),
                let current = state.current
            {
                return current
            }
            state.lastForcedRefresh = now
            return try self.sign(at: now, into: &state)
        }
    }

    private func sign(at now: Date, into state: inout State) throws(APNSKeyError) -> APNSProviderToken {
        let token = try APNSProviderToken.sign(keyID: self.keyID, teamID: self.teamID, issuedAt: now, key: self.key)
        state.current = token
        state.signings += 1
        return token
    }

    private static func age(of token: APNSProviderToken, at now: Date) -> Double {
        now.timeIntervalSince(token.issuedAt)
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
