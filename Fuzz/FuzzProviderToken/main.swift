import ForgeAPNsCore
import ForgeCrypto
import ForgeFuzzSupport
import ForgeLoopback
import Foundation

/// A provider token as `apnsctl serve` checks each request's `authorization` (TokenAuthenticator: the
/// verifier, then a sentence on why it was refused), and as a token file or shared store hands one to
/// the client (`APNSProviderToken(verifying:…)`).
///
/// The input's first byte picks the form of the rest: even, the JWT's text itself; odd, a header and
/// claims (JSON, one line each) that are signed here with keys-example/AuthKey_FORGEKEY01.p8, so
/// the fuzzer also reaches what follows a good signature (the `iat` arithmetic).
enum ProviderTokenFuzz {
    /// The example key, found from this file's place in the package.
    static let key: APNSSigningKey = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        do {
            return try APNSSigningKey(contentsOfFile: root.appendingPathComponent("keys-example/AuthKey_FORGEKEY01.p8").path)
        } catch {
            fatalError("keys-example/AuthKey_FORGEKEY01.p8: \(error)")
        }
    }()
    static let keyID = try! APNSKeyID("FORGEKEY01")
    static let teamID = try! APNSTeamID("FORGETEAM1")
    /// The seeds' `iat`, and the time every input is checked at: ten minutes later.
    static let issuedAt = Date(timeIntervalSince1970: 1_795_000_000)
    static let now = issuedAt.addingTimeInterval(600)

    static func test(_ bytes: [UInt8]) {
        guard let form = bytes.first else { return }
        let rest = Array(bytes.dropFirst())
        let jwt: String
        if form & 1 == 0 {
            jwt = FuzzFields.text(rest)
        } else {
            let fields = FuzzFields.split(rest, into: 2)
            let signingInput = Base64URL.encode(fields[0]) + "." + Base64URL.encode(fields[1])
            guard let signature = try? Self.key.signature(for: Array(signingInput.utf8)) else { fatalError("signing failed") }
            jwt = signingInput + "." + Base64URL.encode(signature)
        }
        Self.verify(jwt)
    }

    /// The local server's check with the example key registered, at ``now``.
    static let authenticator = TokenAuthenticator(
        keys: [LocalAPNSKey(keyID: Self.keyID, teamID: Self.teamID, verificationKey: Self.key.publicKey)], environment: .sandbox,
        clock: FixedClock(now: Self.now)
    )

    struct FixedClock: APNSWallClock {
        var now: Date
    }

    static func verify(_ jwt: String) {
        let authorization = "bearer " + jwt
        let reason = Self.authenticator.check(authorization: authorization, bundleID: "com.example.app", connectionID: 1)
        Self.authenticator.forget(connectionID: 1)
        for reason in Set([reason, .expiredProviderToken, .invalidProviderToken].compactMap { $0 }) {
            _ = Self.authenticator.explain(reason, authorization: authorization, bundleID: "com.example.app", now: Self.now)
        }
        var verifier = APNSProviderTokenVerifier(keys: [Self.keyID: Self.key.publicKey])
        _ = try? verifier.verify(jwt, now: Self.now)
        verifier.maximumFutureSkew = .seconds(60)
        verifier.acceptsDERSignatures = true
        verifier.acceptsStringIssuedAt = true
        _ = try? verifier.verify(jwt, now: Self.now)
        _ = try? APNSProviderTokenVerifier.parse(jwt)
        for key in [Self.key.publicKey, nil] {
            if let token = try? APNSProviderToken(verifying: jwt, keyID: Self.keyID, teamID: Self.teamID, key: key, now: Self.now) {
                _ = token.description
            }
        }
    }

    /// Seeds: real tokens of both forms, and header and claims pairs for the odd form.
    static func makeSeeds(_ folder: SeedFolder) throws {
        func token(_ issuedAt: Date, keyFile: String = "AuthKey_FORGEKEY01.p8", keyID: String = "FORGEKEY01") throws -> String {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let key = try APNSSigningKey(contentsOfFile: root.appendingPathComponent("keys-example/" + keyFile).path)
            return try APNSProviderToken.sign(keyID: try APNSKeyID(keyID), teamID: Self.teamID, issuedAt: issuedAt, key: key).jwt
        }
        try folder.write("jwt-valid", [0] + Array(try token(Self.issuedAt).utf8))
        try folder.write("jwt-expired", [0] + Array(try token(Self.issuedAt.addingTimeInterval(-7_200)).utf8))
        try folder.write("jwt-future", [0] + Array(try token(Self.now.addingTimeInterval(3_600)).utf8))
        try folder.write("jwt-other-key", [0] + Array(try token(Self.issuedAt, keyFile: "AuthKey_FORGEKEY02.p8", keyID: "FORGEKEY02").utf8))
        try folder.write("signed-valid", [1] + Array(#"{"alg":"ES256","kid":"FORGEKEY01"}"#.utf8 + [0x0a] + #"{"iss":"FORGETEAM1","iat":1795000000}"#.utf8))
        try folder.write("signed-string-iat", [1] + Array(#"{"alg":"ES256","kid":"FORGEKEY01"}"#.utf8 + [0x0a] + #"{"iss":"FORGETEAM1","iat":"1795000000"}"#.utf8))
        try folder.write("signed-no-kid", [1] + Array(#"{"alg":"ES256"}"#.utf8 + [0x0a] + #"{"iss":"FORGETEAM1","iat":1795000000}"#.utf8))
        // Far from now both ways: the age arithmetic's edges, a few digits away.
        try folder.write("signed-iat-far-past", [1] + Array(#"{"alg":"ES256","kid":"FORGEKEY01"}"#.utf8 + [0x0a] + #"{"iss":"FORGETEAM1","iat":-9000000000000000000}"#.utf8))
        try folder.write("signed-iat-far-future", [1] + Array(#"{"alg":"ES256","kid":"FORGEKEY01"}"#.utf8 + [0x0a] + #"{"iss":"FORGETEAM1","iat":9000000000000000000}"#.utf8))
        try folder.write("signed-hs256", [1] + Array(#"{"alg":"HS256","kid":"FORGEKEY01","typ":"JWT"}"#.utf8 + [0x0a] + #"{"iss":"FORGETEAM1","iat":1795000000}"#.utf8))
    }
}

@main
enum FuzzProviderToken {
    static func main() { FuzzDriver.main(ProviderTokenFuzz.test, makeSeeds: ProviderTokenFuzz.makeSeeds) }
}
