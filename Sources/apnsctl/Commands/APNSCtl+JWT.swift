import ArgumentParser
import ForgeAPNsCore
import ForgeCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension APNSCtl {
    struct JWT: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "jwt",
            abstract: "Print a fresh provider token, for use with curl.",
            discussion: """
                The token is valid for one hour; APNs refuses a token that changes more than once in 20 minutes \
                on one connection. This is the only command that prints a whole token, because printing it is \
                its purpose.

                With --write FILE, the token goes to FILE instead (mode 0600, replaced atomically), and stderr \
                says its key id and iat. With --refresh as well, the command keeps running and writes a new token \
                every 40 minutes, or --refresh-interval (APNs takes a key's new token at most every 20 minutes, \
                and none older than 60), so shell pipelines and programs in other languages share one fresh token: \
                apnsctl send --provider-token-file FILE reads it.

                Examples:
                  curl --http2 -H "authorization: bearer $(apnsctl jwt --key-file AuthKey_ABC123DEFG.p8 \\
                      --key-id ABC123DEFG --team-id DEF123GHIJ)" …
                  apnsctl jwt --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ \\
                      --write /run/apns/token --refresh &
                """
        )

        /// How often --refresh writes a new token by default.
        static let refreshInterval: Duration = .seconds(40 * 60)

        @OptionGroup(title: "Credentials") var auth: AuthOptions

        @Option(
            name: .customLong("write"),
            help: ArgumentHelp("Write the token to this file (mode 0600, replaced atomically) instead of printing it.", valueName: "file")
        )
        var write: String?

        @Flag(help: "With --write: keep running, writing a new token every 40 minutes.")
        var refresh = false

        @Option(
            name: .customLong("refresh-interval"),
            help: ArgumentHelp(
                "With --refresh: how often to write a new token, 20m to 55m for APNs (shorter only for a local server).",
                valueName: "duration"
            ),
            transform: { try TokenDuration.parse($0, flag: "--refresh-interval", maximumMinutes: 55) }
        )
        var refreshInterval: Duration?

        func validate() throws {
            if self.refresh, self.write == nil { throw ValidationError("--refresh keeps a token file fresh: give --write FILE.") }
            if self.refreshInterval != nil, !self.refresh { throw ValidationError("--refresh-interval needs --refresh.") }
        }

        func run() async throws {
            try await runReportingFailures {
                let credentials = try self.auth.load()
                func sign() throws -> APNSProviderToken {
                    do {
                        return try APNSProviderToken.sign(
                            keyID: credentials.keyID, teamID: credentials.teamID, issuedAt: Date(), key: credentials.key
                        )
                    } catch {
                        throw CLIFailure(message: "--key-file: \(error)", exitCode: CLIExit.dataError)
                    }
                }
                guard let path = self.write else {
                    Output.providerToken(try sign().jwt)
                    return
                }
                let interval = self.refreshInterval ?? Self.refreshInterval
                if self.refresh, interval < .seconds(20 * 60) {
                    Output.diagnostic(
                        "warning: --refresh-interval under 20m: APNs answers TooManyProviderTokenUpdates to a key's tokens replaced that often"
                    )
                }
                repeat {
                    let token = try sign()
                    try Self.write(token, to: path)
                    Output.diagnostic("wrote \(path): key \(token.keyID), iat \(Int64(token.issuedAt.timeIntervalSince1970))")
                    guard self.refresh else { return }
                    try await Task.sleep(for: interval)
                } while true
            }
        }

        /// Writes `token` to a file next to `path`, readable by its owner only, and renames it over
        /// `path`: a reader sees the old token or the new one, never half of one.
        static func write(_ token: APNSProviderToken, to path: String) throws {
            let url = URL(fileURLWithPath: path)
            let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(getpid()).tmp")
            do {
                guard FileManager.default.createFile(
                    atPath: temporary.path, contents: Data((token.jwt + "\n").utf8), attributes: [.posixPermissions: 0o600]
                ) else {
                    throw CocoaError(.fileWriteUnknown)
                }
                guard rename(temporary.path, url.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            } catch {
                try? FileManager.default.removeItem(at: temporary)
                throw CLIFailure(message: "--write '\(path)': cannot be written (\(error.localizedDescription))", exitCode: CLIExit.cannotCreate)
            }
        }
    }
}
