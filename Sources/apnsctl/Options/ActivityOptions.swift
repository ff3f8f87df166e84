import ArgumentParser
import ForgeAPNsCore
import Foundation

/// The flags every Live Activity push shares: where it goes, its content state, dates and headers.
struct ActivityOptions: ParsableArguments {
    @OptionGroup var lints: LintOptions

    @Option(name: .long, help: ArgumentHelp("The app's bundle id (or APNS_TOPIC); .push-type.liveactivity is added.", valueName: "bundle-id"))
    var topic: String?

    @Option(name: .long, help: ArgumentHelp("The activity's push token (for start: the push-to-start token).", valueName: "hex"))
    var token: String?

    @Option(name: .long, help: ArgumentHelp("Broadcast to this channel instead of a token (update and end).", valueName: "channel-id"))
    var channel: String?

    @Option(name: .customLong("content-state"), help: ArgumentHelp("The content state: a JSON object, or @file.", valueName: "json|@file"))
    var contentState: String?

    @Option(name: .long, help: ArgumentHelp("aps.timestamp: seconds since 1970 or ISO 8601 (default: now).", valueName: "date"))
    var timestamp: String?

    @Option(name: .customLong("stale-date"), help: ArgumentHelp("aps.stale-date: seconds since 1970 or ISO 8601.", valueName: "date"))
    var staleDate: String?

    @Option(name: .customLong("relevance-score"), parsing: .unconditional, help: "aps.relevance-score.")
    var relevanceScore: Double?

    @Option(name: .customLong("alert-title"), help: "aps.alert.title (start needs an alert).")
    var alertTitle: String?

    @Option(name: .customLong("alert-body"), help: "aps.alert.body.")
    var alertBody: String?

