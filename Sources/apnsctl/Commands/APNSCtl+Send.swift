import ArgumentParser
import ForgeAPNsCore
import ForgeCrypto
import Foundation

extension APNSCtl {
    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a notification to one or more device tokens.",
            discussion: """
                With --dry-run, everything is validated and the HTTP/2 request that would be sent is printed \
                (the authorization header as 'bearer <redacted>'); nothing is sent.

                Example:
                  apnsctl send --dry-run --token 7c1d… --topic com.example.app --push-type background \\
                      --payload background.json --json
                """
        )

        @OptionGroup(title: "Credentials") var auth: AuthOptions
        @OptionGroup(title: "Endpoint") var endpoint: EndpointOptions
        @OptionGroup(title: "Notification") var notification: NotificationOptions

        @Option(name: .customLong("token"), help: ArgumentHelp("A device token as hex; repeat for several.", valueName: "hex"))
        var tokens: [String] = []

        @Option(
            name: .customLong("channel-id"),
            help: ArgumentHelp("Broadcast to this channel (base64 id) instead of device tokens.", valueName: "id")
        )
        var channelID: String?

        @Flag(name: .customLong("dry-run"), help: "Validate and print the request; send nothing.")
        var dryRun = false

        @Flag(name: .long, help: "Print one JSON object per request.")
        var json = false

        func validate() throws {
            if self.channelID != nil {
                guard self.tokens.isEmpty else {
                    throw ValidationError("--channel-id broadcasts to a channel; it cannot be combined with --token.")
                }
            } else if self.tokens.isEmpty {
                throw ValidationError("Missing --token: give at least one device token (or --channel-id for a broadcast).")
            }
            guard self.dryRun else {
                // The HTTP/2 transport is the next layer of ForgePush; until it lands, only --dry-run works.
                throw ValidationError("Sending needs the HTTP/2 transport, which this build does not have yet; use --dry-run.")
            }
        }

        func run() async throws {
            try await runReportingFailures {
                let environment = try self.endpoint.resolved()
                if let channel = self.channelID {
                    let prepared = try self.notification.prepareBroadcast(channel: channel)
                    let authorization = try self.dryRunAuthorization()
                    let rendered = DryRunRenderer(
                        request: prepared.request(), environment: environment, authorization: authorization
                    )
                    Output.result(self.json ? rendered.json() : rendered.text())
                    return
                }
                var tokens: [DeviceToken] = []
                for text in self.tokens {
                    do throws(APNSValidationError) { tokens.append(try DeviceToken(text)) } catch {
                        throw CLIFailure.badData("--token", error, value: text)
                    }
                }
                let prepared = try self.notification.prepare()
                let authorization = try self.dryRunAuthorization()
                for token in tokens {
                    let request = prepared.request(to: token)
                    let rendered = DryRunRenderer(request: request, environment: environment, authorization: authorization)
                    Output.result(self.json ? rendered.json() : rendered.text())
                }
            }
        }

        /// Checks the credentials when given, by loading the key and signing a token that is never shown.
        private func dryRunAuthorization() throws -> String? {
            guard self.auth.isPresent else {
                Output.diagnostic(
                    "note: no --key-file/--key-id/--team-id given: a real send needs them (or a client certificate)."
                )
                return nil
            }
            let credentials = try self.auth.load()
            do {
                _ = try APNSProviderToken.sign(
                    keyID: credentials.keyID, teamID: credentials.teamID, issuedAt: Date(), key: credentials.key
                )
            } catch {
                throw CLIFailure(message: "--key-file: \(error)", exitCode: CLIExit.dataError)
            }
            return "bearer <redacted>"
        }
    }
}
