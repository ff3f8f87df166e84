import ArgumentParser
import ForgeAPNsCore
import ForgeCrypto
import Foundation

extension APNSCtl {
    struct JWT: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "jwt",
            abstract: "Print a fresh provider token, for use with curl.",
            discussion: """
                The token is valid for one hour; APNs refuses a token that changes more than once in 20 minutes \
                on one connection. This is the only command that prints a whole token, because printing it is \
                its purpose.

                Example:
                  curl --http2 -H "authorization: bearer $(apnsctl jwt --key-file AuthKey_ABC123DEFG.p8 \\
                      --key-id ABC123DEFG --team-id DEF123GHIJ)" …
                """
        )

        @OptionGroup(title: "Credentials") var auth: AuthOptions

        func run() async throws {
            try await runReportingFailures {
                let credentials = try self.auth.load()
                let token: APNSProviderToken
                do {
                    token = try APNSProviderToken.sign(
                        keyID: credentials.keyID, teamID: credentials.teamID, issuedAt: Date(), key: credentials.key
                    )
                } catch {
                    throw CLIFailure(message: "--key-file: \(error)", exitCode: CLIExit.dataError)
                }
                Output.result(token.jwt)
            }
        }
    }
}
