import ForgeAPNsCore
import ForgeCrypto
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Testing

@Suite("Local APNs judge: token authentication A1-A8")
struct TokenAuthenticationTests {
    let clock = ManualWallClock(Date(timeIntervalSince1970: 1_760_000_000))
    let key1 = try! APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
    let key2 = try! APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY02.p8"))
    let kid1 = try! APNSKeyID("FORGEKEY01"), team1 = try! APNSTeamID("FORGETEAM1")
    let kid2 = try! APNSKeyID("FORGEKEY02"), team2 = try! APNSTeamID("FORGETEAM2")

    private func authenticator(key1Environment: LocalAPNSConfiguration.Environment? = nil, key1Bundles: Set<String>? = nil) -> TokenAuthenticator {
        TokenAuthenticator(
            keys: [
                LocalAPNSKey(keyID: self.kid1, teamID: self.team1, verificationKey: self.key1.publicKey,
                             environment: key1Environment, bundleIDs: key1Bundles),
                LocalAPNSKey(keyID: self.kid2, teamID: self.team2, verificationKey: self.key2.publicKey),
            ],
            environment: .sandbox, clock: self.clock
        )
    }

    private func bearer(_ key: APNSSigningKey, _ kid: APNSKeyID, _ team: APNSTeamID, age: Double = 0) throws -> String {
        try APNSProviderToken.sign(keyID: kid, teamID: team, issuedAt: self.clock.now - age, key: key).authorizationHeaderValue
    }

    @Test("A1: no authorization, not bearer, or empty -> MissingProviderToken", arguments: [nil, "Basic abc", "bearer "])
    func missing(_ header: String?) {
        #expect(self.authenticator().check(authorization: header, bundleID: "com.example.forgepush", connectionID: 1) == .missingProviderToken)
    }

    @Test("A2: malformed, unknown kid, or a signature by another key -> InvalidProviderToken")
    func invalid() throws {
        let auth = self.authenticator()
        #expect(auth.check(authorization: "bearer abc", bundleID: "b", connectionID: 1) == .invalidProviderToken)
        let wrongKid = try APNSKeyID("UNKNOWN001")
        #expect(auth.check(authorization: try self.bearer(self.key1, wrongKid, self.team1), bundleID: "b", connectionID: 1) == .invalidProviderToken)
        // Signed by key 2 but claiming key 1.
        #expect(auth.check(authorization: try self.bearer(self.key2, self.kid1, self.team1), bundleID: "b", connectionID: 1) == .invalidProviderToken)
        // Key 1 with another team's iss.
        #expect(auth.check(authorization: try self.bearer(self.key1, self.kid1, self.team2), bundleID: "b", connectionID: 1) == .invalidProviderToken)
    }

    @Test("A4: iat more than an hour old -> ExpiredProviderToken")
    func expired() throws {
        let auth = self.authenticator()
        #expect(auth.check(authorization: try self.bearer(self.key1, self.kid1, self.team1, age: 3601), bundleID: "b", connectionID: 1) == .expiredProviderToken)
        #expect(auth.check(authorization: try self.bearer(self.key1, self.kid1, self.team1, age: 3599), bundleID: "b", connectionID: 1) == nil)
    }

    @Test("A4 holds for a token verified earlier: its age is checked on every use")
    func expiresWhileCached() throws {
        let auth = self.authenticator()
        let token = try self.bearer(self.key1, self.kid1, self.team1)
        #expect(auth.check(authorization: token, bundleID: "b", connectionID: 1) == nil)
        self.clock.advance(by: 3601)
        #expect(auth.check(authorization: token, bundleID: "b", connectionID: 1) == .expiredProviderToken)
    }

    @Test("A5: a different token within 20 minutes on one connection -> TooManyProviderTokenUpdates; the same token is fine")
    func tokenUpdates() throws {
        let auth = self.authenticator()
        let first = try self.bearer(self.key1, self.kid1, self.team1)
        #expect(auth.check(authorization: first, bundleID: "b", connectionID: 1) == nil)
        self.clock.advance(by: 60)
        let second = try self.bearer(self.key1, self.kid1, self.team1)
        #expect(auth.check(authorization: first, bundleID: "b", connectionID: 1) == nil)
        #expect(auth.check(authorization: second, bundleID: "b", connectionID: 1) == .tooManyProviderTokenUpdates)
        #expect(auth.check(authorization: second, bundleID: "b", connectionID: 2) == nil)  // another connection
        self.clock.advance(by: 20 * 60)
        #expect(auth.check(authorization: second, bundleID: "b", connectionID: 1) == nil)
    }

