import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLiveActivitiesGateway
import Foundation

extension APNSCtl {
    /// `apnsctl activities`: the managed Live Activities of ForgeLiveActivities from a shell.
    struct Activities: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "activities",
            abstract: "Managed Live Activities: a registry of tokens and activities by your own ids, and the pushes that follow from it.",
            discussion: """
                The registry (--store sqlite:FILE or postgres://…) holds what the app reported: each install's \
                push-to-start token, each activity's update token, and the activity's state (starting, active, \
                stale, ending, ended, dead). start goes through the push-to-start token with the activity id as \
                apns-collapse-id (a repeated start never makes two activities); update and end go to the current \
                update token, or wait for it (the latest only); a token APNs calls dead is never sent to again.

                Examples:
                  export S=sqlite:activities.sqlite
                  apnsctl activities report --store $S --installation i-42 \\
                      --bundle-id com.example.shop --attributes-type OrderAttributes \\
                      --push-to-start-token 7c1d…
                  apnsctl activities start --store $S --activity order-17 --installation i-42 \\
                      --bundle-id com.example.shop --attributes-type OrderAttributes \\
                      --attributes '{"order":"17"}' --content-state '{"status":"packing"}' \\
                      --alert-title "Order 17"
                  apnsctl activities report --store $S --activity order-17 --update-token 80a4… \\
                      --sequence 2
                  apnsctl activities update --store $S --activity order-17 \\
                      --content-state '{"status":"shipped"}'
                  apnsctl activities end --store $S --activity order-17 --dismissal-date 0
                  apnsctl activities list --store $S --state active --json

                Exit codes as send's; an unknown activity id, or an update or end of an ended or dead activity, or a \
                start to a stale or dead push-to-start token is 65 with the reason, and nothing is sent.
                """,
            subcommands: [Report.self, Start.self, Update.self, End.self, Renew.self, List.self, Show.self, Prune.self, Serve.self]
        )
    }
}

// MARK: Shared

/// `--activity ID`.
private func activityID(_ text: String) throws -> LiveActivityID {
    do throws(LiveActivityError) { return try LiveActivityID(text) } catch { throw CLIFailure(message: "--activity '\(CLIFailure.abbreviate(text))': \(error.rule)", exitCode: CLIExit.dataError) }
}

/// The flag that gave a report's JSON field.
private func flag(ofReportField field: String?, tokenFlag: String) -> String {
    switch field {
    case "token": tokenFlag
    case "bundle_id": "--bundle-id"
    case "attributes_type": "--attributes-type"
    case "installation": "--installation"
    case "activity": "--activity"
    case "sequence": "--sequence"
    case "environment": "--environment"
    default: field.map { "--\($0)" } ?? "--store"
    }
}

/// A refusal of the manager as apnsctl reports it: 65 with the rule for what the registry or the
/// arguments forbid (nothing was sent); a failed send is reported by its verdict line instead.
private func failure(_ error: LiveActivityError, flag: String? = nil) -> CLIFailure {
    switch error.code {
    case .invalidInput, .unknownActivity, .notLive, .noPushToStartToken:
        let prefix = flag ?? error.field.map { "--\($0.replacingOccurrences(of: "_", with: "-"))" }
        return CLIFailure(message: prefix.map { "\($0): \(error.rule)" } ?? error.rule, exitCode: CLIExit.dataError)
    case .store:
        return CLIFailure(message: "--store: \(error.rule)", exitCode: CLIExit.ioError)
    case .sendFailed, .noClient:
        return CLIFailure(message: error.rule, exitCode: CLIExit.software)
    case .startBudgetSpent:
        return CLIFailure(message: "--installation: \(error.rule)", exitCode: CLIExit.temporaryFailure)
    }
}

