import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeCampaign
import ForgeCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension APNSCtl {
    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a notification to one or more device tokens.",
            discussion: """
                Results go to stdout: on a terminal, a line for each token that was not accepted (with its line \
                in the tokens file) and a summary; otherwise (or with --json) one JSON object a token and a summary \
                object. Diagnostics go to stderr, with a progress bar and the summary when stderr is a terminal.

                Ctrl-C stops sending: no new push leaves, the pushes on their way get their answers, and the exit \
                code is 130; the last line says where to go on (--resume-from LINE: the first line not sent or \
                with no answer). Ctrl-C again stops waiting for answers (those pushes are reported as in flight: \
                they may have been delivered); a third time quits at once.

                A tokens file has one hex token a line, or NDJSON lines {"token":"…","payload":{…}} (a line with its \
                own payload is sent with it); blank lines and # comments are skipped. A bad line is reported on \
                stderr as FILE:LINE: problem and skipped (with --strict, nothing is sent and the exit code is 65).

                Exit codes: 0 all accepted; 1 one or more rejected, failed or not sent, or bad lines skipped; \
                64 usage; 65 bad data; 66 input file missing; 69 endpoint unreachable or TLS failure (the \
                wrong scheme included); 70 internal error; 73 the journal cannot be created; 74 a journal write \
                failed; 75 the journal is in use by another process; 130 Ctrl-C.

                With --journal FILE (a tokens file and a shared payload): progress and verdicts are committed to a \
                SQLite journal and a verdict is printed once committed; re-running the same command after a crash \
                sends only the tokens with no final verdict (those sent before without one are flagged \
                may_have_been_delivered; at most --journal-window tokens per crash, \(CampaignSend.defaultWindow) by default; a token \
                that failed, with no answer, is sent again too). `apnsctl campaign report --journal FILE` prints one verdict per token.

                With --dry-run, everything is validated and the HTTP/2 request that would be sent is printed \
                (the authorization header as 'bearer <redacted>'); nothing is sent.

                With --provider-token-file FILE, the pushes carry the token in FILE (kept fresh by \
                apnsctl jwt --write FILE --refresh, or by another program) instead of one signed here: it must be an \
                ES256 JWT for --key-id and --team-id, at most 60 minutes old (else exit 65, nothing sent).

                Examples:
                  apnsctl send --token 7c1d… --topic com.example.app --title Hi --body 'Hello'
                  apnsctl send --tokens-file tokens.txt --payload alert.json --json
                  apnsctl send --dry-run --token 7c1d… --topic com.example.app \\
                      --push-type background --payload background.json --json
                """
        )

        @OptionGroup(title: "Credentials") var auth: AuthOptions
        @OptionGroup(title: "Credentials") var tokenFile: ProviderTokenFileOptions
        @OptionGroup(title: "Endpoint") var endpoint: EndpointOptions
        @OptionGroup(title: "Notification") var notification: NotificationOptions

        @OptionGroup(title: "Recipients") var recipients: SendRecipientOptions
        @OptionGroup(title: "Large sends") var large: SendLargeSendOptions
        @OptionGroup(title: "Output") var output: SendOutputOptions

        /// Rules between flags; run() checks them first, once the parser has refused unknown options.
        func check() throws {
            if self.recipients.channelID != nil {
                guard self.recipients.tokens.isEmpty else {
                    throw ValidationError("--channel-id broadcasts to a channel; it cannot be combined with --token.")
                }
                guard self.output.dryRun else {
                    throw ValidationError("--channel-id broadcasts are only rendered (--dry-run) by this build; send them with the library.")
                }
            } else if self.recipients.tokens.isEmpty && self.recipients.tokensFile == nil {
                throw ValidationError("Missing --token: give at least one device token, or --tokens-file (or --channel-id for a broadcast).")
            }
            if self.recipients.tokensFile != nil {
                guard self.recipients.tokens.isEmpty else { throw ValidationError("Give --token or --tokens-file, not both.") }
                guard !self.output.dryRun else { throw ValidationError("--dry-run takes --token; --tokens-file sends.") }
                if self.recipients.tokensFile == "-", self.notification.payload == "-" {
                    throw ValidationError("--tokens-file - and --payload - cannot both read standard input.")
                }
            } else if self.recipients.strict {
                throw ValidationError("--strict applies to --tokens-file.")
            }
            if let line = self.large.resumeFrom {
                guard self.recipients.tokensFile != nil else { throw ValidationError("--resume-from applies to --tokens-file.") }
                guard line >= 1 else { throw ValidationError("--resume-from must be a line number, 1 or more (got \(line)).") }
            }
            if self.large.journal != nil {
                guard let file = self.recipients.tokensFile else { throw ValidationError("--journal applies to --tokens-file.") }
                guard file != "-" else { throw ValidationError("--journal needs a tokens file it can read again on resume, not standard input (-).") }
                guard self.large.resumeFrom == nil else { throw ValidationError("--journal resumes by itself; --resume-from does not apply.") }
                guard self.notification.hasSharedPayload else {
                    throw ValidationError("--journal sends one shared payload: give --payload (or --title…).")
                }
            }
            if let window = self.large.journalWindow {
                guard self.large.journal != nil else { throw ValidationError("--journal-window applies to --journal.") }
                let range = CampaignSend.windowRange
                guard range.contains(window) else {
                    throw ValidationError("--journal-window must be between \(range.lowerBound) and \(range.upperBound) (got \(window)).")
                }
            }
            if self.output.writeAPNS != nil {
                guard self.output.dryRun else { throw ValidationError("--write-apns writes what --dry-run shows: add --dry-run.") }
                guard self.recipients.channelID == nil else { throw ValidationError("--write-apns writes a push to an app, not a broadcast (--channel-id).") }
            }
            if self.output.json, self.output.format == .human { throw ValidationError("--json and --format human contradict each other.") }
            if let concurrency = self.large.concurrency, concurrency < 1 {
                throw ValidationError("--concurrency must be at least 1 (got \(concurrency)).")
            }
        }

        func run() async throws {
            try self.check()
            try self.output.lints.check()
            try await runReportingFailures {
                let environment = try self.endpoint.resolved()
                // The TLS flags are checked as a send would (a garbage --ca-file, --insecure-loopback
                // off loopback), --dry-run included.
                _ = try self.endpoint.tls()
                if let channel = self.recipients.channelID {
                    let prepared = try self.notification.prepareBroadcast(channel: channel)
                    let authorization = try self.auth.dryRunAuthorization()
                    let rendered = try DryRunRenderer(
                        request: prepared.request(), environment: environment, authorization: authorization
                    )
                    Output.result(self.output.dryRunJSON ? rendered.json() : rendered.text())
                    return
                }
                var tokens: [DeviceToken] = []
                for text in self.recipients.tokens {
                    do throws(APNSValidationError) { tokens.append(try DeviceToken(text)) } catch {
                        throw CLIFailure.badData("--token", error, value: text)
                    }
                }
                guard self.output.dryRun else {
                    try await self.send(tokens: tokens)
                    return
                }
                let headers = try self.notification.headers()
                let prepared = try self.notification.prepare(headers)
                let authorization = try self.auth.dryRunAuthorization()
                self.output.lints.warn(prepared.lints())
                if let path = self.output.writeAPNS { try Self.writeSimulatorFile(prepared, bundleID: headers.topicText, to: path) }
                for token in tokens {
                    let request = prepared.request(to: token)
                    let rendered = try DryRunRenderer(request: request, environment: environment, authorization: authorization)
                    Output.result(self.output.dryRunJSON ? rendered.json() : rendered.text())
                }
            }
        }

        /// Sends for real: validates everything first (64, 65, 66), then sends and exits with the
        /// code the results call for.
        private func send(tokens: [DeviceToken]) async throws {
            let headers = try self.notification.headers()
            let shared = self.notification.hasSharedPayload || self.recipients.tokensFile == nil ? try self.notification.prepare(headers) : nil
            // Once per prepared notification, never per token; they never stop the send.
            let lints = shared.map { self.output.lints.warn($0.lints()) } ?? []
            let source: SendSession.Tokens
            var configuration: APNSClient.Configuration?
            if let journal = self.large.journal, let path = self.recipients.tokensFile, let shared {
                // Credentials first: a usage error or a missing key file leaves no journal behind.
                configuration = try self.clientConfiguration()
                source = .journal(
                    try await JournalCampaign.prepare(
                        journalPath: journal, tokensPath: path, shared: shared, environment: try self.endpoint.resolved().description,
                        headers: headers, strict: self.recipients.strict, window: self.large.journalWindow ?? CampaignSend.defaultWindow
                    )
                )
            } else if let path = self.recipients.tokensFile {
                source = try TokenFileReading.open(
                    path: path, strict: self.recipients.strict, headers: headers, hasSharedPayload: shared != nil, firstLine: self.large.resumeFrom ?? 1,
                    topics: LineTopics(served: try self.auth.servedBundleIDs(), sharedBody: shared?.body)
                )
            } else {
                source = .list(tokens)
            }
            let resolved = try configuration ?? self.clientConfiguration()
            let code = try await withAPNSClient(ClientFactory.client(resolved)) { client in
                await SendSession(
                    client: client, shared: shared, tokens: source,
                    renderer: ResultRenderer(format: self.output.outputFormat, lints: lints.map(\.id)),
                    width: self.large.concurrency ?? 64, endpoint: resolved.environment.authority,
                    frequentUpdates: self.output.lints.isSilenced("LA007") ? nil : FrequentUpdates(shared: shared)
                ).run()
            }
            if code != 0 { throw ExitCode(code) }
        }

        /// `--write-apns`: the payload as a `.apns` file for the app `bundleID`.
        /// - Throws: ``CLIFailure`` 65 for a push type simctl does not push, 73 when the file cannot be written.
        private static func writeSimulatorFile(_ prepared: APNSPreparedNotification, bundleID: String, to path: String) throws {
            guard APNSSimulatorFile.pushTypes.contains(prepared.pushType) else {
                let types = APNSSimulatorFile.pushTypes.map(\.description).joined(separator: ", ")
                throw CLIFailure(message: "--write-apns: simctl pushes notifications to an app (push type \(types)), not \(prepared.pushType)",
                                 exitCode: CLIExit.dataError)
            }
            guard let bytes = APNSSimulatorFile.render(payload: prepared.body, bundleID: bundleID) else {
                throw CLIFailure(message: "--write-apns: the payload is not a JSON object", exitCode: CLIExit.dataError)
            }
            do { try Data(bytes).write(to: URL(fileURLWithPath: path)) } catch {
                throw CLIFailure(message: "--write-apns '\(path)': cannot write it (\(error.localizedDescription))", exitCode: CLIExit.cannotCreate)
            }
        }

        /// The client's configuration; sending needs credentials (64 without).
        private func clientConfiguration() throws -> APNSClient.Configuration {
            guard self.auth.hasCredentials else {
                throw ValidationError(
                    "Sending needs credentials: --key-file, --key-id and --team-id (or APNS_KEY_FILE…), --cert/--p12, or --credential; "
                        + "--dry-run validates without them."
                )
            }
            // Before the first push: the cheap check doctor makes, as a warning.
            if let warning = self.auth.keyFileNameWarning() { Output.diagnostic("warning: \(warning)") }
            if let warning = self.endpoint.conflictWarning() { Output.diagnostic("warning: \(warning)") }
            // On a terminal, a first line that says where the pushes go and with which key.
            if ProgressBar.isAvailable {
                var parts = ["→ " + self.endpoint.destination(try self.endpoint.resolved())]
                if let topic = EnvironmentFallback.value(self.notification.topic, "APNS_TOPIC") {
                    parts.append("topic \(topic)" + (self.notification.topic == nil ? " from APNS_TOPIC" : ""))
                }
                if let keyID = self.auth.resolvedKeyID {
                    let fromEnvironment = self.auth.keyID == nil || self.auth.teamID == nil
                    parts.append("key \(keyID) (team \(self.auth.resolvedTeamID ?? "?"))" + (fromEnvironment ? " from APNS_KEY_ID/APNS_TEAM_ID" : ""))
                }
                Output.diagnostic(parts.joined(separator: " · "))
            }
            return try ClientFactory.configuration(
                auth: self.auth, endpoint: self.endpoint, concurrency: self.large.concurrency, verbose: self.output.verbose,
                credentials: try self.providerTokenFile().map { [APNSClient.Credential(authentication: .jwt(source: $0.source))] }
            )
        }

        /// `--provider-token-file`, read and checked (65 naming the file and the rule), or `nil`.
        private func providerTokenFile() throws -> APNSProviderTokenFile? {
            guard let path = self.tokenFile.path else { return nil }
            guard !self.auth.usesCertificate, self.auth.credentialSpecs.isEmpty else {
                throw ValidationError("--provider-token-file sends with one key's token; it cannot be combined with --cert, --p12 or --credential.")
            }
            guard let keyIDText = self.auth.resolvedKeyID, let teamIDText = self.auth.resolvedTeamID else {
                throw ValidationError("--provider-token-file needs --key-id and --team-id (or APNS_KEY_ID, APNS_TEAM_ID): the key and team its token must be for.")
            }
            let keyID: APNSKeyID, teamID: APNSTeamID
            do { keyID = try APNSKeyID(keyIDText) } catch { throw CLIFailure.badData("--key-id", error, value: keyIDText) }
            do { teamID = try APNSTeamID(teamIDText) } catch { throw CLIFailure.badData("--team-id", error, value: teamIDText) }
            let key = self.auth.resolvedKeyFile == nil ? nil : try self.auth.load().key.publicKey
            do throws(APNSProviderTokenFile.Problem) {
                return try APNSProviderTokenFile(path: path, keyID: keyID, teamID: teamID, key: key)
            } catch {
                throw CLIFailure(message: "--provider-token-file \(error)", exitCode: CLIExit.dataError)
            }
        }
    }
}