    @Test("--token-update-limit: a key's new token (an iat it never had) within the limit of the previous one, on any connection -> TooManyProviderTokenUpdates")
    func keyWideTokenUpdates() throws {
        let auth = TokenAuthenticator(
            keys: [LocalAPNSKey(keyID: self.kid1, teamID: self.team1, verificationKey: self.key1.publicKey)],
            environment: .sandbox, clock: self.clock, tokenUpdateLimit: .seconds(20 * 60)
        )
        let first = try self.bearer(self.key1, self.kid1, self.team1)
        #expect(auth.check(authorization: first, bundleID: "b", connectionID: 1) == nil)
        // Another worker's own token, a second later, on its own connection.
        self.clock.advance(by: 1)
        let second = try self.bearer(self.key1, self.kid1, self.team1)
        #expect(auth.check(authorization: second, bundleID: "b", connectionID: 2) == .tooManyProviderTokenUpdates)
        // The key's current token is fine on any connection; so is an older one still valid.
        #expect(auth.check(authorization: first, bundleID: "b", connectionID: 3) == nil)
        self.clock.advance(by: 20 * 60 - 2)
        #expect(auth.check(authorization: second, bundleID: "b", connectionID: 2) == .tooManyProviderTokenUpdates)
        self.clock.advance(by: 1)
        #expect(auth.check(authorization: second, bundleID: "b", connectionID: 2) == nil)
        // The limit runs from when the key's current token was first seen, not from its iat.
        let third = try self.bearer(self.key1, self.kid1, self.team1)
        #expect(auth.check(authorization: third, bundleID: "b", connectionID: 4) == .tooManyProviderTokenUpdates)
        #expect(auth.check(authorization: first, bundleID: "b", connectionID: 5) == nil)
        let start = Date(timeIntervalSince1970: 1_760_000_000)
        #expect(auth.tokenIssueDates(keyID: self.kid1) == [start, start + 1])
        #expect(auth.explain(.tooManyProviderTokenUpdates, authorization: third, bundleID: "b", now: self.clock.now)
            .contains("within 20 minutes of the previous one (on this or another connection)"))
    }

    @Test("Without --token-update-limit, new tokens on other connections are accepted (only the per-connection rule applies)")
    func keyWideRuleOff() throws {
        let auth = self.authenticator()
        #expect(auth.check(authorization: try self.bearer(self.key1, self.kid1, self.team1), bundleID: "b", connectionID: 1) == nil)
        self.clock.advance(by: 1)
        #expect(auth.check(authorization: try self.bearer(self.key1, self.kid1, self.team1), bundleID: "b", connectionID: 2) == nil)
        #expect(auth.tokenIssueDates(keyID: self.kid1).isEmpty)
    }

    @Test("A6 and A8: another key or another team on a bound connection")
    func binding() throws {
        let auth = self.authenticator()
        #expect(auth.check(authorization: try self.bearer(self.key1, self.kid1, self.team1), bundleID: "b", connectionID: 7) == nil)
        #expect(auth.check(authorization: try self.bearer(self.key2, self.kid2, self.team2), bundleID: "b", connectionID: 7) == .invalidProviderToken)
        let sameTeamOtherKey = TokenAuthenticator(
            keys: [
                LocalAPNSKey(keyID: self.kid1, teamID: self.team1, verificationKey: self.key1.publicKey),
                LocalAPNSKey(keyID: self.kid2, teamID: self.team1, verificationKey: self.key2.publicKey),
            ],
            environment: .sandbox, clock: self.clock
        )
        #expect(sameTeamOtherKey.check(authorization: try self.bearer(self.key1, self.kid1, self.team1), bundleID: "b", connectionID: 1) == nil)
        #expect(sameTeamOtherKey.check(authorization: try self.bearer(self.key2, self.kid2, self.team1), bundleID: "b", connectionID: 1) == .unrelatedKeyIDInToken)
    }

    @Test("A7: a key restricted to the other environment -> BadEnvironmentKeyInToken (observed spelling)")
    func environment() throws {
        let auth = self.authenticator(key1Environment: .production)
        let reason = auth.check(authorization: try self.bearer(self.key1, self.kid1, self.team1), bundleID: "b", connectionID: 1)
        #expect(reason?.rawValue == "BadEnvironmentKeyInToken")
    }

    @Test("A8: a topic-specific key that does not cover the topic -> InvalidProviderToken")
    func topicCoverage() throws {
        let auth = self.authenticator(key1Bundles: ["com.example.forgepush"])
        #expect(auth.check(authorization: try self.bearer(self.key1, self.kid1, self.team1), bundleID: "com.example.forgepush", connectionID: 1) == nil)
        #expect(auth.check(authorization: try self.bearer(self.key1, self.kid1, self.team1), bundleID: "com.other.app", connectionID: 2) == .invalidProviderToken)
    }

    @Test("Through the judge: status and reason as APNs sends them; the topic suffix is stripped for coverage")
    func throughJudge() throws {
        let auth = self.authenticator(key1Bundles: ["com.example.forgepush"])
        var judge = APNSJudge(authenticator: auth)
        func request(_ authorization: String?, topic: String = "com.example.forgepush", pushType: String = "alert") -> APNSJudge.Request {
            var headers = [(name: "apns-topic", value: topic), (name: "apns-push-type", value: pushType)]
            if let authorization { headers.append((name: "authorization", value: authorization)) }
            return APNSJudge.Request(method: "POST", path: "/3/device/" + String(repeating: "ab", count: 32), headers: headers,
                                     body: Array(#"{"aps":{}}"#.utf8))
        }
        let missing = judge.judge(request(nil), connectionID: 1)
        #expect(missing.status == 403 && missing.reason == .missingProviderToken)
        let good = try self.bearer(self.key1, self.kid1, self.team1)
        #expect(judge.judge(request(good), connectionID: 1).isAccepted)
        #expect(judge.judge(request(good, topic: "com.example.forgepush.push-type.liveactivity", pushType: "liveactivity"),
                            connectionID: 1).isAccepted)
        let stale = judge.judge(request(try self.bearer(self.key1, self.kid1, self.team1, age: 4000)), connectionID: 3)
        #expect(stale.status == 403 && stale.reason == .expiredProviderToken)
    }

    @Test("B5: a broadcast or channel request for a bundle the key does not cover -> 403 TopicMismatch")
    func broadcastTopicMismatch() throws {
        let auth = self.authenticator(key1Bundles: ["com.example.forgepush"])
        var judge = APNSJudge(
            channels: [LocalAPNSChannel(id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.other.app", messageStoragePolicy: 0)],
            authenticator: auth
        )
        let bearer = try self.bearer(self.key1, self.kid1, self.team1)
        let broadcast = APNSJudge.Request(
            method: "POST", path: "/4/broadcasts/apps/com.other.app",
            headers: [(name: "authorization", value: bearer), (name: "apns-channel-id", value: "dHN0LXNyY2gtY2hubA=="),
                      (name: "apns-push-type", value: "liveactivity")],
            body: Array(#"{"aps":{"event":"end","timestamp":1}}"#.utf8)
        )
        let verdict = judge.judge(broadcast, connectionID: 4)
        #expect(verdict.status == 403 && verdict.reason == .topicMismatch)
        let list = APNSJudge.Request(method: "GET", path: "/1/apps/com.other.app/all-channels",
                                     headers: [(name: "authorization", value: bearer)], body: [])
        #expect(judge.judge(list, connectionID: 4).reason == .topicMismatch)
        let own = APNSJudge.Request(method: "GET", path: "/1/apps/com.example.forgepush/all-channels",
                                    headers: [(name: "authorization", value: bearer)], body: [])
        #expect(judge.judge(own, connectionID: 4).status == 200)
    }

    @Test("A3: a DER signature or a string iat is refused by default and accepted when lenient")
    func leniency() throws {
        // A token as APNSwift 6.4 writes it: "typ":"JWT" and "iat" as a string.
        func encode(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let input = encode(#"{"alg":"ES256","kid":"FORGEKEY01","typ":"JWT"}"#) + "."
            + encode(#"{"iss":"FORGETEAM1","iat":"\#(Int(self.clock.now.timeIntervalSince1970))"}"#)
        let signature = Data(try self.key1.signature(for: Array(input.utf8)))
        let raw = input + "." + signature.base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(self.authenticator().check(authorization: "bearer " + raw, bundleID: "b", connectionID: 1) == .invalidProviderToken)
        let lenient = TokenAuthenticator(
            keys: [LocalAPNSKey(keyID: self.kid1, teamID: self.team1, verificationKey: self.key1.publicKey)],
            environment: .sandbox, clock: self.clock, lenient: true
        )
        #expect(lenient.check(authorization: "bearer " + raw, bundleID: "b", connectionID: 1) == nil)
    }
}

@Suite("Local APNs judge: provider tokens that fuzzing found")
struct TokenAuthenticationFuzzTests {
    /// A well-signed token with `iat` = Int64.min (Tests/ForgeCryptoTests/Fixtures/fuzz-iat-int64-min,
    /// a FuzzProviderToken input): the verifier's expiry message trapped, and so did the sentence
    /// saying why the token was refused, taking `apnsctl serve` down with it.
    @Test("iat Int64.min: ExpiredProviderToken and a sentence, no trap")
    func iatInt64Min() throws {
        let key = try APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
        let jwt = try FuzzFixture.providerToken("Tests/ForgeCryptoTests/Fixtures/fuzz-iat-int64-min")
        let authenticator = TokenAuthenticator(
            keys: [LocalAPNSKey(keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1"), verificationKey: key.publicKey)],
            environment: .sandbox, clock: ManualWallClock(Date(timeIntervalSince1970: 1_795_000_600))
        )
        let reason = authenticator.check(authorization: "bearer " + jwt, bundleID: "com.example.app", connectionID: 1)
        #expect(reason == .expiredProviderToken)
        let why = authenticator.explain(.expiredProviderToken, authorization: "bearer " + jwt, bundleID: "com.example.app")
        #expect(why.contains("minutes ago"), "\(why)")
    }
}
