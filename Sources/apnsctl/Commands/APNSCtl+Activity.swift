import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import Foundation

extension APNSCtl {
    struct Activity: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "activity",
            abstract: "Start, update or end a Live Activity, by its push token or as a broadcast to a channel.",
            discussion: """
                The content state is a JSON object matching the app's ActivityAttributes.ContentState \
                (--content-state '{"status":"on the way"}' or @state.json); the timestamp defaults to now, and a \
                device ignores an update older than the last one it applied.

                Examples:
                  apnsctl activity start --token <push-to-start token> --attributes-type DeliveryAttributes \\
                      --attributes '{"orderID":"A-17"}' --content-state '{"status":"preparing"}' \\
                      --alert-title "Order A-17" --alert-body "We are preparing it"
                  apnsctl activity update --token <activity token> --content-state @state.json --stale-date 2026-11-23T10:00:00Z
                  apnsctl activity end --channel <channel id> --content-state '{"status":"delivered"}' --dismissal-date 0
                  apnsctl activity update --token <activity token> --payload update.apns   # a Simulator fixture, as it is
                """,
            subcommands: [Start.self, Update.self, End.self]
        )

        /// Prints or sends a prepared token push or broadcast.
        fileprivate static func deliver(
            _ prepared: Prepared, options: ActivityOptions, auth: AuthOptions, endpoint: EndpointOptions
        ) async throws {
            let lints: [APNSLint]
            switch prepared {
            case .token(let notification, _): lints = options.lints.warn(notification.lints())
            case .broadcast(let broadcast): lints = options.lints.warn(broadcast.lints())
            }
            if options.dryRun {
                let environment = try endpoint.resolved()
                _ = try endpoint.tls()
                let request: APNSHTTPRequest
                switch prepared {
                case .token(let notification, let token): request = notification.request(to: token)
                case .broadcast(let broadcast): request = broadcast.request()
                }
                let rendered = try DryRunRenderer(request: request, environment: environment, authorization: try auth.dryRunAuthorization())
                Output.result(options.json ? rendered.json() : rendered.text())
                return
            }
            switch prepared {
            case .token(let notification, let token):
                try await SingleRequest.sendReporting(auth: auth, endpoint: endpoint, verbose: options.verbose, json: options.json,
                                                lints: lints.map(\.id), target: token.hexString) { client throws(APNSError) in
                    try await client.send(notification, to: token)
                }
            case .broadcast(let broadcast):
                try await SingleRequest.sendReporting(auth: auth, endpoint: endpoint, verbose: options.verbose, json: options.json,
                                                lints: lints.map(\.id), target: broadcast.channelID.rawValue) { client throws(APNSError) in
                    try await client.send(broadcast)
                }
            }
        }

        fileprivate enum Prepared {
            case token(APNSPreparedNotification, DeviceToken)
            case broadcast(APNSPreparedBroadcast)
        }

        /// A payload from `--payload`, with the header flags: to a token or a channel.
        fileprivate static func prepare(_ file: ActivityOptions.PayloadFile, _ options: ActivityOptions) throws -> Prepared {
            let bundleID = try options.bundleID(payload: file)
            let flagged = { (error: APNSValidationError) -> CLIFailure in
                CLIFailure.badData(error.code == .badPriority ? "--priority" : "--payload", error)
            }
            let priority = options.priority?.priority
            let apnsID = try options.apnsIDValue
            if options.channel != nil {
                let channelID = try options.channelID
                let expiration = try options.expirationValue ?? .immediately
                do throws(APNSValidationError) {
                    return .broadcast(
                        try APNSPreparedBroadcast(
                            bundleID: bundleID, channelID: channelID, priority: priority ?? .immediately, expiration: expiration,
                            requestID: apnsID, body: file.bytes
                        )
                    )
                } catch { throw flagged(error) }
            }
            let notification = APNSPayloadNotification(
                pushType: .liveactivity, topic: APNSTopic(bundleID: bundleID, pushType: .liveactivity), json: file.bytes,
                priority: priority, expiration: try options.expirationValue ?? .none, collapseID: try options.collapseIDValue, apnsID: apnsID
            )
            let token = try options.deviceToken
            do throws(APNSValidationError) { return .token(try notification.prepared(), token) } catch { throw flagged(error) }
        }

        /// Update and end: to a token or a channel.
        fileprivate static func prepareEvent(_ event: APNSLiveActivityEvent, named name: String, _ options: ActivityOptions) throws -> Prepared {
            if let file = try options.payloadFile(event: name) { return try self.prepare(file, options) }
            let bundleID = try options.bundleID
            let state = try options.state
            let timestamp = try options.timestampDate
            let staleDate = try options.staleDateValue
            let flagged = { (error: APNSValidationError) -> CLIFailure in
                CLIFailure.badData(error.code == .badPriority ? "--priority" : "--content-state", error)
            }
            if options.channel != nil {
                let broadcast = APNSBroadcastNotification(
                    channelID: try options.channelID, bundleID: bundleID, event: event, contentState: state, timestamp: timestamp,
                    staleDate: staleDate, relevanceScore: options.relevanceScore, alert: options.alert,
                    priority: options.priority?.priority ?? .immediately, expiration: try options.expirationValue ?? .immediately,
                    requestID: try options.apnsIDValue
                )
                do throws(APNSValidationError) { return .broadcast(try broadcast.prepared()) } catch { throw flagged(error) }
            }
            let notification = APNSLiveActivityNotification(
                event: event, contentState: state, timestamp: timestamp, topic: bundleID, staleDate: staleDate,
                relevanceScore: options.relevanceScore, alert: options.alert, priority: options.priority?.priority,
                expiration: try options.expirationValue ?? .none, collapseID: try options.collapseIDValue, apnsID: try options.apnsIDValue
            )
            let token = try options.deviceToken
            do throws(APNSValidationError) { return .token(try notification.prepared(), token) } catch { throw flagged(error) }
        }
    }
}