    @Option(name: .customLong("alert-sound"), help: "aps.alert.sound.")
    var alertSound: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The whole payload from a file instead of the content flags: a .apns file (simctl's format; its \"Simulator Target Bundle\" is --topic when absent) or JSON; its aps.event must be this command's.",
            valueName: "path"
        )
    )
    var payload: String?

    @Option(name: .long, help: "The apns-priority: 10 or 5 (default: 10).")
    var priority: NotificationOptions.Priority?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("The apns-expiration: 0, or seconds since 1970.", valueName: "seconds")
    )
    var expiration: String?

    @Option(name: .customLong("collapse-id"), help: "The apns-collapse-id (not for broadcasts).")
    var collapseID: String?

    @Option(name: .customLong("apns-id"), help: "The apns-id (a UUID); for broadcasts, the apns-request-id.")
    var apnsID: String?

    @Flag(name: .customLong("dry-run"), help: "Validate and print the request; send nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Print the result as one JSON object.")
    var json = false

    @Flag(name: .long, help: "Log the client's connections and retries on stderr (never a key or a provider token).")
    var verbose = false

    /// Rules between flags; run() checks them first, once the parser has refused unknown options.
    func check() throws {
        try self.lints.check()
        if self.token != nil, self.channel != nil { throw ValidationError("Give --token or --channel, not both.") }
        if self.token == nil, self.channel == nil { throw ValidationError("Missing --token (the activity's push token) or --channel.") }
        if self.payload != nil {
            let content: [(String, Bool)] = [
                ("--content-state", self.contentState != nil), ("--timestamp", self.timestamp != nil), ("--stale-date", self.staleDate != nil),
                ("--relevance-score", self.relevanceScore != nil), ("--alert-title", self.alertTitle != nil),
                ("--alert-body", self.alertBody != nil), ("--alert-sound", self.alertSound != nil),
            ]
            try Self.refuseBesidePayload(content.filter(\.1).map(\.0))
        }
        // Checked here, after parsing, not by the parser: a misspelt flag beside it is then reported as unknown.
        if self.contentState == nil, self.payload == nil { throw ValidationError("Missing --content-state: the activity's content state, a JSON object or @file.") }
        if self.channel != nil, self.collapseID != nil { throw ValidationError("--collapse-id does not apply to broadcasts.") }
        if self.alertBody != nil || self.alertSound != nil, self.alertTitle == nil {
            throw ValidationError("--alert-body and --alert-sound need --alert-title.")
        }
    }

    // MARK: Parsed values

    var bundleID: APNSBundleID { get throws { try self.bundleID(payload: nil) } }

    /// `--topic` (or `APNS_TOPIC`), else the "Simulator Target Bundle" of a `.apns` `--payload`.
    func bundleID(payload: PayloadFile?) throws -> APNSBundleID {
        guard EnvironmentFallback.value(self.topic, "APNS_TOPIC") == nil, let bundle = payload?.targetBundle else {
            return try EnvironmentFallback.bundleID(self.topic)
        }
        do { return try APNSBundleID(bundle) } catch {
            throw CLIFailure(
                message: "--payload '\(self.payload ?? "")': its \"\(APNSSimulatorFile.targetBundleKey)\" \(error.rule)", exitCode: CLIExit.dataError
            )
        }
    }

    var deviceToken: DeviceToken {
        get throws {
            let text = self.token ?? ""
            do { return try DeviceToken(text) } catch { throw CLIFailure.badData("--token", error, value: text) }
        }
    }

    var channelID: APNSChannelID {
        get throws {
            let text = self.channel ?? ""
            do { return try APNSChannelID(text) } catch { throw CLIFailure.badData("--channel", error, value: text) }
        }
    }

    var state: CodableJSON { get throws { try Self.jsonObject(self.contentState ?? "", flag: "--content-state") } }

    var timestampDate: Date { get throws { try self.timestamp.map { try Self.date($0, flag: "--timestamp") } ?? Date() } }

    var staleDateValue: Date? { get throws { try self.staleDate.map { try Self.date($0, flag: "--stale-date") } } }

    var alert: APNSLiveActivityAlert? {
        guard let title = self.alertTitle else { return nil }
        return APNSLiveActivityAlert(title: .plain(title), body: .plain(self.alertBody ?? ""), sound: self.alertSound)
    }

    var expirationValue: APNSExpiration? {
        get throws {
            guard let text = self.expiration else { return nil }
            do { return try APNSExpiration(headerValue: text) } catch { throw CLIFailure.badData("--expiration", error, value: text) }
        }
    }

    var collapseIDValue: APNSCollapseID? {
        get throws {
            guard let text = self.collapseID else { return nil }
            do { return try APNSCollapseID(text) } catch { throw CLIFailure.badData("--collapse-id", error) }
        }
    }

    var apnsIDValue: APNSID? {
        get throws {
            guard let text = self.apnsID else { return nil }
            do { return try APNSID(text) } catch { throw CLIFailure.badData("--apns-id", error, value: text) }
        }
    }

    /// A JSON object given inline or as `@file`.
    /// - Throws: ``CLIFailure`` (65 not an object, 66 missing file).
    static func jsonObject(_ text: String, flag: String) throws -> CodableJSON {
        let bytes = text.hasPrefix("@") ? InputFiles.withoutByteOrderMark(try InputFiles.read(String(text.dropFirst()), flag: flag)) : Array(text.utf8)
        let value: CodableJSON
        do { value = try CodableJSON(parsing: bytes) } catch {
            throw CLIFailure(message: "\(flag): not valid JSON: \(CodableJSON.describe(error))", exitCode: CLIExit.dataError)
        }
        guard case .object = value else {
            throw CLIFailure(message: "\(flag): must be a JSON object ({…})", exitCode: CLIExit.dataError)
        }
        return value
    }

    /// Seconds since 1970 (integer or fractional) or an ISO 8601 date-time.
    static func date(_ text: String, flag: String) throws -> Date {
        if let seconds = Double(text), seconds >= 0 { return Date(timeIntervalSince1970: seconds) }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        throw CLIFailure(message: "\(flag): '\(text)' is neither seconds since 1970 nor an ISO 8601 date (2026-11-23T09:30:00Z)",
                         exitCode: CLIExit.dataError)
    }
}
