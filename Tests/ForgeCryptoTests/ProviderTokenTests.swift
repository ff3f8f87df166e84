import ForgeAPNsCore
import ForgeCrypto
import ForgeTestSupport
import Foundation
import Testing

private let keyID = try! APNSKeyID("ABC123DEFG")
private let teamID = try! APNSTeamID("DEF123GHIJ")

private func base64URLDecode(_ text: Substring) -> [UInt8]? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64).map(Array.init)
}

private func base64URL(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// A DER encoding of a raw r‖s signature, written independently of ForgeCrypto.
private func derSignature(_ raw: [UInt8]) -> [UInt8] {
    func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var value = Array(bytes.drop(while: { $0 == 0 }))
        if value.isEmpty { value = [0] }
        if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return [0x02, UInt8(value.count)] + value
    }
    let body = integer(raw[0..<32]) + integer(raw[32..<64])
    return [0x30, UInt8(body.count)] + body
}

private func openssl(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let result = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/openssl"), arguments, mergesStandardError: true)
    return (result.exitCode, result.stdout)
}

@Suite("Provider tokens")
struct ProviderTokenTests {
    let key: APNSSigningKey
    let publicKey: APNSVerificationKey

    init() throws {
        self.key = try APNSSigningKey(contentsOfFile: Fixtures.path("good-p256.p8"))
        self.publicKey = try APNSVerificationKey(contentsOfFile: Fixtures.path("good-p256.pub.pem"))
    }

    @Test("Golden header and claims; 64-byte signature; base64url without padding")
    func golden() throws {
        let token = try APNSProviderToken.sign(
            keyID: keyID, teamID: teamID, issuedAt: Date(timeIntervalSince1970: 1_700_000_000.9), key: self.key
        )
        let parts = token.jwt.split(separator: ".")
        #expect(parts.count == 3)
        #expect(parts[0] == "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ")
        #expect(parts[1] == "eyJpc3MiOiJERUYxMjNHSElKIiwiaWF0IjoxNzAwMDAwMDAwfQ")
        #expect(base64URLDecode(parts[0]).map { String(decoding: $0, as: UTF8.self) } == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(base64URLDecode(parts[1]).map { String(decoding: $0, as: UTF8.self) } == #"{"iss":"DEF123GHIJ","iat":1700000000}"#)
        #expect(base64URLDecode(parts[2])?.count == 64)
        #expect(!token.jwt.contains("=") && !token.jwt.contains("+") && !token.jwt.contains("/"))
        #expect(token.issuedAt == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(token.authorizationHeaderValue == "bearer " + token.jwt)
    }

    @Test("The openssl tool verifies the signature (as DER); tampered input and another key fail")
    func opensslVerifies() throws {
        let token = try APNSProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: Date(), key: self.key)
        let parts = token.jwt.split(separator: ".")
        let signingInput = Array(token.jwt.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        let raw = try #require(base64URLDecode(parts[2]))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("forge-jwt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("input")
        let tampered = directory.appendingPathComponent("tampered")
        let signature = directory.appendingPathComponent("sig.der")
        try Data(signingInput).write(to: input)
        try Data(signingInput.dropLast() + [UInt8(ascii: "x")]).write(to: tampered)
        try Data(derSignature(raw)).write(to: signature)

        let ok = try openssl(["dgst", "-sha256", "-verify", Fixtures.path("good-p256.pub.pem"), "-signature", signature.path, input.path])
        #expect(ok.status == 0 && ok.output.contains("Verified OK"), "\(ok.output)")
        let bad = try openssl(["dgst", "-sha256", "-verify", Fixtures.path("good-p256.pub.pem"), "-signature", signature.path, tampered.path])
        #expect(bad.status != 0 && bad.output.contains("Verification failure"))
        let other = try openssl(["dgst", "-sha256", "-verify", Fixtures.path("other-p256.pub.pem"), "-signature", signature.path, input.path])
        #expect(other.status != 0)
    }

    @Test("descriptions never show the JWT")
    func redaction() throws {
        let token = try APNSProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: Date(), key: self.key)
        let signature = String(token.jwt.split(separator: ".")[2])
        for text in [token.description, "\(token)", token.redacted, String(reflecting: token.redacted)] {
            #expect(!text.contains(token.jwt))
            #expect(!text.contains(signature))
            #expect(!text.contains(String(token.jwt.split(separator: ".")[1])))
        }
        #expect(token.description.contains("kid: ABC123DEFG"))
        var dumped = ""
        dump(token, to: &dumped)
        #expect(!dumped.contains(token.jwt) && !dumped.contains(signature), "dump() shows the JWT")
        #expect(!String(reflecting: token).contains(signature))
    }
}