/// Sends through a manager on the store with a client made from the flags, and prints the verdict
/// line of the push `body` sent (as `send` prints it), or what was held.
private func sending(
    store: ActivityStoreOptions, auth: AuthOptions, endpoint: EndpointOptions, json: Bool, verbose: Bool,
    _ body: (LiveActivityManager) async throws(LiveActivityError) -> Sent
) async throws {
    let configuration = try ClientFactory.configuration(auth: auth, endpoint: endpoint, verbose: verbose)
    let client = try ClientFactory.client(configuration)
    let started = ContinuousClock.now
    let sent: Sent = try await store.withStore { store in
        try await withAPNSClient(client) { client in
            do throws(LiveActivityError) {
                // A one-shot command cannot wait for the start budget: a start beyond it exits 75.
                var configuration = LiveActivityManager.Configuration()
                configuration.startsBeyondBudget = .fail
                return try await body(LiveActivityManager(client: client, store: store, configuration: configuration))
            } catch {
                guard error.code == .sendFailed, let apnsError = error.apnsError else { throw failure(error) }
                return .verdict(APNSBulkVerdict.Outcome(apnsError), target: error.token?.hexString ?? "-")
            }
        }
    }
    switch sent {
    case .verdict(let outcome, let target):
        try SingleRequest.printVerdict(outcome, target: target, json: json, since: started, authority: configuration.environment.authority)
    case .held(let id, let what):
        Output.result(json ? jsonLine(["activity": id.rawValue, "outcome": "held"]) : "\(id) held: \(what)")
    case .nothing(let id, let why):
        Output.result(json ? jsonLine(["activity": id.rawValue, "outcome": "not_sent", "why": why]) : "\(id) not sent: \(why)")
    }
}

/// What a sending command did.
private enum Sent: Sendable {
    case verdict(APNSBulkVerdict.Outcome, target: String)
    case held(LiveActivityID, String)
    case nothing(LiveActivityID, String)

    init(_ outcome: LiveActivityManager.SendOutcome, id: LiveActivityID, token: () -> String, what: String) {
        switch outcome {
        case .sent(let result): self = .verdict(.accepted(result), target: token())
        case .held: self = .held(id, what)
        }
    }
}

/// One JSON object on a line, keys sorted.
private func jsonLine(_ object: [String: Any]) -> String {
    guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return "{}" }
    return String(decoding: data, as: UTF8.self)
}

/// The flags of the commands that send: the credentials and endpoint `send` takes, `--json`, `--verbose`.
struct ActivitySendOptions: ParsableArguments {
    @OptionGroup var auth: AuthOptions
    @OptionGroup var endpoint: EndpointOptions

    @Flag(name: .long, help: "Print the verdict as one JSON object.")
    var json = false

    @Flag(name: .long, help: "Log the client's connections and retries on stderr (never a key or a provider token).")
    var verbose = false
}

// MARK: report

