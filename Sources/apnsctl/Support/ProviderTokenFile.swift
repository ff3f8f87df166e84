import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeSupport
import Foundation

/// A provider token another program keeps fresh in a file (`apnsctl jwt --write FILE --refresh`),
/// as `send --provider-token-file` uses it: read and checked before anything is sent, read again
/// when the token is due for replacement or APNs rejects it.
final class ProviderTokenFile: Sendable {
    /// The age at which the file is read again: `jwt --refresh` writes a new token every 40 minutes.
    static let rereadAge: TimeInterval = 40 * 60

    let path: String
    let keyID: APNSKeyID
    let teamID: APNSTeamID
    private let key: APNSVerificationKey?
    private let current: LockedBox<(token: APNSProviderToken, readAt: Date)>

    /// Reads and checks the file.
    /// - Parameter key: verifies the token's signature when the `.p8` key was given too.
    /// - Throws: ``CLIFailure`` (65) naming the file and the rule it breaks.
    init(path: String, keyID: APNSKeyID, teamID: APNSTeamID, key: APNSVerificationKey?) throws {
        self.path = path
        self.keyID = keyID
        self.teamID = teamID
        self.key = key
        let now = Date()
        self.current = LockedBox((try Self.read(path, keyID: keyID, teamID: teamID, key: key, now: now), now))
    }

    /// The client's token source: the file's token, read again once it is 40 minutes old (at most
    /// once a minute) and once after a rejection.
    var source: APNSProviderTokenSource {
        APNSProviderTokenSource(keyID: self.keyID, teamID: self.teamID) {
            self.token(now: Date(), rejected: nil)
        } afterRejection: { rejected in
            self.token(now: Date(), rejected: rejected)
        }
    }

    private func token(now: Date, rejected: APNSProviderToken?) -> APNSProviderToken {
        let (token, readAt) = self.current.withLock { $0 }
        let due = now.timeIntervalSince(token.issuedAt) >= Self.rereadAge && now.timeIntervalSince(readAt) >= 60
        guard due || rejected == token else { return token }
        // A file that went bad meanwhile keeps the token read last; the send reports APNs' answer.
        let fresh = (try? Self.read(self.path, keyID: self.keyID, teamID: self.teamID, key: self.key, now: now)) ?? token
        self.current.withLock { $0 = (fresh, now) }
        return fresh
    }

    /// The token in `path`, checked.
    static func read(_ path: String, keyID: APNSKeyID, teamID: APNSTeamID, key: APNSVerificationKey?, now: Date) throws -> APNSProviderToken {
        func bad(_ rule: String) -> CLIFailure {
            CLIFailure(message: "--provider-token-file '\(path)': \(rule)", exitCode: CLIExit.dataError)
        }
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
            case .unknownKeyID, .wrongTeam:
                throw bad("the token is not for key \(keyID) of team \(teamID): \(error.detail)")
            default: throw bad("not an ES256 provider token for key \(keyID) of team \(teamID): \(error.detail)")
            }
        }
    }
}
