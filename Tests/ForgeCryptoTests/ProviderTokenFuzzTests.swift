import ForgeAPNsCore
import ForgeCrypto
import ForgeTestSupport
import Foundation
import Testing

@Suite("Provider tokens that fuzzing found")
struct ProviderTokenFuzzTests {
    let key = try! APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
    let keyID = try! APNSKeyID("FORGEKEY01")
    let teamID = try! APNSTeamID("FORGETEAM1")

    /// `iat` = Int64.min, well signed: its age overflowed `Int(_:)` in the expiry message and trapped.
    /// Fixtures/fuzz-iat-int64-min is the FuzzProviderToken input (a byte 1, the header, the claims).
    @Test("An iat of Int64.min is expired, its age written without trapping")
    func iatInt64Min() throws {
        let jwt = try FuzzFixture.providerToken("Tests/ForgeCryptoTests/Fixtures/fuzz-iat-int64-min")
        let now = Date(timeIntervalSince1970: 1_795_000_600)
        let verifier = APNSProviderTokenVerifier(keys: [self.keyID: self.key.publicKey])
        let verifierError = #expect(throws: APNSProviderTokenError.self) { try verifier.verify(jwt, now: now) }
        #expect(verifierError?.code == .expired)
        #expect(verifierError?.detail.hasPrefix("iat is 9.22337203") == true, "\(verifierError?.detail ?? "")")
        for key in [self.key.publicKey, nil] {
            let error = #expect(throws: APNSProviderTokenError.self) {
                try APNSProviderToken(
                    verifying: jwt, keyID: self.keyID, teamID: self.teamID, key: key, now: now
                )
            }
            #expect(error?.code == .expired)
        }
    }

    @Test("Ages that fit an Int are written as before", arguments: [(7_200.0, "7200"), (59.9, "59"), (-61.5, "-61")])
    func wholeSeconds(value: Double, text: String) {
        #expect(APNSProviderTokenVerifier.whole(value) == text)
    }
}
