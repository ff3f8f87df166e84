import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeTestSupport
import Foundation
import Testing

/// A token file another program keeps fresh: what the source hands out as the file changes, on a
/// manual clock (no waiting).
@Suite("APNSProviderTokenFile: a token kept fresh in a file by another program")
struct ProviderTokenFileTests {
    private let clock = ManualWallClock(Date(timeIntervalSince1970: 1_760_000_000))

    private func token(issuedAt: Date, key: APNSSigningKey = signingKey) throws -> APNSProviderToken {
        try APNSProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: issuedAt, key: key)
    }

    private func write(_ text: String, to path: String) throws {
        try Data((text + "\n").utf8).write(to: URL(fileURLWithPath: path))
    }

    @Test("The file is read again once its token is 40 minutes old, not before, and at most once a minute")
    func rereadWhenDue() async throws {
        let folder = try TemporaryFolder("token-file")
        defer { folder.remove() }
        let path = try folder.file("token")
        let first = try self.token(issuedAt: self.clock.now)
        try self.write(first.jwt, to: path)
        let file = try APNSProviderTokenFile(path: path, keyID: keyID, teamID: teamID, key: signingKey.publicKey, clock: self.clock)
        // The writer replaces it at 39 minutes; the source keeps its token until 40.
        self.clock.advance(by: 39 * 60)
        let second = try self.token(issuedAt: self.clock.now)
        try self.write(second.jwt, to: path)
        #expect(try await file.source.currentToken() == first)
        self.clock.advance(by: 60)
        #expect(try await file.source.currentToken() == second)
        // The writer is late: the due token is read again, unchanged, then not on every push but a
        // minute later, when the writer's new one is there.
        self.clock.advance(by: 40 * 60)
        #expect(try await file.source.currentToken() == second)
        self.clock.advance(by: 10)
        let third = try self.token(issuedAt: self.clock.now)
        try self.write(third.jwt, to: path)
        self.clock.advance(by: 20)
        #expect(try await file.source.currentToken() == second)
        self.clock.advance(by: 31)
        #expect(try await file.source.currentToken() == third)
    }

    @Test("After a rejection the file is read again at once; a file gone bad keeps the token read last")
    func rereadAfterRejection() async throws {
        let folder = try TemporaryFolder("token-file")
        defer { folder.remove() }
        let path = try folder.file("token")
        // Signed by another key: the file is checked without the key, as a sender without the .p8 does.
        let forged = try self.token(issuedAt: self.clock.now, key: try APNSSigningKey.generate())
        try self.write(forged.jwt, to: path)
        let file = try APNSProviderTokenFile(path: path, keyID: keyID, teamID: teamID, clock: self.clock)
        let good = try self.token(issuedAt: self.clock.now)
        try self.write(good.jwt, to: path)
        #expect(try await file.source.currentToken() == forged)
        #expect(try await file.source.token(afterRejecting: forged) == good)
        #expect(try await file.source.currentToken() == good)
        // Emptied by a writer's bug: the source keeps the good token, never an empty one.
        try self.write("", to: path)
        #expect(try await file.source.token(afterRejecting: good) == good)
    }

    @Test("A file that cannot be used names the rule", arguments: [
        ("missing", nil, "no such file; it must hold a provider token"),
        ("empty", "", "is empty; it must hold one provider token (an ES256 JWT)"),
        ("text", "not a token", "not an ES256 provider token for key FORGEKEY01 of team FORGETEAM1"),
    ] as [(String, String?, String)])
    func refused(_ name: String, _ contents: String?, _ rule: String) throws {
        let folder = try TemporaryFolder("token-file")
        defer { folder.remove() }
        let path = folder.url.appendingPathComponent(name).path
        if let contents { try self.write(contents, to: path) }
        do {
            _ = try APNSProviderTokenFile(path: path, keyID: keyID, teamID: teamID, clock: self.clock)
            Issue.record("accepted \(name)")
        } catch {
            #expect(error.path == path && error.rule.hasPrefix(rule), "\(error)")
        }
    }

    @Test("A token over 60 minutes old is refused when the file is opened")
    func tooOld() throws {
        let folder = try TemporaryFolder("token-file")
        defer { folder.remove() }
        let path = try folder.file("token")
        try self.write(try self.token(issuedAt: self.clock.now - 61 * 60).jwt, to: path)
        #expect(throws: APNSProviderTokenFile.Problem.self) {
            _ = try APNSProviderTokenFile(path: path, keyID: keyID, teamID: teamID, clock: self.clock)
        }
    }
}
