import ArgumentParser
import ForgeCampaign
#if canImport(Glibc)
import Glibc
#endif

// `apnsctl send`'s options in the groups its help lists them under.

/// A provider token kept fresh by another program, instead of signing with the key.
struct ProviderTokenFileOptions: ParsableArguments {
    @Option(
        name: .customLong("provider-token-file"),
        help: ArgumentHelp(
            "Send with the provider token in this file (as apnsctl jwt --write FILE --refresh keeps it) instead of signing one; "
                + "needs --key-id and --team-id, and checks the signature when --key-file is given too.",
            valueName: "path"
        )
    )
    var path: String?
}

/// Who a push goes to: device tokens, a tokens file, or a broadcast channel.
struct SendRecipientOptions: ParsableArguments {
    @Option(name: .customLong("token"), help: ArgumentHelp("A device token as hex; repeat for several.", valueName: "hex"))
    var tokens: [String] = []

    @Option(
        name: .customLong("tokens-file"),
        help: ArgumentHelp("A file of tokens, one a line or NDJSON {\"token\":…,\"payload\":…}; - reads stdin.", valueName: "path")
    )
    var tokensFile: String?

    @Option(
        name: .customLong("channel-id"),
        help: ArgumentHelp("Broadcast to this channel (base64 id) instead of device tokens.", valueName: "id")
    )
    var channelID: String?

    @Flag(name: .long, help: "With --tokens-file: send nothing if any line is bad (exit 65).")
    var strict = false
}

/// Bulk sends: how many at once, where to resume, a crash-safe journal.
struct SendLargeSendOptions: ParsableArguments {
    @Option(name: .long, help: "The most requests in flight at once.")
    var concurrency: Int?

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
}

/// What a send prints.
struct SendOutputOptions: ParsableArguments {
    @OptionGroup var lints: LintOptions

    @Flag(name: .customLong("dry-run"), help: "Validate and print the request; send nothing.")
    var dryRun = false

    @Option(
        name: .customLong("write-apns"),
        help: ArgumentHelp("With --dry-run: also write the payload as a .apns file (simctl's format, for xcrun simctl push).", valueName: "file")
    )
    var writeAPNS: String?

    @Flag(name: .long, help: "Print one JSON object per request (per token, then a summary); the same as --format json.")
    var json = false

    @Option(name: .long, help: "human or json (default: human on a terminal, json otherwise).")
    var format: OutputFormat?

    /// A dry run prints JSON only when asked: the request it renders is for reading.
    var dryRunJSON: Bool { self.json || self.format == .json }

    /// The format results are printed in.
    var outputFormat: OutputFormat {
        if let format = self.format { return format }
        return self.json || isatty(STDOUT_FILENO) != 1 ? .json : .human
    }

    @Flag(name: .long, help: "Log the client's connections and retries on stderr (never a key or a provider token).")
    var verbose = false

}
