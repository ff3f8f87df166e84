import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeCampaign
import ForgeCampaignPostgres
import Foundation
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `--postgres URL --name N`: a campaign in PostgreSQL.
struct PostgresOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The campaign database (see apnsctl campaign --help).", valueName: "url"))
    var postgres: String

    @Option(name: .long, help: ArgumentHelp("The campaign's name.", valueName: "name"))
    var name: String

    var target: PostgresTarget {
        get throws { try PostgresTarget(url: self.postgres, name: self.name) }
    }
}

/// `--postgres URL --name N` where `--journal` is the other choice.
struct OptionalPostgresOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The campaign database (see apnsctl campaign --help).", valueName: "url"))
    var postgres: String?

    @Option(name: .long, help: ArgumentHelp("With --postgres: the campaign's name.", valueName: "name"))
    var name: String?

    /// The campaign named, or nil without --postgres.
    func resolved() throws -> PostgresTarget? {
        guard let url = self.postgres else {
            if self.name != nil { throw ValidationError("--name applies to --postgres.") }
            return nil
        }
        guard let name = self.name else { throw ValidationError("Missing --name: the campaign's name in --postgres.") }
        return try PostgresTarget(url: url, name: name)
    }
}

/// A campaign's database and name, with the library's errors mapped to exit codes.
struct PostgresTarget {
    var url: PostgresCampaignURL
    var name: String

    /// Errors only: apnsctl reports what matters itself.
    static let logger: Logger = {
        var logger = Logger(label: "apnsctl.campaign")
        logger.logLevel = .critical
        return logger
    }()

    init(url: String, name: String) throws {
        guard !name.isEmpty, name.utf8.count <= 200, !name.contains(where: \.isNewline) else {
            throw CLIFailure(message: "--name '\(CLIFailure.abbreviate(name))': 1 to 200 bytes, one line", exitCode: CLIExit.dataError)
        }
        self.name = name
        self.url = try Self.mapping { try PostgresCampaignURL(url) }
    }

    func open() async throws -> PostgresCampaign {
        try await self.run { try await PostgresCampaign.open(name: self.name, url: self.url, logger: Self.logger) }
    }

    /// `body`, its ``PostgresCampaignError`` as a ``CLIFailure``: 65 bad URL or taken name, 66 no
    /// such campaign, 69 the database failed.
    func run<Result>(_ body: () async throws -> Result) async throws -> Result {
        do { return try await body() } catch let error as PostgresCampaignError { throw Self.failure(error) }
    }

    private static func mapping<Result>(_ body: () throws -> Result) throws -> Result {
        do { return try body() } catch let error as PostgresCampaignError { throw Self.failure(error) }
    }

    private static func failure(_ error: PostgresCampaignError) -> CLIFailure {
        switch error.kind {
        case .badURL, .exists: CLIFailure(message: error.description, exitCode: CLIExit.dataError)
        case .notFound: CLIFailure(message: error.description, exitCode: CLIExit.noInput)
        case .database: CLIFailure(message: error.description, exitCode: CLIExit.unavailable)
        }
    }
}