@Suite("Provider token verification")
struct ProviderTokenVerifierTests {
    let key: APNSSigningKey
    let verifier: APNSProviderTokenVerifier
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    init() throws {
        self.key = try APNSSigningKey(contentsOfFile: Fixtures.path("good-p256.p8"))
        self.verifier = APNSProviderTokenVerifier(keys: [keyID: try APNSVerificationKey(contentsOfFile: Fixtures.path("good-p256.pub.pem"))])
    }

    private func token(issuedAt: Date? = nil, signer: APNSSigningKey? = nil) throws -> String {
        try APNSProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: issuedAt ?? self.now, key: signer ?? self.key).jwt
    }

    private func code(_ jwt: String, verifier: APNSProviderTokenVerifier? = nil) -> APNSProviderTokenError.Code? {
        do {
            _ = try (verifier ?? self.verifier).verify(jwt, now: self.now)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("A fresh token verifies and names its kid, team and iat")
    func valid() throws {
        let verified = try self.verifier.verify(try self.token(), now: self.now)
        #expect(verified.keyID == "ABC123DEFG")
        #expect(verified.teamID == "DEF123GHIJ")
        #expect(verified.issuedAt == self.now)
    }

    @Test("500 tokens verify and 500 tampered ones fail")
    func many() throws {
        for index in 0..<500 {
            let jwt = try self.token(issuedAt: self.now - Double(index))
            #expect(self.code(jwt) == nil)
            var bytes = Array(jwt.utf8)
            let position = bytes.count - 1 - (index % 40)
            bytes[position] = bytes[position] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
            #expect(self.code(String(decoding: bytes, as: UTF8.self)) != nil)
        }
    }

    @Test("Tampered claims and another key's signature fail the signature check")
    func tampered() throws {
        let parts = try self.token().split(separator: ".")
        let claims = base64URL(Array(#"{"iss":"XXXXXXXXXX","iat":1700000000}"#.utf8))
        #expect(self.code("\(parts[0]).\(claims).\(parts[2])") == .badSignature)
        let other = try APNSSigningKey(contentsOfFile: Fixtures.path("other-p256.p8"))
        #expect(self.code(try self.token(signer: other)) == .badSignature)
    }

    @Test("Unknown kid")
    func unknownKid() throws {
        let jwt = try APNSProviderToken.sign(keyID: try APNSKeyID("ZZZZZZZZZZ"), teamID: teamID, issuedAt: self.now, key: self.key).jwt
        #expect(self.code(jwt) == .unknownKeyID)
    }

    @Test("alg other than ES256 is refused", arguments: [#"{"alg":"none","kid":"ABC123DEFG"}"#, #"{"alg":"HS256","kid":"ABC123DEFG"}"#, #"{"kid":"ABC123DEFG"}"#])
    func algorithms(_ header: String) throws {
        let parts = try self.token().split(separator: ".")
        #expect(self.code("\(base64URL(Array(header.utf8))).\(parts[1]).\(parts[2])") == .unsupportedAlgorithm)
    }

    @Test("DER signatures: refused by default, accepted when allowed")
    func der() throws {
        let parts = try self.token().split(separator: ".")
        let raw = try #require(base64URLDecode(parts[2]))
        let jwt = "\(parts[0]).\(parts[1]).\(base64URL(derSignature(raw)))"
        #expect(self.code(jwt) == .badSignature)
        var lenient = self.verifier
        lenient.acceptsDERSignatures = true
        #expect(self.code(jwt, verifier: lenient) == nil)
    }

    @Test("iat older than an hour is expired; exactly an hour is not")
    func age() throws {
        #expect(self.code(try self.token(issuedAt: self.now - 3601)) == .expired)
        #expect(self.code(try self.token(issuedAt: self.now - 3600)) == nil)
    }

    @Test("A future iat is accepted unless a skew limit is set")
    func future() throws {
        let jwt = try self.token(issuedAt: self.now + 600)
        #expect(self.code(jwt) == nil)
        var strict = self.verifier
        strict.maximumFutureSkew = .seconds(60)
        #expect(self.code(jwt, verifier: strict) == .issuedInFuture)
    }

    @Test(
        "Malformed tokens",
        arguments: [
            "", "a.b", "a.b.c.d", "!!!.e30.AAAA",
            "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ.bm90IGpzb24.AAAA",  // claims not JSON
            "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ.eyJpc3MiOiJERUYxMjNHSElKIiwiaWF0IjoiMTcwMDAwMDAwMCJ9.AAAA",  // string iat
            "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ.eyJpc3MiOiJERUYxMjNHSElKIiwiaWF0IjoxLjV9.AAAA",  // iat 1.5
            "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ.eyJpc3MiOiJERUYxMjNHSElKIiwiaWF0IjoxfQ.",  // no signature
        ]
    )
    func malformed(_ jwt: String) {
        #expect(self.code(jwt) == .malformed)
    }

    @Test("A string iat is named in the error")
    func stringIAT() {
        do {
            _ = try APNSProviderTokenVerifier.parse(
                "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ.eyJpc3MiOiJERUYxMjNHSElKIiwiaWF0IjoiMTcwMDAwMDAwMCJ9.AAAA"
            )
            Issue.record("parsed")
        } catch {
            #expect(error.detail.contains("iat is a string"))
        }
    }
}

@Suite("Provider token manager")
struct ProviderTokenManagerTests {
    let key: APNSSigningKey

    init() throws { self.key = try APNSSigningKey(contentsOfFile: Fixtures.path("good-p256.p8")) }

    @Test("Reuses the token until the refresh age, then signs a new one")
    func refresh() throws {
        let clock = ManualWallClock()
        let manager = try APNSProviderTokenManager(key: self.key, keyID: keyID, teamID: teamID, clock: clock)
        let first = try manager.currentToken()
        clock.advance(by: 49 * 60 + 59)
        #expect(try manager.currentToken() == first)
        #expect(manager.signingCount == 1)
        clock.advance(by: 1)
        let second = try manager.currentToken()
        #expect(second != first)
        #expect(second.issuedAt == first.issuedAt + 50 * 60)
        #expect(manager.signingCount == 2)
    }

    @Test("A clock that steps back more than a minute gets a fresh token")
    func clockStepsBack() throws {
        let clock = ManualWallClock()
        let manager = try APNSProviderTokenManager(key: self.key, keyID: keyID, teamID: teamID, clock: clock)
        let first = try manager.currentToken()
        clock.advance(by: -30)
        #expect(try manager.currentToken() == first)
        clock.advance(by: -31)
        #expect(try manager.currentToken() != first)
        #expect(manager.signingCount == 2)
    }

    @Test("Concurrent callers after the age passed share one signing")
    func concurrentRefresh() async throws {
        let clock = ManualWallClock()
        let manager = try APNSProviderTokenManager(key: self.key, keyID: keyID, teamID: teamID, clock: clock)
        _ = try manager.currentToken()
        clock.advance(by: 50 * 60)
        let tokens = try await withThrowingTaskGroup(of: APNSProviderToken.self) { group in
            for _ in 0..<50 { group.addTask { try manager.currentToken() } }
            var tokens = Set<APNSProviderToken>()
            for try await token in group { tokens.insert(token) }
            return tokens
        }
        #expect(tokens.count == 1)
        #expect(manager.signingCount == 2)
    }

    @Test("After ExpiredProviderToken: one forced refresh per 20 minutes")
    func forcedRefresh() throws {
        let clock = ManualWallClock()
        let manager = try APNSProviderTokenManager(key: self.key, keyID: keyID, teamID: teamID, clock: clock)
        let first = try manager.currentToken()
        clock.advance(by: 1)
        let second = try manager.tokenAfterExpiredProviderToken(rejected: first)
        #expect(second != first)
        #expect(manager.signingCount == 2)
        // The old token rejected again, by another connection: the new one is already there.
        #expect(try manager.tokenAfterExpiredProviderToken(rejected: first) == second)
        // The new token rejected too, within 20 minutes: no new signing.
        clock.advance(by: 19 * 60)
        #expect(try manager.tokenAfterExpiredProviderToken(rejected: second) == second)
        #expect(manager.signingCount == 2)
        clock.advance(by: 60)
        let third = try manager.tokenAfterExpiredProviderToken(rejected: second)
        #expect(third != second)
        #expect(manager.signingCount == 3)
    }

    @Test("The refresh age must be 20 to 55 minutes", arguments: [(19, false), (20, true), (50, true), (55, true), (56, false)])
    func refreshAgeBounds(_ minutes: Int, _ allowed: Bool) {
        let made = try? APNSProviderTokenManager(key: self.key, keyID: keyID, teamID: teamID, refreshAge: .seconds(minutes * 60))
        #expect((made != nil) == allowed)
    }
}
