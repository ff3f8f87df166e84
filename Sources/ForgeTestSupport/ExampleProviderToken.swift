internal import ForgeAPNsCore
internal import ForgeCrypto
public import struct Foundation.Date

/// A real provider token for tests that check no output shows one: signed now with
/// keys-example/AuthKey_FORGEKEY01.p8 (kid FORGEKEY01, team FORGETEAM1).
public struct ExampleProviderToken: Sendable {
    /// The JWT: header, claims and signature, joined by dots.
    public let jwt: String

    /// Signs a token issued at `issuedAt`.
    public init(issuedAt: Date = Date()) throws {
        let key = try APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
        self.jwt = try APNSProviderToken.sign(
            keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1"), issuedAt: issuedAt, key: key
        ).jwt
    }

    /// The third part: what must never be shown.
    public var signature: Substring { self.jwt.split(separator: ".", omittingEmptySubsequences: false)[2] }

    /// Whether `text` shows the token whole or its signature.
    public func isShown(in text: String) -> Bool {
        text.contains(self.jwt) || text.contains(self.signature)
    }
}
