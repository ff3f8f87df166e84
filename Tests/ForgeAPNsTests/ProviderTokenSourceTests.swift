import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeCrypto
import ForgeSupport
import ForgeTestSupport
import Foundation
import Testing

/// A token source of the test's own: counts its calls and hands out the tokens it is told to.
final class ScriptedSource: Sendable {
    private struct State {
        var current: APNSProviderToken
        var next: APNSProviderToken?
        var currentCalls = 0
        var rejections: [APNSProviderToken] = []
    }

    private let state: LockedBox<State>

    init(current: APNSProviderToken, next: APNSProviderToken?) {
        self.state = LockedBox(State(current: current, next: next))
    }

    var currentCalls: Int { self.state.withLock { $0.currentCalls } }
    var rejections: [APNSProviderToken] { self.state.withLock { $0.rejections } }

    var source: APNSProviderTokenSource {
        APNSProviderTokenSource(keyID: keyID, teamID: teamID) {
            self.state.withLock { state in
                state.currentCalls += 1
                return state.current
            }
        } afterRejection: { rejected in
            self.state.withLock { state in
                state.rejections.append(rejected)
                if let next = state.next { state.current = next }
                return state.current
            }
        }
    }
}

/// An in-process APNs that accepts only `accepted` tokens and answers `reason` to the others.
func transport(accepting accepted: APNSProviderToken, otherwise reason: String, seen: LockedPaths) -> APNSInProcessTransport {
    APNSInProcessTransport { request in
        let authorization = request[header: "authorization"] ?? ""
        seen.append(authorization == accepted.authorizationHeaderValue ? "accepted" : "other")
        guard authorization == accepted.authorizationHeaderValue else {
            return APNSTransportResponse(status: 403, body: Array(#"{"reason":"\#(reason)"}"#.utf8))
        }
        return APNSTransportResponse(status: 200, headers: [APNSHeaderField("apns-id", "00000000-0000-0000-0000-000000000001")])
    }
}

@Suite("APNSProviderTokenSource: provider tokens from a source other than the client's own signer")
struct ProviderTokenSourceTests {
    static let issued = Date(timeIntervalSince1970: 1_760_000_000)

    static func signed(at date: Date) throws -> APNSProviderToken {
        try APNSProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: date, key: signingKey)
    }

    /// A client on `scripted`'s source, over an in-process APNs accepting only `accepted`.
    static func client(_ scripted: ScriptedSource, accepting accepted: APNSProviderToken, otherwise reason: String, seen: LockedPaths)
        throws -> APNSClient
    {
        try APNSClient(
            configuration: APNSClient.Configuration(authentication: .jwt(source: scripted.source), environment: .sandbox),
            transport: transport(accepting: accepted, otherwise: reason, seen: seen)
        )
    }

    @Test("Every request carries the source's current token; the client signs nothing itself")
    func currentToken() async throws {
        let shared = try Self.signed(at: Self.issued)
        let scripted = ScriptedSource(current: shared, next: nil)
        let seen = LockedPaths()
        let client = try Self.client(scripted, accepting: shared, otherwise: "InvalidProviderToken", seen: seen)
        for index in 0..<3 { _ = try await client.send(alert(), to: token(index)) }
        #expect(seen.paths == ["accepted", "accepted", "accepted"])
        #expect(scripted.currentCalls == 3 && scripted.rejections.isEmpty)
        #expect(client.providerTokenSignings == 0)
    }

    @Test("ExpiredProviderToken or InvalidProviderToken: the source is asked once for another, and the push is sent again with it",
          arguments: ["ExpiredProviderToken", "InvalidProviderToken"])
    func renewal(reason: String) async throws {
        let old = try Self.signed(at: Self.issued)
        let new = try Self.signed(at: Self.issued + 40 * 60)
        let scripted = ScriptedSource(current: old, next: new)
        let seen = LockedPaths()
        let client = try Self.client(scripted, accepting: new, otherwise: reason, seen: seen)
        let result = try await client.send(alert(), to: token(0))
        #expect(result.attempts == 1)
        #expect(seen.paths == ["other", "accepted"])
        #expect(scripted.rejections == [old])
    }

    @Test("A source that has no other token: one renewal only, then the rejection is reported")
    func renewalOnce() async throws {
        let stale = try Self.signed(at: Self.issued)
        let scripted = ScriptedSource(current: stale, next: nil)
        let seen = LockedPaths()
        let client = try Self.client(scripted, accepting: try Self.signed(at: Self.issued + 1), otherwise: "InvalidProviderToken", seen: seen)
        await #expect(throws: APNSError.self) { try await client.send(alert(), to: token(0)) }
        #expect(seen.paths == ["other", "other"])
        #expect(scripted.rejections.count == 1)
    }

    @Test("The local signer still reports InvalidProviderToken at once (a new token from a wrong key is as invalid)")
    func localSignerInvalid() async throws {
        let seen = LockedPaths()
        let client = try APNSClient(
            configuration: APNSClient.Configuration(authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), environment: .sandbox),
            transport: transport(accepting: try Self.signed(at: Self.issued), otherwise: "InvalidProviderToken", seen: seen)
        )
        await #expect(throws: APNSError.self) { try await client.send(alert(), to: token(0)) }
        #expect(seen.paths == ["other"])
        #expect(client.providerTokenSignings == 1)
    }

    @Test("A token read from elsewhere is checked: alg, kid, iss, signature and age, each named")
    func verifying() throws {
        let now = Self.issued + 60
        let good = try Self.signed(at: Self.issued)
        let read = try APNSProviderToken(verifying: good.jwt, keyID: keyID, teamID: teamID, key: signingKey.publicKey, now: now)
        #expect(read == good && read.issuedAt == Self.issued)
        func code(_ jwt: String, keyID: APNSKeyID = keyID, teamID: APNSTeamID = teamID, key: APNSVerificationKey? = signingKey.publicKey,
                  now: Date = now) -> APNSProviderTokenError.Code? {
            do {
                _ = try APNSProviderToken(verifying: jwt, keyID: keyID, teamID: teamID, key: key, now: now)
                return nil
            } catch { return error.code }
        }
        #expect(code("not a jwt") == .malformed)
        #expect(code(good.jwt, keyID: try APNSKeyID("FORGEKEY02")) == .unknownKeyID)
        #expect(code(good.jwt, teamID: try APNSTeamID("FORGETEAM2")) == .wrongTeam)
        #expect(code(good.jwt, key: try APNSSigningKey.generate().publicKey) == .badSignature)
        #expect(code(good.jwt, key: nil) == nil)
        #expect(code(good.jwt, now: Self.issued + 3601) == .expired)
        #expect(code(good.jwt, now: Self.issued - 120) == .issuedInFuture)
        let header = Data(#"{"alg":"none","kid":"FORGEKEY01"}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let noneAlg = header + "." + good.jwt.split(separator: ".")[1] + ".c2ln"
        #expect(code(noneAlg) == .unsupportedAlgorithm)
    }
}
