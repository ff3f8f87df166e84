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
                64 usage; 65 bad data; 66 input file missing; 69 endpoint unreachable or TLS failure; 130 Ctrl-C.

                With --journal FILE (a tokens file and a shared payload): progress and verdicts are committed to a \
                SQLite journal and a verdict is printed once committed; re-running the same command after a crash \
                sends only the tokens with no final verdict (those sent before without one are flagged \
                may_have_been_delivered; at most --journal-window tokens per crash, \(CampaignSend.defaultWindow) by default; a token \
                that failed, with no answer, is sent again too). `apnsctl campaign report --journal FILE` prints one verdict per token.

                With --dry-run, everything is validated and the HTTP/2 request that would be sent is printed \
                (the authorization header as 'bearer <redacted>'); nothing is sent.

                Examples:
                  apnsctl send --token 7c1d… --topic com.example.app --title Hi --body 'Hello'
                  apnsctl send --tokens-file tokens.txt --payload alert.json --json
                  apnsctl send --dry-run --token 7c1d… --topic com.example.app \\
                      --push-type background --payload background.json --json
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

        @Option(
            name: .customLong("tokens-file"),
            help: ArgumentHelp("A file of tokens, one a line or NDJSON {\"token\":…,\"payload\":…}; - reads stdin.", valueName: "path")
        )
        var tokensFile: String?

        @Flag(name: .long, help: "With --tokens-file: send nothing if any line is bad (exit 65).")
        var strict = false

        @Option(name: .long, help: "The most requests in flight at once.")
        var concurrency: Int?

        @Flag(name: .customLong("dry-run"), help: "Validate and print the request; send nothing.")
        var dryRun = false

        @Flag(name: .long, help: "Print one JSON object per request (per token, then a summary); the same as --format json.")
        var json = false

        @Option(name: .long, help: "human or json (default: human on a terminal, json otherwise).")
        var format: OutputFormat?

        @Option(
            name: .customLong("resume-from"),
            help: ArgumentHelp("With --tokens-file: start at this line (as an interrupted send printed it).", valueName: "line")
        )
        var resumeFrom: Int?

        @Option(
            name: .long,
            help: ArgumentHelp(
                "With --tokens-file and a shared payload: record progress and verdicts in this SQLite file; re-running the same command resumes.",
                valueName: "path"
            )
        )
        var journal: String?

        @Option(
            name: .customLong("journal-window"),
            help: ArgumentHelp(
                "With --journal: the most tokens sent ahead of the last committed verdict, so the most one crash sends twice (\(CampaignSend.windowRange.lowerBound)…\(CampaignSend.windowRange.upperBound), default \(CampaignSend.defaultWindow)).",
                valueName: "n"
            )
        )
        var journalWindow: Int?

        /// A dry run prints JSON only when asked: the request it renders is for reading.
        var dryRunJSON: Bool { self.json || self.format == .json }

        /// The format results are printed in.
        var outputFormat: OutputFormat {
            if let format = self.format { return format }
            return self.json || isatty(STDOUT_FILENO) != 1 ? .json : .human
        }

        @Flag(name: .long, help: "Log the client's connections and retries on stderr (never a key or a provider token).")
        var verbose = false

        /// Rules between flags; run() checks them first, once the parser has refused unknown options.
        func check() throws {
            if self.channelID != nil {
                guard self.tokens.isEmpty else {
                    throw ValidationError("--channel-id broadcasts to a channel; it cannot be combined with --token.")
                }
                guard self.dryRun else {
                    throw ValidationError("--channel-id broadcasts are only rendered (--dry-run) by this build; send them with the library.")
                }
            } else if self.tokens.isEmpty && self.tokensFile == nil {
                throw ValidationError("Missing --token: give at least one device token, or --tokens-file (or --channel-id for a broadcast).")
            }
            if self.tokensFile != nil {
                guard self.tokens.isEmpty else { throw ValidationError("Give --token or --tokens-file, not both.") }
                guard !self.dryRun else { throw ValidationError("--dry-run takes --token; --tokens-file sends.") }
                if self.tokensFile == "-", self.notification.payload == "-" {
                    throw ValidationError("--tokens-file - and --payload - cannot both read standard input.")
                }
            } else if self.strict {
                throw ValidationError("--strict applies to --tokens-file.")
            }
            if let line = self.resumeFrom {
                guard self.tokensFile != nil else { throw ValidationError("--resume-from applies to --tokens-file.") }
                guard line >= 1 else { throw ValidationError("--resume-from must be a line number, 1 or more (got \(line)).") }
            }
            if self.journal != nil {
                guard let file = self.tokensFile else { throw ValidationError("--journal applies to --tokens-file.") }
                guard file != "-" else { throw ValidationError("--journal needs a tokens file it can read again on resume, not standard input (-).") }
                guard self.resumeFrom == nil else { throw ValidationError("--journal resumes by itself; --resume-from does not apply.") }
                guard self.notification.hasSharedPayload else {
                    throw ValidationError("--journal sends one shared payload: give --payload (or --title…).")
                }
            }
            if let window = self.journalWindow {
                guard self.journal != nil else { throw ValidationError("--journal-window applies to --journal.") }
                let range = CampaignSend.windowRange
                guard range.contains(window) else {
                    throw ValidationError("--journal-window must be between \(range.lowerBound) and \(range.upperBound) (got \(window)).")
                }
            }
            if self.json, self.format == .human { throw ValidationError("--json and --format human contradict each other.") }
            if let concurrency = self.concurrency, concurrency < 1 {
                throw ValidationError("--concurrency must be at least 1 (got \(concurrency)).")
            }
        }

        func run() async throws {
            try self.check()
            try await runReportingFailures {
                let environment = try self.endpoint.resolved()
                // The TLS flags are checked as a send would (a garbage --ca-file, --insecure-loopback
                // off loopback), --dry-run included.
                _ = try self.endpoint.tls()
                if let channel = self.channelID {
                    let prepared = try self.notification.prepareBroadcast(channel: channel)
                    let authorization = try self.auth.dryRunAuthorization()
                    let rendered = try DryRunRenderer(
                        request: prepared.request(), environment: environment, authorization: authorization
                    )
                    Output.result(self.dryRunJSON ? rendered.json() : rendered.text())
                    return
                }
                var tokens: [DeviceToken] = []
                for text in self.tokens {
                    do throws(APNSValidationError) { tokens.append(try DeviceToken(text)) } catch {
                        throw CLIFailure.badData("--token", error, value: text)
                    }
                }
                guard self.dryRun else {
                    try await self.send(tokens: tokens)
                    return
                }
                let prepared = try self.notification.prepare()
                let authorization = try self.auth.dryRunAuthorization()
                Self.warn(prepared.lints())
                for token in tokens {
                    let request = prepared.request(to: token)
                    let rendered = try DryRunRenderer(request: request, environment: environment, authorization: authorization)
                    Output.result(self.dryRunJSON ? rendered.json() : rendered.text())
                }
            }
        }

        /// Sends for real: validates everything first (64, 65, 66), then sends and exits with the
        /// code the results call for.
        private func send(tokens: [DeviceToken]) async throws {
            let headers = try self.notification.headers()
            let shared = self.notification.hasSharedPayload || self.tokensFile == nil ? try self.notification.prepare(headers) : nil
            // Once per prepared notification, never per token; they never stop the send.
            if let shared { Self.warn(shared.lints()) }
            let source: SendSession.Tokens
            var configuration: APNSClient.Configuration?
            if let journal = self.journal, let path = self.tokensFile, let shared {
                // Credentials first: a usage error or a missing key file leaves no journal behind.
                configuration = try self.clientConfiguration()
                source = .journal(
                    try await JournalCampaign.prepare(
                        journalPath: journal, tokensPath: path, shared: shared, environment: try self.endpoint.resolved().description,
                        headers: headers, strict: self.strict, window: self.journalWindow ?? CampaignSend.defaultWindow
                    )
                )
            } else if let path = self.tokensFile {
                source = try TokenFileReading.open(
                    path: path, strict: self.strict, headers: headers, hasSharedPayload: shared != nil, firstLine: self.resumeFrom ?? 1,
                    topics: LineTopics(served: try self.auth.servedBundleIDs(), sharedBody: shared?.body)
                )
            } else {
                source = .list(tokens)
            }
            let resolved = try configuration ?? self.clientConfiguration()
            let code = try await withAPNSClient(ClientFactory.client(resolved)) { client in
                await SendSession(
                    client: client, shared: shared, tokens: source, renderer: ResultRenderer(format: self.outputFormat),
                    width: self.concurrency ?? 64, endpoint: resolved.environment.authority
                ).run()
            }
            if code != 0 { throw ExitCode(code) }
        }

        /// What an iPhone would get wrong with the push, on stderr (`warning: LA001: …`).
        static func warn(_ lints: [APNSLint]) {
            for lint in lints { Output.diagnostic("warning: \(lint)") }
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
            return try ClientFactory.configuration(auth: self.auth, endpoint: self.endpoint, concurrency: self.concurrency, verbose: self.verbose)
        }
    }
}