extension APNSCtl.Campaign {
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a campaign in PostgreSQL: its notification and its tokens, for campaign work to send.",
            discussion: """
                The tables are created when missing. Everything is validated as send validates it (exit 65 naming \
                the flag; 66 for a missing file), and the campaign row, its tokens (loaded with COPY) and its \
                batches are written in one transaction: a failed create leaves nothing. A bad line in the tokens \
                file refuses the whole file (65). An existing name: exit 65.
                """
        )

        @OptionGroup var target: PostgresOptions
        @OptionGroup(title: "Notification") var notification: NotificationOptions

        @Option(name: .customLong("tokens-file"), help: ArgumentHelp("The tokens, one hex token a line.", valueName: "path"))
        var tokensFile: String

        @Option(
            name: .customLong("batch-size"),
            help: ArgumentHelp("Tokens a worker claims at once (default \(PostgresCampaign.defaultBatchSize)).", valueName: "count")
        )
        var batchSize = PostgresCampaign.defaultBatchSize

        func run() async throws {
            guard self.notification.hasSharedPayload else {
                throw ValidationError("A campaign sends one shared payload: give --payload (or --title…).")
            }
            guard self.batchSize >= 1 else { throw ValidationError("--batch-size must be at least 1 (got \(self.batchSize)).") }
            guard self.notification.apnsID == nil else {
                throw ValidationError("--apns-id does not apply: every push of a campaign gets the id of its campaign and token index.")
            }
            try await runReportingFailures {
                let headers = try self.notification.headers()
                let shared = try self.notification.prepare(headers)
                let target = try self.target.target
                try InputFiles.requireReadable(self.tokensFile, flag: "--tokens-file")
                let lines = try TokenLines(path: self.tokensFile, headers: headers, hasSharedPayload: true)
                var count = 0
                let definition = PostgresCampaign.Definition(
                    name: target.name, notification: shared,
                    tokensPath: URL(fileURLWithPath: self.tokensFile).standardizedFileURL.path, batchSize: self.batchSize
                )
                let campaign = try await target.run {
                    try await PostgresCampaign.create(definition, url: target.url, logger: PostgresTarget.logger) {
                        while let line = lines.next() {
                            switch line {
                            case .skipped:
                                continue
                            case .bad(let number, let problem):
                                throw CLIFailure(message: "\(lines.name):\(number): \(problem); nothing created", exitCode: CLIExit.dataError)
                            case .entry(let entry):
                                guard entry.notification == nil else {
                                    throw CLIFailure(
                                        message: "\(lines.name):\(entry.line): a campaign sends one shared payload; this line has its own",
                                        exitCode: CLIExit.dataError
                                    )
                                }
                                defer { count += 1 }
                                return CampaignJournal.Entry(index: count, line: entry.line, token: entry.token.hexString)
                            }
                        }
                        return nil
                    }
                }
                Output.diagnostic(
                    "campaign \(campaign.name): created with \(campaign.tokenCount) tokens in batches of \(self.batchSize) "
                        + "(id \(campaign.uuid.uuidString.lowercased()))"
                )
            }
        }
    }

    struct Work: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a PostgreSQL campaign's tokens with any number of other workers, on any machines.",
            discussion: """
                A worker claims a batch (FOR UPDATE SKIP LOCKED) with a lease it renews every third of --lease, \
                commits its tokens as sending before the sender gets them (at most \(PostgresCampaignWorker.window) ahead of \
                the last committed verdict), and commits their verdicts fenced by the lease's epoch: a worker that \
                stalls past its lease loses the batch to another, which sends its uncommitted tokens again, flagged \
                may_have_been_delivered. Verdicts are printed once committed: with --json one object per verdict \
                (as campaign report --json prints them) and a summary of this worker's verdicts; otherwise the \
                tokens not accepted and the summary.

                With --shared-provider-token, the workers send one provider token per key, kept in the table \
                campaign_provider_tokens: the worker that finds it 40 minutes old takes the row's lease and signs \
                the next one; the others read it (APNs refuses a key's token updated more than once in 20 minutes). \
                A row that does not verify against the key is ignored and logged on stderr.

                Exit codes: 0 no batch left (every token has a final verdict); 65 bad input; 66 no such campaign; \
                69 the database or the endpoint failed (a whole batch got no final verdict); 130 Ctrl-C (the batch \
                in hand is given back once its pushes on their way are answered).
                """
        )

        @OptionGroup var target: PostgresOptions
        @OptionGroup(title: "Credentials") var auth: AuthOptions
        @OptionGroup(title: "Endpoint") var endpoint: EndpointOptions

        @Option(name: .long, help: ArgumentHelp("The lease on a batch, renewed every third of it.", valueName: "seconds"))
        var lease = 30

        @Option(name: .long, help: ArgumentHelp("This worker's name in the leases (default HOST:PID).", valueName: "name"))
        var owner: String?

        @Option(name: .long, help: "The most requests in flight at once.")
        var concurrency: Int?

        @Flag(
            name: .customLong("shared-provider-token"),
            help: "Send the key's one provider token shared by every worker (kept in the campaign database) instead of signing one per worker."
        )
        var sharedProviderToken = false

        @Flag(name: .long, help: "One JSON object per committed verdict, then a summary object.")
        var json = false

        @Flag(name: .long, help: "Log batches claimed and done, and the client's connections, on stderr.")
        var verbose = false

        /// The configuration's credentials with `--shared-provider-token`: the key's token from the
        /// campaign database, its store logging on stderr (never a token).
        private func sharedTokenCredentials(_ target: PostgresTarget, owner: String) throws -> [APNSClient.Credential] {
            guard !self.auth.usesCertificate, self.auth.credentialSpecs.isEmpty else {
                throw ValidationError("--shared-provider-token shares one key's token; it cannot be combined with --cert, --p12 or --credential.")
            }
            let credentials = try self.auth.load()
            var logger = Logger(label: "apnsctl.provider-token")
            logger.logLevel = .info
            let store = PostgresProviderTokenStore(
                url: target.url, key: credentials.key, keyID: credentials.keyID, teamID: credentials.teamID, owner: owner, logger: logger
            )
            return [APNSClient.Credential(authentication: .jwt(source: store.source))]
        }

        func run() async throws {
            guard self.lease >= 1 else { throw ValidationError("--lease must be at least 1 second (got \(self.lease)).") }
            if let concurrency = self.concurrency, concurrency < 1 {
                throw ValidationError("--concurrency must be at least 1 (got \(concurrency)).")
            }
            guard self.auth.hasCredentials else {
                throw ValidationError("Sending needs credentials: --key-file, --key-id and --team-id (or APNS_KEY_FILE…), --cert/--p12, or --credential.")
            }
            try await runReportingFailures {
                let target = try self.target.target
                let owner = self.owner ?? "\(ProcessInfo.processInfo.hostName):\(getpid())"
                let configuration = try ClientFactory.configuration(
                    auth: self.auth, endpoint: self.endpoint, concurrency: self.concurrency, verbose: self.verbose,
                    credentials: self.sharedProviderToken ? try self.sharedTokenCredentials(target, owner: owner) : nil
                )
                let campaign = try await target.open()
                let worker = PostgresCampaignWorker(campaign: campaign, owner: owner, lease: .seconds(self.lease))
                let stopper = InterruptHandler()
                stopper.onStop({ worker.stop() }, abandon: { worker.abandon() })
                let printer = ReportPrinter(json: self.json)
                let summary = LockedSummary()
                let verbose = self.verbose
                let outcome = try await stopper.catchingInterrupts {
                    try await withAPNSClient(ClientFactory.client(configuration)) { client in
                        try await target.run {
                            try await worker.run(client: client) { event in
                                switch event {
                                case .committed(let lines):
                                    summary.add(lines)
                                    printer.print(lines)
                                case .leaseLost(let batch, let epoch, let dropped):
                                    Output.diagnostic(
                                        "campaign \(campaign.name): lease on batch \(batch) (epoch \(epoch)) lost to another worker; "
                                            + "\(dropped) verdicts not committed were dropped (that worker sends them again, flagged)"
                                    )
                                case .claimed(let batch, let epoch, let tokens) where verbose:
                                    Output.diagnostic("campaign \(campaign.name): claimed batch \(batch) (epoch \(epoch)): \(tokens) tokens to send")
                                case .batchDone(let batch) where verbose:
                                    Output.diagnostic("campaign \(campaign.name): batch \(batch) done")
                                case .released(let batch, let remaining):
                                    Output.diagnostic("campaign \(campaign.name): batch \(batch) given back with \(remaining) tokens without a final verdict")
                                default:
                                    break
                                }
                            }
                        }
                    }
                }
                printer.finish(summary.value)
                switch outcome {
                case .complete:
                    return
                case .stopped:
                    Output.diagnostic("interrupted: batch given back; run campaign work again (here or elsewhere) to go on")
                    throw ExitCode(CLIExit.interrupted)
                case .noProgress(let reason):
                    throw CLIFailure(
                        message: "campaign \(campaign.name): a whole batch got no final verdict (last: \(reason)); stopping",
                        exitCode: CLIExit.unavailable
                    )
                }
            }
        }
    }

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a PostgreSQL campaign's final verdicts as workers commit them, until every token has one.",
            discussion: """
                Each final verdict is printed once (with --json as campaign report --json prints it; otherwise only \
                the tokens not accepted), then the campaign's summary once no batch is left.
                """
        )

        @OptionGroup var target: PostgresOptions

        @Flag(name: .long, help: "One JSON object per verdict, then a summary object.")
        var json = false

        func run() async throws {
            try await runReportingFailures {
                let target = try self.target.target
                let campaign = try await target.open()
                let printer = ReportPrinter(json: self.json)
                let summary = try await target.run { try await campaign.watch { printer.print($0) } }
                printer.finish(summary)
            }
        }
    }
}

/// A worker's counts, added to from its event handler.
private final class LockedSummary: Sendable {
    private let box = Mutex(CampaignReport.Summary())

    func add(_ lines: [CampaignReport.Line]) {
        self.box.withLock { summary in
            for line in lines { summary.add(line) }
        }
    }

    var value: CampaignReport.Summary { self.box.withLock { $0 } }
}
