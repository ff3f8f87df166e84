public import ForgeAPNsCore
public import struct Foundation.Date

/// A provider token: the ES256 JWT sent as `authorization: bearer <jwt>` with token authentication.
///
/// Header `{"alg":"ES256","kid":"<key id>"}`, claims `{"iss":"<team id>","iat":<seconds>}`, each
/// base64url without padding, and the raw 64-byte `r‖s` signature. APNs accepts a token for one
/// hour and refuses a new one on the same connection more than once every 20 minutes, so make one
/// and reuse it: a client authenticated with `.jwt(key:keyID:teamID:refreshAge:)` does that.
///
/// - Important: ``description`` shows only the first characters of the JWT. Read ``jwt`` only to
///   put it on the wire.
public struct APNSProviderToken: Hashable, Sendable, CustomStringConvertible, CustomReflectable {
    /// The token's fields, in one immutable object: every send reads the current token, and a copy
    /// of this struct is then one retain, not one per string.
    private final class Storage: Sendable {
        let keyID: APNSKeyID
        let teamID: APNSTeamID
        let issuedAt: Date
        let jwt: String
        let authorizationHeaderValue: String

        init(keyID: APNSKeyID, teamID: APNSTeamID, issuedAt: Date, jwt: String) {
            self.keyID = keyID
            self.teamID = teamID
            self.issuedAt = issuedAt
            self.jwt = jwt
            self.authorizationHeaderValue = "bearer " + jwt
        }
    }

    private let storage: Storage

    /// The `kid` of the header.
    public var keyID: APNSKeyID { self.storage.keyID }
    /// The `iss` claim.
    public var teamID: APNSTeamID { self.storage.teamID }
    /// The `iat` claim, in whole seconds.
    public var issuedAt: Date { self.storage.issuedAt }
    /// The whole token. Secret: never log it.
    public var jwt: String { self.storage.jwt }
    /// `bearer <jwt>`, the `authorization` header value, made once: every request of the hour the
    /// token lives sends it, and the pool recognises an unchanged token by it. Secret: never log it.
    public var authorizationHeaderValue: String { self.storage.authorizationHeaderValue }

    private init(keyID: APNSKeyID, teamID: APNSTeamID, issuedAt: Date, jwt: String) {
        self.storage = Storage(keyID: keyID, teamID: teamID, issuedAt: issuedAt, jwt: jwt)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.jwt == rhs.jwt && lhs.keyID == rhs.keyID && lhs.teamID == rhs.teamID && lhs.issuedAt == rhs.issuedAt)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.jwt)
    }

    /// Signs a new token.
    /// - Parameter issuedAt: rounded down to whole seconds for the `iat` claim.
    /// - Throws: ``APNSKeyError/Code/signingFailed`` if OpenSSL fails.
    public static func sign(
        keyID: APNSKeyID,
        teamID: APNSTeamID,
        issuedAt: Date,
        key: APNSSigningKey
    ) throws(APNSKeyError) -> APNSProviderToken {
        let seconds = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        // Written by hand so the bytes are exactly the documented form (ids are A-Z0-9, no escaping).
        let header = #"{"alg":"ES256","kid":""# + keyID.rawValue + #""}"#
        let claims = #"{"iss":""# + teamID.rawValue + #"","iat":"# + String(seconds) + "}"
        let signingInput = Base64URL.encode(header.utf8) + "." + Base64URL.encode(claims.utf8)
        let signature = try key.signature(for: Array(signingInput.utf8))
        return APNSProviderToken(
            keyID: keyID,
            teamID: teamID,
            issuedAt: Date(timeIntervalSince1970: Double(seconds)),
            jwt: signingInput + "." + Base64URL.encode(signature)
        )
    }

    /// A token signed elsewhere (a store shared by several senders, a file another program keeps
    /// fresh), checked before it is used: three base64url parts, `alg` ES256, `kid` and `iss` as
    /// given, an `iat` at most `maximumAge` old and at most a minute ahead of `now`, and, when
    /// `key` is given, a signature that verifies with it.
    /// - Throws: ``APNSProviderTokenError`` saying which rule the token breaks (never the token).
    public init(
        verifying jwt: String,
        keyID: APNSKeyID,
        teamID: APNSTeamID,
        key: APNSVerificationKey?,
        now: Date,
        maximumAge: Duration = .seconds(3600)
    ) throws(APNSProviderTokenError) {
        let parsed = try APNSProviderTokenVerifier.parse(jwt)
        guard parsed.algorithm == "ES256" else {
            throw APNSProviderTokenError(.unsupportedAlgorithm, detail: "alg is '\(parsed.algorithm)'; APNs accepts ES256 only")
        }
        guard parsed.keyID == keyID.rawValue else {
            throw APNSProviderTokenError(.unknownKeyID, detail: "kid is '\(parsed.keyID)', not the key id \(keyID)")
        }
        guard parsed.teamID == teamID.rawValue else {
            throw APNSProviderTokenError(.wrongTeam, detail: "iss is '\(parsed.teamID)', not the team id \(teamID)")
        }
        if let key, !key.isValidSignature(parsed.signature, for: parsed.signingInput, format: .raw) {
            throw APNSProviderTokenError(.badSignature, detail: "the signature does not verify with key \(keyID) (ES256, 64-byte r‖s)")
        }
        let age = now.timeIntervalSince(parsed.issuedAt)
        let limit = Double(maximumAge.components.seconds)
        guard age <= limit else {
            let minutes = APNSProviderTokenVerifier.whole(age / 60)
            throw APNSProviderTokenError(.expired, detail: "iat is \(minutes) minutes old; the limit is \(Int(limit) / 60) minutes")
        }
        guard age >= -60 else {
            throw APNSProviderTokenError(.issuedInFuture, detail: "iat is \(APNSProviderTokenVerifier.whole(-age)) s in the future")
        }
        self.init(keyID: keyID, teamID: teamID, issuedAt: parsed.issuedAt, jwt: jwt)
    }

    /// A form safe to log: the first eight characters of the JWT.
    public var redacted: String { String(self.jwt.prefix(8)) + "…<redacted>" }

    /// `dump()` and debuggers show the redacted form, never the stored JWT.
    public var customMirror: Mirror {
        Mirror(self, children: ["keyID": self.keyID, "teamID": self.teamID, "issuedAt": self.issuedAt, "jwt": self.redacted])
    }

    public var description: String {
        "APNSProviderToken(kid: \(self.keyID), iss: \(self.teamID), iat: \(Int64(self.issuedAt.timeIntervalSince1970)), jwt: \(self.redacted))"
    }
}
