public import ForgeAPNsCore
public import ForgeCrypto

/// Where a client's provider token comes from: an async function returning the current token
/// (its `iat` is `APNSProviderToken.issuedAt`), and what to do when APNs rejects one.
///
/// Apple accepts a new token for a key at most once every 20 minutes and refuses one older than an
/// hour. A single process signing its own token (what ``APNSClient/Authentication/jwt(key:keyID:teamID:refreshAge:)``
/// does) keeps to that. Several processes sending with one key each sign their own and, together,
/// update the key's token too often: APNs then answers `TooManyProviderTokenUpdates`. They share
/// one token instead, from a source every replica reads, such as `ForgeCampaignPostgres`'s
/// `PostgresProviderTokenStore`, or one of your own made with ``init(keyID:teamID:current:afterRejection:)``.
///
/// ```swift
/// let source = APNSProviderTokenSource(keyID: keyID, teamID: teamID) {
///     try await vault.currentToken()          // your shared store
/// } afterRejection: { rejected in
///     try await vault.reload(replacing: rejected)
/// }
/// let configuration = APNSClient.Configuration(authentication: .jwt(source: source), environment: .production)
/// ```
///
/// The client asks ``currentToken()`` before every request (batched sends: before every batch), so
/// a source returns a cached token in the common case and reaches its store only when that token is
/// due for replacement.
public struct APNSProviderTokenSource: Sendable, CustomStringConvertible {
    /// The key id every token of this source carries (`kid`).
    public let keyID: APNSKeyID
    /// The team id every token of this source carries (`iss`).
    public let teamID: APNSTeamID
    private let current: @Sendable () async throws -> APNSProviderToken
    private let rejected: @Sendable (APNSProviderToken) async throws -> APNSProviderToken
    /// The local signer behind ``signing(_:)``: sends read its token without an async call.
    let manager: APNSProviderTokenManager?

    /// A source of your own.
    /// - Parameters:
    ///   - keyID: the key id of the tokens `current` returns.
    ///   - teamID: the team id of the tokens `current` returns.
    ///   - current: the token to send now; called before every request, so cache it.
    ///   - afterRejection: the token to retry with after APNs answered `ExpiredProviderToken` or
    ///     `InvalidProviderToken` for `rejected` (called at most once per push); return `rejected`
    ///     itself to give up on the push.
    public init(
        keyID: APNSKeyID,
        teamID: APNSTeamID,
        current: @escaping @Sendable () async throws -> APNSProviderToken,
        afterRejection: @escaping @Sendable (_ rejected: APNSProviderToken) async throws -> APNSProviderToken
    ) {
        self.keyID = keyID
        self.teamID = teamID
        self.current = current
        self.rejected = afterRejection
        self.manager = nil
    }

    /// The local signer: tokens signed in this process by `manager`, renewed after its refresh age.
    package static func signing(_ manager: APNSProviderTokenManager) -> APNSProviderTokenSource {
        APNSProviderTokenSource(manager: manager)
    }

    private init(manager: APNSProviderTokenManager) {
        self.keyID = manager.keyID
        self.teamID = manager.teamID
        self.current = { try manager.currentToken() }
        self.rejected = { rejected in try manager.tokenAfterExpiredProviderToken(rejected: rejected) }
        self.manager = manager
    }

    /// The token to send now.
    /// - Throws: whatever the source throws (the send fails with kind `credentials`).
    public func currentToken() async throws -> APNSProviderToken {
        if let manager { return try manager.currentToken() }
        return try await self.current()
    }

    /// The token to retry with after APNs rejected `rejected` as expired or invalid.
    public func token(afterRejecting rejected: APNSProviderToken) async throws -> APNSProviderToken {
        try await self.rejected(rejected)
    }

    /// Whether this source signs locally (``signing(_:)``).
    var isLocalSigner: Bool { self.manager != nil }

    /// The key and team, never a token.
    public var description: String {
        "APNSProviderTokenSource(kid: \(self.keyID), iss: \(self.teamID)\(self.manager == nil ? "" : ", signing locally"))"
    }
}
