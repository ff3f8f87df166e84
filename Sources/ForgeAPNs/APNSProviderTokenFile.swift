public import ForgeAPNsCore
public import ForgeCrypto
import ForgeSupport
import Foundation

/// A provider token that another program keeps fresh in a file (`apnsctl jwt --write FILE
/// --refresh`, or a token vendor of your own), as a token source: several processes, in any
/// language, then send with one token per key, as APNs wants.
///
/// The file holds one ES256 JWT (surrounding white space ignored). It is read and checked when the
/// source is made, read again once its token is ``rereadAge`` old (at most once a minute), and read
/// again after APNs rejects its token. A file that has gone bad meanwhile (missing, empty, a token
/// for another key) leaves the token read last in use: APNs' answer then says what is wrong.
///
/// ```swift
/// let file = try APNSProviderTokenFile(path: "/run/apns/token", keyID: keyID, teamID: teamID)
/// let configuration = APNSClient.Configuration(authentication: .jwt(source: file.source), environment: .production)
/// ```
public final class APNSProviderTokenFile: Sendable {
    /// The age at which the file is read again: `apnsctl jwt --refresh` writes a new token every 40 minutes.
    public static let rereadAge: Duration = .seconds(40 * 60)

    /// Why a token file cannot be used: ``rule`` completes "the file …".
    public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
        public var path: String
        /// What is wrong, such as `is empty; it must hold one provider token (an ES256 JWT)`.
        public var rule: String

        public var description: String { "'\(self.path)': \(self.rule)" }
    }

    /// The file's path.
    public let path: String
    public let keyID: APNSKeyID
    public let teamID: APNSTeamID
    private let key: APNSVerificationKey?
    private let clock: any APNSWallClock
    private let current: LockedBox<(token: APNSProviderToken, readAt: Date)>

    /// Reads and checks the file.
    /// - Parameters:
    ///   - path: the token file.
    ///   - keyID: the key id a token's header must name.
    ///   - teamID: the team id a token must be issued by.
    ///   - key: when given, a token must also carry this key's signature.
    ///   - clock: the time against which tokens are judged and re-read.
    /// - Throws: ``Problem`` naming the rule the file breaks: missing, unreadable, empty, a token
    ///   older than 60 minutes, for another key or team, or not an ES256 JWT.
    public init(
        path: String, keyID: APNSKeyID, teamID: APNSTeamID, key: APNSVerificationKey? = nil, clock: any APNSWallClock = .system
    ) throws(Problem) {
        self.path = path
        self.keyID = keyID
        self.teamID = teamID
        self.key = key
        self.clock = clock
        let now = clock.now
        self.current = LockedBox((try Self.read(path, keyID: keyID, teamID: teamID, key: key, now: now), now))
    }

    /// The token read last.
    public var token: APNSProviderToken { self.current.withLock { $0.token } }

    /// The token source for a client: the file's token, read again when due or after a rejection.
    public var source: APNSProviderTokenSource {
        APNSProviderTokenSource(keyID: self.keyID, teamID: self.teamID) {
            self.token(rejected: nil)
        } afterRejection: { rejected in
            self.token(rejected: rejected)
        }
    }

    private func token(rejected: APNSProviderToken?) -> APNSProviderToken {
        let now = self.clock.now
        let (token, readAt) = self.current.withLock { $0 }
        let age = now.timeIntervalSince(token.issuedAt)
        let due = age >= Double(Self.rereadAge.components.seconds) && now.timeIntervalSince(readAt) >= 60
        guard due || rejected == token else { return token }
        let fresh = (try? Self.read(self.path, keyID: self.keyID, teamID: self.teamID, key: self.key, now: now)) ?? token
        self.current.withLock { $0 = (fresh, now) }
        return fresh
    }

    private static func read(
        _ path: String, keyID: APNSKeyID, teamID: APNSTeamID, key: APNSVerificationKey?, now: Date
    ) throws(Problem) -> APNSProviderToken {
        func bad(_ rule: String) -> Problem { Problem(path: path, rule: rule) }
        guard FileManager.default.fileExists(atPath: path) else {
            throw bad("no such file; it must hold a provider token (apnsctl jwt --write FILE --refresh keeps one fresh)")
        }
        guard let data = FileManager.default.contents(atPath: path) else { throw bad("cannot be read") }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw bad("is empty; it must hold one provider token (an ES256 JWT)") }
        do {
            return try APNSProviderToken(verifying: text, keyID: keyID, teamID: teamID, key: key, now: now)
        } catch {
            switch error.code {
            case .expired: throw bad("the token is too old: \(error.detail); a provider token must be at most 60 minutes old")
            case .unknownKeyID, .wrongTeam: throw bad("the token is not for key \(keyID) of team \(teamID): \(error.detail)")
            default: throw bad("not an ES256 provider token for key \(keyID) of team \(teamID): \(error.detail)")
            }
        }
    }
}
