import ArgumentParser
import ForgeAPNsCore
import ForgeCrypto
import Foundation

/// Token-authentication flags, shared by every command that talks to APNs.
struct AuthOptions: ParsableArguments {
    @Option(
        name: .customLong("key-file"),
        help: ArgumentHelp("The .p8 signing key from developer.apple.com (or APNS_KEY_FILE).", valueName: "path")
    )
    var keyFile: String?

    @Option(name: .customLong("key-id"), help: "The 10-character key id (or APNS_KEY_ID).")
    var keyID: String?

    @Option(name: .customLong("team-id"), help: "The 10-character team id (or APNS_TEAM_ID).")
    var teamID: String?

    var resolvedKeyFile: String? { EnvironmentFallback.value(self.keyFile, "APNS_KEY_FILE") }
    var resolvedKeyID: String? { EnvironmentFallback.value(self.keyID, "APNS_KEY_ID") }
    var resolvedTeamID: String? { EnvironmentFallback.value(self.teamID, "APNS_TEAM_ID") }

    /// Whether any token-authentication input was given.
    var isPresent: Bool { self.resolvedKeyFile != nil || self.resolvedKeyID != nil || self.resolvedTeamID != nil }

    /// Loads and checks the credentials: ids first (cheap), then the key.
    /// - Throws: `ValidationError` (exit 64) for a missing flag, ``CLIFailure`` with 65 or 66 for bad data.
    func load() throws -> (key: APNSSigningKey, keyID: APNSKeyID, teamID: APNSTeamID) {
        guard let path = self.resolvedKeyFile else {
            throw ValidationError("Missing --key-file (or APNS_KEY_FILE): the .p8 key that signs provider tokens.")
        }
        guard let keyIDText = self.resolvedKeyID else {
            throw ValidationError("Missing --key-id (or APNS_KEY_ID): the 10-character id of the key.")
        }
        guard let teamIDText = self.resolvedTeamID else {
            throw ValidationError("Missing --team-id (or APNS_TEAM_ID): the 10-character id of your team.")
        }
        let keyID: APNSKeyID
        let teamID: APNSTeamID
        do {
            keyID = try APNSKeyID(keyIDText)
        } catch {
            throw CLIFailure.badData("--key-id", error, value: keyIDText)
        }
        do {
            teamID = try APNSTeamID(teamIDText)
        } catch {
            throw CLIFailure.badData("--team-id", error, value: teamIDText)
        }
        do {
            return (try APNSSigningKey(contentsOfFile: path), keyID, teamID)
        } catch {
            let exitCode = error.code == .fileNotFound ? CLIExit.noInput : CLIExit.dataError
            throw CLIFailure(message: "--key-file: \(error)", exitCode: exitCode)
        }
    }
}