extension APNSCtl.Activities {
    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply a token report of the app: a push-to-start token, an activity's update token, or its end.",
            discussion: """
                What the app posts to its backend, from a shell: --push-to-start-token (with --installation, \
                --bundle-id, --attributes-type), --update-token (with --activity; --bundle-id and --attributes-type \
                register an activity the app started itself), or --ended (with --activity). A --sequence older than \
                one applied is refused (65) and changes nothing. With credentials, a push held for the activity \
                goes out as its update token arrives; without them it stays held for a command that has them \
                (activities prune, or the next report with credentials).
                """
        )

        @OptionGroup var store: ActivityStoreOptions

        @Option(name: .long, help: ArgumentHelp("Your id of the app install (push-to-start token reports).", valueName: "id"))
        var installation: String?

        @Option(name: .customLong("bundle-id"), help: ArgumentHelp("The app's bundle id.", valueName: "bundle-id"))
        var bundleID: String?

        @Option(name: .customLong("attributes-type"), help: ArgumentHelp("The Swift type of the activity's attributes.", valueName: "name"))
        var attributesType: String?

        @Option(name: .customLong("push-to-start-token"), help: ArgumentHelp("The app's push-to-start token for the attributes type.", valueName: "hex"))
        var pushToStartToken: String?

        @Option(name: .long, help: ArgumentHelp("Your id of the activity (update token and end reports).", valueName: "id"))
        var activity: String?

        @Option(name: .customLong("update-token"), help: ArgumentHelp("The activity's update token.", valueName: "hex"))
        var updateToken: String?

        @Flag(name: .long, help: "The activity ended on the device (dismissed, or ended by iOS).")
        var ended = false

        @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The app's report sequence (or its timestamp in ms): an older one than applied is refused.", valueName: "n"))
        var sequence: Int64?

        @OptionGroup var send: ActivitySendOptions

        func validate() throws {
            let kinds = [self.pushToStartToken != nil, self.updateToken != nil && !self.ended, self.ended].filter { $0 }.count
            guard kinds == 1 else {
                throw ValidationError("Give one report: --push-to-start-token, --update-token or --ended.")
            }
            if self.pushToStartToken != nil {
                if self.activity != nil { throw ValidationError("--activity does not apply to a push-to-start token report.") }
                for (name, value) in [("--installation", self.installation), ("--bundle-id", self.bundleID), ("--attributes-type", self.attributesType)]
                where value == nil {
                    throw ValidationError("Missing \(name): a push-to-start token report names the install, the app and the attributes type.")
                }
            } else {
                if self.activity == nil { throw ValidationError("Missing --activity: the id of the activity the report is about.") }
                if (self.bundleID == nil) != (self.attributesType == nil), !self.ended {
                    throw ValidationError("--bundle-id and --attributes-type go together: they register an activity the app started itself.")
                }
            }
        }

        func run() async throws {
            try await runReportingFailures {
                let tokenFlag = self.pushToStartToken != nil ? "--push-to-start-token" : "--update-token"
                // The token's environment: --environment (or APNS_ENVIRONMENT), production when unset.
                let named = EnvironmentFallback.value(self.send.endpoint.environment?.rawValue, "APNS_ENVIRONMENT") ?? "production"
                guard let environment = EnvironmentName(rawValue: named) else {
                    throw ValidationError("--environment must be production, sandbox or development (got '\(named)').")
                }
                let json = ActivityReportJSON(
                    kind: self.pushToStartToken != nil ? "push_to_start_token" : self.ended ? "ended" : "update_token",
                    installation: self.installation, bundleID: self.bundleID, attributesType: self.attributesType, activity: self.activity,
                    token: self.pushToStartToken ?? self.updateToken, sequence: self.sequence,
                    environment: environment.isSandbox ? "sandbox" : "production"
                )
                let report: ActivityReport
                do throws(LiveActivityError) {
                    report = try ActivityReport(json)
                } catch {
                    throw failure(error, flag: flag(ofReportField: error.field, tokenFlag: tokenFlag))
                }
                let started = ContinuousClock.now
                let outcome: Applied = try await self.store.withStore { store in
                    guard self.send.auth.hasCredentials else {
                        let manager = LiveActivityManager(store: store)
                        do throws(LiveActivityError) {
                            return Applied(try await manager.report(report), held: try await Self.held(report, manager))
                        } catch {
                            throw failure(error, flag: flag(ofReportField: error.field, tokenFlag: tokenFlag))
                        }
                    }
                    let configuration = try ClientFactory.configuration(auth: self.send.auth, endpoint: self.send.endpoint, verbose: self.send.verbose)
                    let client = try ClientFactory.client(configuration)
                    return try await withAPNSClient(client) { client in
                        let manager = LiveActivityManager(client: client, store: store)
                        let authority = configuration.environment.authority
                        do throws(LiveActivityError) {
                            return Applied(try await manager.report(report), authority: authority)
                        } catch {
                            guard error.code == .sendFailed, let apnsError = error.apnsError else {
                                throw failure(error, flag: flag(ofReportField: error.field, tokenFlag: tokenFlag))
                            }
                            // Applied; the held push it released was not accepted.
                            var applied = Applied(applied: true, authority: authority)
                            applied.failedHeld = (APNSBulkVerdict.Outcome(apnsError), error.token?.hexString ?? "-")
                            return applied
                        }
                    }
                }
                let applied = outcome.applied
                if self.send.json {
                    var object: [String: Any] = ["applied": applied]
                    if let why = outcome.why { object["why"] = why }
                    if let activity = self.activity { object["activity"] = activity }
                    if let held = outcome.held { object["held"] = held }
                    Output.result(jsonLine(object))
                } else {
                    Output.result(applied ? "applied" : "not applied: \(outcome.why ?? "no change")")
                }
                if let held = outcome.held, !self.send.json {
                    Output.diagnostic("note: \(self.activity ?? "the activity") holds an \(held): it is sent by `apnsctl activities prune` (or a report) with credentials")
                }
                if let result = outcome.sentHeld {
                    try SingleRequest.printVerdict(
                        .accepted(result), target: self.updateToken ?? "-", json: self.send.json, since: started, authority: outcome.authority
                    )
                } else if let (failed, target) = outcome.failedHeld {
                    try SingleRequest.printVerdict(failed, target: target, json: self.send.json, since: started, authority: outcome.authority)
                }
            }
        }

        /// The event of the push still held after an update-token report applied without a client.
        private static func held(_ report: ActivityReport, _ manager: LiveActivityManager) async throws(LiveActivityError) -> String? {
            guard case .updateToken(let id, _, _, _) = report else { return nil }
            return try await manager.activity(id)?.held?.event
        }

        /// What a report did.
        private struct Applied: Sendable {
            var applied = false
            var why: String?
            var sentHeld: APNSSendResult?
            /// The event of a push that stays held (no credentials to send it).
            var held: String?
            var authority = ""
            var failedHeld: (APNSBulkVerdict.Outcome, String)?

            init(_ outcome: LiveActivityManager.ReportOutcome, held: String? = nil, authority: String = "") {
                self.init(applied: outcome.applied, authority: authority)
                self.why = outcome.why
                self.sentHeld = outcome.sentHeld
                self.held = held
            }

            init(applied: Bool, authority: String) {
                self.applied = applied
                self.authority = authority
            }
        }
    }
}