extension APNSCtl.Activity {
    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Start a Live Activity with a push-to-start token (needs --attributes-type, --attributes and an alert)."
        )

        @OptionGroup(title: "Credentials") var auth: AuthOptions
        @OptionGroup(title: "Endpoint") var endpoint: EndpointOptions
        @OptionGroup(title: "Live Activity") var options: ActivityOptions

        @Option(name: .customLong("attributes-type"), help: "The ActivityAttributes type's name in the app.")
        var attributesType: String?

        @Option(name: .long, help: ArgumentHelp("The attributes: a JSON object, or @file.", valueName: "json|@file"))
        var attributes: String?

        @Flag(name: .customLong("input-push-token"), help: "Ask the device for the new activity's update token.")
        var inputPushToken = false

        /// Rules between flags; run() checks them first, once the parser has refused unknown options.
        func check() throws {
            if self.options.channel != nil { throw ValidationError("A Live Activity starts with a push-to-start --token; --channel updates or ends one.") }
            if self.options.payload != nil {
                let content: [(String, Bool)] = [
                    ("--attributes-type", self.attributesType != nil), ("--attributes", self.attributes != nil),
                    ("--input-push-token", self.inputPushToken),
                ]
                try ActivityOptions.refuseBesidePayload(content.filter(\.1).map(\.0))
                return
            }
            if self.attributesType == nil { throw ValidationError("Missing --attributes-type: the ActivityAttributes type's name in the app.") }
            if self.attributes == nil { throw ValidationError("Missing --attributes: the activity's attributes, a JSON object or @file.") }
            if self.options.alertTitle == nil { throw ValidationError("Missing --alert-title: a push that starts a Live Activity must alert.") }
        }

        func run() async throws {
            try self.options.check()
            try self.check()
            try await runReportingFailures {
                if let file = try self.options.payloadFile(event: "start") {
                    try await APNSCtl.Activity.deliver(
                        try APNSCtl.Activity.prepare(file, self.options), options: self.options, auth: self.auth, endpoint: self.endpoint
                    )
                    return
                }
                let attributes = try ActivityOptions.jsonObject(self.attributes ?? "", flag: "--attributes")
                let notification = APNSLiveActivityStartNotification(
                    attributesType: self.attributesType ?? "", attributes: attributes, contentState: try self.options.state,
                    alert: self.options.alert!, timestamp: try self.options.timestampDate, topic: try self.options.bundleID,
                    staleDate: try self.options.staleDateValue, relevanceScore: self.options.relevanceScore,
                    inputPushToken: self.inputPushToken, priority: self.options.priority?.priority,
                    expiration: try self.options.expirationValue ?? .none, collapseID: try self.options.collapseIDValue,
                    apnsID: try self.options.apnsIDValue
                )
                let token = try self.options.deviceToken
                let prepared: APNSPreparedNotification
                do throws(APNSValidationError) { prepared = try notification.prepared() } catch {
                    let flag = error.code == .badPriority ? "--priority" : (error.field.contains("attributes") ? "--attributes" : "--content-state")
                    throw CLIFailure.badData(flag, error)
                }
                try await APNSCtl.Activity.deliver(.token(prepared, token), options: self.options, auth: self.auth, endpoint: self.endpoint)
            }
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Update a Live Activity's content state.")

        @OptionGroup(title: "Credentials") var auth: AuthOptions
        @OptionGroup(title: "Endpoint") var endpoint: EndpointOptions
        @OptionGroup(title: "Live Activity") var options: ActivityOptions

        func run() async throws {
            try self.options.check()
            try await runReportingFailures {
                let prepared = try APNSCtl.Activity.prepareEvent(.update, named: "update", self.options)
                try await APNSCtl.Activity.deliver(prepared, options: self.options, auth: self.auth, endpoint: self.endpoint)
            }
        }
    }

    struct End: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End a Live Activity, with its final content state.")

        @OptionGroup(title: "Credentials") var auth: AuthOptions
        @OptionGroup(title: "Endpoint") var endpoint: EndpointOptions
        @OptionGroup(title: "Live Activity") var options: ActivityOptions

        @Option(name: .customLong("dismissal-date"),
                help: ArgumentHelp("When to remove it from the Lock Screen: seconds since 1970 or ISO 8601 (0 or a past date: at once).",
                                   valueName: "date"))
        var dismissalDate: String?

        func run() async throws {
            try self.options.check()
            if self.options.payload != nil, self.dismissalDate != nil { try ActivityOptions.refuseBesidePayload(["--dismissal-date"]) }
            try await runReportingFailures {
                let dismissal = try self.dismissalDate.map { try ActivityOptions.date($0, flag: "--dismissal-date") }
                let prepared = try APNSCtl.Activity.prepareEvent(.end(dismissalDate: dismissal), named: "end", self.options)
                try await APNSCtl.Activity.deliver(prepared, options: self.options, auth: self.auth, endpoint: self.endpoint)
            }
        }
    }
}
