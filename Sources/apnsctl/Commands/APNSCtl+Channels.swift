import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore

extension APNSCtl {
    struct Channels: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "channels",
            abstract: "Create, read, list and delete broadcast channels (Live Activity broadcasts).",
            discussion: """
                Channels live on Apple's channel-management host (api-manage-broadcast…), or on the --url server. \
                Broadcast to a channel with `apnsctl activity update|end --channel ID`.

                Examples:
                  apnsctl channels create --topic com.example.app --storage-policy most-recent
                  apnsctl channels list --topic com.example.app --json
                  apnsctl channels delete --topic com.example.app --channel dHN0LTEyMzQ=
                """,
            subcommands: [Create.self, Get.self, List.self, Delete.self]
        )
    }
}

/// The flags every channel command shares.
struct ChannelOptions: ParsableArguments {
    @OptionGroup(title: "Credentials") var auth: AuthOptions
    @OptionGroup(title: "Endpoint") var endpoint: EndpointOptions

    @Option(name: .long, help: ArgumentHelp("The app's bundle id (or APNS_TOPIC).", valueName: "bundle-id"))
    var topic: String?

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    @Flag(name: .long, help: "Log the client's connections and retries on stderr (never a key or a provider token).")
    var verbose = false

    var bundleID: APNSBundleID {
        get throws {
            try EnvironmentFallback.bundleID(self.topic)
        }
    }

    func withClient<Result>(_ body: (APNSClient) async throws(APNSError) -> Result) async throws -> Result {
        try await SingleRequest.withClient(auth: self.auth, endpoint: self.endpoint, verbose: self.verbose, body)
    }

    static func channelID(_ text: String) throws -> APNSChannelID {
        do { return try APNSChannelID(text) } catch { throw CLIFailure.badData("--channel", error, value: text) }
    }
}

extension APNSMessageStoragePolicy {
    /// The spelling apnsctl uses: `no-storage` or `most-recent`.
    var flagValue: String { self == .noMessageStored ? "no-storage" : "most-recent" }
}

extension APNSCtl.Channels {
    enum StoragePolicy: String, CaseIterable, ExpressibleByArgument {
        case noStorage = "no-storage", mostRecent = "most-recent"

        var policy: APNSMessageStoragePolicy { self == .noStorage ? .noMessageStored : .mostRecentMessageStored }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a channel; prints its id.")

        @OptionGroup var options: ChannelOptions

        @Option(name: .customLong("storage-policy"), help: "no-storage, or most-recent (the last message kept for 8 hours).")
        var storagePolicy: StoragePolicy = .noStorage

        func run() async throws {
            try await runReportingFailures {
                let bundleID = try self.options.bundleID
                let policy = self.storagePolicy.policy
                let id = try await self.options.withClient { client throws(APNSError) in
                    try await client.createChannel(bundleID: bundleID, storagePolicy: policy)
                }
                Output.result(self.options.json
                    ? "{\"channel\":\(JSONText.quote(id.rawValue)),\"storage_policy\":\(JSONText.quote(policy.flagValue))}"
                    : id.rawValue)
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a channel's storage policy.")

        @OptionGroup var options: ChannelOptions

        @Option(name: .long, help: "The channel id (base64).")
        var channel: String?

        func run() async throws {
            // Checked after parsing, not by the parser: a misspelt flag beside it is then reported as unknown.
            guard self.channel != nil else { throw ValidationError("Missing --channel: the channel id (base64).") }
            try await runReportingFailures {
                let bundleID = try self.options.bundleID
                let channel = try ChannelOptions.channelID(self.channel ?? "")
                let policy = try await self.options.withClient { client throws(APNSError) in
                    try await client.channelStoragePolicy(channel, bundleID: bundleID)
                }
                Output.result(self.options.json
                    ? "{\"channel\":\(JSONText.quote(channel.rawValue)),\"storage_policy\":\(JSONText.quote(policy.flagValue))}"
                    : "\(channel.rawValue) \(policy.flagValue)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the app's channels, one id a line.")

        @OptionGroup var options: ChannelOptions

        func run() async throws {
            try await runReportingFailures {
                let bundleID = try self.options.bundleID
                let channels = try await self.options.withClient { client throws(APNSError) in
                    try await client.channels(bundleID: bundleID)
                }
                if self.options.json {
                    Output.result("{\"channels\":[\(channels.map { JSONText.quote($0.rawValue) }.joined(separator: ","))]}")
                } else {
                    for channel in channels { Output.result(channel.rawValue) }
                }
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a channel.")

        @OptionGroup var options: ChannelOptions

        @Option(name: .long, help: "The channel id (base64).")
        var channel: String?

        func run() async throws {
            // Checked after parsing, not by the parser: a misspelt flag beside it is then reported as unknown.
            guard self.channel != nil else { throw ValidationError("Missing --channel: the channel id (base64).") }
            try await runReportingFailures {
                let bundleID = try self.options.bundleID
                let channel = try ChannelOptions.channelID(self.channel ?? "")
                try await self.options.withClient { client throws(APNSError) in
                    try await client.deleteChannel(channel, bundleID: bundleID)
                }
                Output.result(self.options.json ? "{\"deleted\":\(JSONText.quote(channel.rawValue))}" : "deleted \(channel.rawValue)")
            }
        }
    }
}