// MARK: start, update, end, renew

extension APNSCtl.Activities {
    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start a Live Activity through the install's push-to-start token (the activity id is its apns-collapse-id).",
            discussion: """
                Starting an id that is already running sends nothing and says so. The activity is `starting` until \
                the app reports its update token; updates meanwhile are held (the latest only).
                """
        )

        @OptionGroup var store: ActivityStoreOptions

        @Option(name: .long, help: ArgumentHelp("Your id of the activity (at most 64 bytes).", valueName: "id"))
        var activity: String

        @Option(name: .long, help: ArgumentHelp("Your id of the app install whose push-to-start token starts it.", valueName: "id"))
        var installation: String

        @Option(name: .customLong("bundle-id"), help: ArgumentHelp("The app's bundle id.", valueName: "bundle-id"))
        var bundleID: String

        @Option(name: .customLong("attributes-type"), help: ArgumentHelp("The Swift type of the activity's attributes.", valueName: "name"))
        var attributesType: String

        @Option(name: .long, help: ArgumentHelp("The attributes: a JSON object, or @file.", valueName: "json|@file"))
        var attributes: String

        @Option(name: .customLong("content-state"), help: ArgumentHelp("The content state: a JSON object, or @file.", valueName: "json|@file"))
        var contentState: String

        @Option(name: .customLong("alert-title"), help: "The start's alert title (a start through push-to-start always shows one).")
        var alertTitle: String

        @Option(name: .customLong("alert-body"), help: "The start's alert body.")
        var alertBody: String?

        @Option(name: .customLong("stale-date"), help: ArgumentHelp("aps.stale-date: seconds since 1970 or ISO 8601.", valueName: "date"))
        var staleDate: String?

        @Option(name: .customLong("relevance-score"), parsing: .unconditional, help: "aps.relevance-score.")
        var relevanceScore: Double?

        @OptionGroup var send: ActivitySendOptions

        func run() async throws {
            try await runReportingFailures {
                let id = try activityID(self.activity)
                let installation: InstallationID
                do throws(LiveActivityError) { installation = try InstallationID(self.installation) } catch { throw failure(error, flag: "--installation") }
                let bundleID: APNSBundleID
                do throws(APNSValidationError) { bundleID = try APNSBundleID(self.bundleID) } catch { throw CLIFailure.badData("--bundle-id", error, value: self.bundleID) }
                let attributes = try ActivityOptions.jsonObject(self.attributes, flag: "--attributes")
                let state = try ActivityOptions.jsonObject(self.contentState, flag: "--content-state")
                let staleDate = try self.staleDate.map { try ActivityOptions.date($0, flag: "--stale-date") }
                let alert = APNSLiveActivityAlert(title: .plain(self.alertTitle), body: .plain(self.alertBody ?? ""))
                try await sending(store: self.store, auth: self.send.auth, endpoint: self.send.endpoint, json: self.send.json, verbose: self.send.verbose) {
                    manager throws(LiveActivityError) in
                    let outcome = try await manager.start(
                        activity: id, installation: installation, bundleID: bundleID, attributesType: self.attributesType, attributes: attributes,
                        contentState: state, alert: alert, staleDate: staleDate, relevanceScore: self.relevanceScore
                    )
                    guard let result = outcome.sent, let token = outcome.token else {
                        return .nothing(id, "already \(outcome.activity.state): a running activity is not started twice")
                    }
                    return .verdict(.accepted(result), target: token.hexString)
                }
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a new content state to a running activity (held until its update token arrives).",
            discussion: """
                Routine by default: apns-priority 5, which iOS delivers opportunistically and does not count \
                against the activity's budget. --alerting sends it at priority 10 (at once, counted); add \
                --alert-title to light up the screen.
                """
        )

        @OptionGroup var store: ActivityStoreOptions

        @Option(name: .long, help: ArgumentHelp("Your id of the activity.", valueName: "id"))
        var activity: String

        @Option(name: .customLong("content-state"), help: ArgumentHelp("The content state: a JSON object, or @file.", valueName: "json|@file"))
        var contentState: String

        @Flag(name: .long, help: "Send at apns-priority 10 (at once; counts against the activity's budget) instead of 5.")
        var alerting = false

        @Option(name: .customLong("alert-title"), help: "An alert with the update (needs --alerting).")
        var alertTitle: String?

        @Option(name: .customLong("alert-body"), help: "The alert's body.")
        var alertBody: String?

        @Option(name: .customLong("stale-date"), help: ArgumentHelp("aps.stale-date: seconds since 1970 or ISO 8601.", valueName: "date"))
        var staleDate: String?

        @Option(name: .customLong("relevance-score"), parsing: .unconditional, help: "aps.relevance-score.")
        var relevanceScore: Double?

        @OptionGroup var send: ActivitySendOptions

        func validate() throws {
            if self.alertTitle != nil, !self.alerting { throw ValidationError("--alert-title needs --alerting: an alert at priority 5 is not shown at once.") }
            if self.alertBody != nil, self.alertTitle == nil { throw ValidationError("--alert-body needs --alert-title.") }
        }

        func run() async throws {
            try await runReportingFailures {
                let id = try activityID(self.activity)
                let state = try ActivityOptions.jsonObject(self.contentState, flag: "--content-state")
                let staleDate = try self.staleDate.map { try ActivityOptions.date($0, flag: "--stale-date") }
                let alert = self.alertTitle.map { APNSLiveActivityAlert(title: .plain($0), body: .plain(self.alertBody ?? "")) }
                let priority: APNSPriority = self.alerting ? .immediately : .consideringDevicePower
                try await sending(store: self.store, auth: self.send.auth, endpoint: self.send.endpoint, json: self.send.json, verbose: self.send.verbose) {
                    manager throws(LiveActivityError) in
                    let token = try await manager.activity(id)?.updateToken
                    let outcome = try await manager.update(
                        activity: id, contentState: state, staleDate: staleDate, alert: alert, relevanceScore: self.relevanceScore, priority: priority
                    )
                    return Sent(outcome, id: id, token: { token?.hexString ?? "-" }, what: "no update token yet; the latest update is sent when the app reports it")
                }
            }
        }
    }

    struct End: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "End a running activity, with a final content state (the last one sent when absent).",
            discussion: "Held until its update token arrives when it has none yet; nothing more is sent to it after."
        )

        @OptionGroup var store: ActivityStoreOptions

        @Option(name: .long, help: ArgumentHelp("Your id of the activity.", valueName: "id"))
        var activity: String

        @Option(name: .customLong("content-state"), help: ArgumentHelp("The final content state: a JSON object, or @file.", valueName: "json|@file"))
        var contentState: String?

        @Option(
            name: .customLong("dismissal-date"),
            help: ArgumentHelp("When it leaves the Lock Screen: seconds since 1970 or ISO 8601 (0: at once; default: iOS's, up to 4 hours).", valueName: "date")
        )
        var dismissalDate: String?

        @OptionGroup var send: ActivitySendOptions

        func run() async throws {
            try await runReportingFailures {
                let id = try activityID(self.activity)
                let state = try self.contentState.map { try ActivityOptions.jsonObject($0, flag: "--content-state") }
                let dismissal = try self.dismissalDate.map { try ActivityOptions.date($0, flag: "--dismissal-date") }
                try await sending(store: self.store, auth: self.send.auth, endpoint: self.send.endpoint, json: self.send.json, verbose: self.send.verbose) {
                    manager throws(LiveActivityError) in
                    let token = try await manager.activity(id)?.updateToken
                    let outcome = try await manager.end(activity: id, contentState: state, dismissalDate: dismissal)
                    return Sent(outcome, id: id, token: { token?.hexString ?? "-" }, what: "no update token yet; the end is sent when the app reports it")
                }
            }
        }
    }

    struct Renew: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Renew a running activity before iOS ends it at 8 hours: start its successor through push-to-start.",
            discussion: """
                The successor starts with the same attributes and the last content state; when the app reports its \
                update token (activities report), the id moves to it and the old activity gets its end. If the start \
                fails, nothing changes.
                """
        )

        @OptionGroup var store: ActivityStoreOptions

        @Option(name: .long, help: ArgumentHelp("Your id of the activity.", valueName: "id"))
        var activity: String

        @Option(name: .customLong("alert-title"), help: "The successor's start alert (default: \"Still going\").")
        var alertTitle = "Still going"

        @Option(name: .customLong("alert-body"), help: "The successor's start alert body.")
        var alertBody: String?

        @OptionGroup var send: ActivitySendOptions

        func run() async throws {
            try await runReportingFailures {
                let id = try activityID(self.activity)
                let alert = APNSLiveActivityAlert(title: .plain(self.alertTitle), body: .plain(self.alertBody ?? ""))
                try await sending(store: self.store, auth: self.send.auth, endpoint: self.send.endpoint, json: self.send.json, verbose: self.send.verbose) {
                    manager throws(LiveActivityError) in
                    let outcome = try await manager.renew(activity: id, alert: alert)
                    guard let result = outcome.sent, let token = outcome.token else {
                        return .nothing(id, "a renewal is already under way")
                    }
                    return .verdict(.accepted(result), target: token.hexString)
                }
            }
        }
    }
}

// MARK: list, show, prune

extension APNSCtl.Activities {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the activities in the registry, in id order.")

        @OptionGroup var store: ActivityStoreOptions

        @Option(name: .long, help: ArgumentHelp("Only those in this state: \(stateNames.joined(separator: ", ")).", valueName: "state"))
        var state: String?

        @Flag(name: .long, help: "Print one JSON array of objects.")
        var json = false

        func validate() throws {
            if let state, !stateNames.contains(state) {
                throw ValidationError("--state '\(state)': must be one of \(stateNames.joined(separator: ", "))")
            }
        }

        func run() async throws {
            try await runReportingFailures {
                let activities = try await self.store.withStore { store in
                    do throws(LiveActivityError) {
                        return try await LiveActivityManager(store: store).activities()
                    } catch {
                        throw failure(error)
                    }
                }.filter { self.state == nil || $0.state.name == self.state }
                if self.json {
                    Output.result(ActivityJSON.text(activities.map { ActivityJSON.object($0) }))
                    return
                }
                for activity in activities { Output.result(ActivityJSON.line(activity)) }
                if activities.isEmpty { Output.diagnostic("no activities\(self.state.map { " in state \($0)" } ?? "")") }
            }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one activity and its history.")

        @OptionGroup var store: ActivityStoreOptions

        @Argument(help: ArgumentHelp("Your id of the activity.", valueName: "id"))
        var activity: String

        @Flag(name: .long, help: "Print one JSON object.")
        var json = false

        func run() async throws {
            try await runReportingFailures {
                let id = try activityID(self.activity)
                let found = try await self.store.withStore { store in
                    do throws(LiveActivityError) {
                        return try await LiveActivityManager(store: store).activity(id)
                    } catch {
                        throw failure(error)
                    }
                }
                guard let found else { throw CLIFailure(message: "no activity has the id \(id)", exitCode: CLIExit.dataError) }
                if self.json {
                    Output.result(ActivityJSON.text(ActivityJSON.detailed(found)))
                    return
                }
                Output.result(ActivityJSON.line(found))
                if let held = found.held { Output.result("  held: the \(held.event), until the update token arrives") }
                for entry in found.history { Output.result("  \(ActivityJSON.date(entry.at))  \(entry.event)  \(entry.detail)") }
            }
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apply the clock: end activities past 8 hours, mark those past their stale date, remove those ended 12 hours after their start.",
            discussion: """
                Run it every few minutes (cron, a systemd timer). With credentials it also sends the pushes held \
                for activities whose update token arrived without them.
                """
        )

        @OptionGroup var store: ActivityStoreOptions

        @OptionGroup var send: ActivitySendOptions

        func run() async throws {
            try await runReportingFailures {
                let summary: LiveActivityManager.SweepSummary = try await self.store.withStore { store in
                    guard self.send.auth.hasCredentials else {
                        do throws(LiveActivityError) { return try await LiveActivityManager(store: store).sweep() } catch { throw failure(error) }
                    }
                    let configuration = try ClientFactory.configuration(auth: self.send.auth, endpoint: self.send.endpoint, verbose: self.send.verbose)
                    let client = try ClientFactory.client(configuration)
                    return try await withAPNSClient(client) { client in
                        do throws(LiveActivityError) {
                            return try await LiveActivityManager(client: client, store: store).sweep()
                        } catch {
                            throw failure(error)
                        }
                    }
                }
                if self.send.json {
                    Output.result(jsonLine(["ended": summary.ended, "stale": summary.stale, "removed": summary.removed, "sent_held": summary.sentHeld]))
                } else {
                    Output.result("ended \(summary.ended), stale \(summary.stale), removed \(summary.removed), held pushes sent \(summary.sentHeld)")
                }
            }
        }
    }
}

/// The names `--state` takes.
private let stateNames = ActivityJSON.stateNames
