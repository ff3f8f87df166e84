import ArgumentParser
import ForgeAPNsCore

/// The headers and payload of one notification, as flags.
struct NotificationOptions: ParsableArguments {
    enum PushType: String, CaseIterable, ExpressibleByArgument {
        case alert, background, complication, controls, fileprovider, liveactivity, location, mdm, pushtotalk, voip,
            widgets

        var pushType: APNSPushType { APNSPushType(rawValue: self.rawValue)! }
    }

    enum Priority: String, CaseIterable, ExpressibleByArgument {
        case immediately = "10", consideringDevicePower = "5", prioritizingDevicePower = "1"

        var priority: APNSPriority { try! APNSPriority(headerValue: self.rawValue) }
    }

    @Option(
        name: .long,
        help: ArgumentHelp("The app's bundle id (or APNS_TOPIC); the push type's suffix is added.", valueName: "bundle-id")
    )
    var topic: String?

    @Option(name: .customLong("push-type"), help: "The apns-push-type (alert when unset).")
    var pushType: PushType?

    @Option(name: .long, help: "The apns-priority: 10, 5 or 1 (background: 5 only).")
    var priority: Priority?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("The apns-expiration: 0, or seconds since 1970.", valueName: "seconds")
    )
    var expiration: String?

    @Option(name: .customLong("collapse-id"), help: "The apns-collapse-id (at most 64 bytes).")
    var collapseID: String?

    @Option(name: .customLong("apns-id"), help: "The apns-id (a UUID).")
    var apnsID: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The JSON payload file, or - for standard input; a .apns file (simctl's format) gives its \"Simulator Target Bundle\" as --topic.",
            valueName: "path"
        )
    )
    var payload: String?

    private func topicText() throws -> String {
        if let topicText = EnvironmentFallback.value(self.topic, "APNS_TOPIC") { return topicText }
        if let bundle = try self.simulatorFile()?.targetBundle { return bundle }
        throw ValidationError("Missing --topic (or APNS_TOPIC): the app's bundle id.")
    }

    /// Whether `--payload` names a `.apns` file.
    var payloadIsSimulatorFile: Bool { self.payload.map { $0.lowercased().hasSuffix(".apns") } ?? false }

    /// `--payload` read as a `.apns` file, when it names one.
    /// - Throws: ``CLIFailure`` (65) naming the file and the rule it breaks, 66 for a missing file.
    func simulatorFile() throws -> APNSSimulatorFile? {
        guard self.payloadIsSimulatorFile, let path = self.payload else { return nil }
        return try InputFiles.simulatorFile(path, flag: "--payload")
    }

    @OptionGroup(title: "Payload from flags (instead of --payload; push type alert)") var built: PayloadFlags

    /// Whether a payload for every token was given: `--payload`, or flags that build one.
    var hasSharedPayload: Bool { self.payload != nil || self.built.isPresent }

    private func payloadBytes() throws -> [UInt8] {
        guard let payloadPath = self.payload else {
            throw ValidationError("Missing --payload: a JSON file, or - for standard input (or --title, --body… to build one).")
        }
        if let file = try self.simulatorFile() { return file.payload }
        return InputFiles.withoutByteOrderMark(try InputFiles.read(payloadPath, flag: "--payload"))
    }

    private func parsedExpiration() throws -> APNSExpiration? {
        guard let text = self.expiration else { return nil }
        do { return try APNSExpiration(headerValue: text) } catch { throw CLIFailure.badData("--expiration", error) }
    }

    private func parsedAPNSID() throws -> APNSID? {
        guard let text = self.apnsID else { return nil }
        do { return try APNSID(text) } catch { throw CLIFailure.badData("--apns-id", error, value: text) }
    }

    /// The header flags, validated once; a tokens file's lines with their own payload reuse them.
    struct Headers: Sendable {
        var topicText: String
        var pushType: APNSPushType
        var topic: APNSTopic
        var priority: APNSPriority?
        var expiration: APNSExpiration
        var collapseID: APNSCollapseID?
        var apnsID: APNSID?

        /// `body` with these headers.
        /// - Throws: ``APNSValidationError`` for a body that breaks a rule (size, shape, priority).
        func prepare(body: [UInt8]) throws(APNSValidationError) -> APNSPreparedNotification {
            try APNSPayloadNotification(
                pushType: self.pushType, topic: self.topic, json: body, priority: self.priority, expiration: self.expiration,
                collapseID: self.collapseID, apnsID: self.apnsID
            ).prepared()
        }

        /// `payload` (a JSON object) with these headers.
        func prepare(payload: CodableJSON) throws(APNSValidationError) -> APNSPreparedNotification {
            try APNSPayloadNotification(
                pushType: self.pushType, topic: self.topic, payload: payload, priority: self.priority, expiration: self.expiration,
                collapseID: self.collapseID, apnsID: self.apnsID
            ).prepared()
        }
    }

    /// Validates the header flags.
    /// - Throws: `ValidationError` (64) for a missing topic, ``CLIFailure`` (65) for bad values.
    func headers() throws -> Headers {
        let topicText = try self.topicText()
        let pushType = (self.pushType ?? .alert).pushType
        if self.payloadIsSimulatorFile, !APNSSimulatorFile.pushTypes.contains(pushType), let path = self.payload {
            let types = APNSSimulatorFile.pushTypes.map(\.description).joined(separator: ", ")
            throw CLIFailure(
                message: "--payload '\(path)': a .apns file holds a notification to an app, as simctl pushes it: push type \(types), not \(pushType)",
                exitCode: CLIExit.dataError
            )
        }
        let topic: APNSTopic
        do { topic = try APNSTopic(topicText, pushType: pushType) } catch {
            throw CLIFailure.badData("--topic", error, value: topicText)
        }
        let expiration = try self.parsedExpiration() ?? APNSExpiration.none
        var collapseID: APNSCollapseID?
        if let text = self.collapseID {
            do { collapseID = try APNSCollapseID(text) } catch {
                throw CLIFailure.badData("--collapse-id", error)
            }
        }
        return Headers(
            topicText: topicText, pushType: pushType, topic: topic, priority: self.priority?.priority, expiration: expiration,
            collapseID: collapseID, apnsID: try self.parsedAPNSID()
        )
    }

    /// Reads the payload (or builds it from flags) and validates every header and the body.
    /// - Throws: `ValidationError` (64) for a missing flag, ``CLIFailure`` (65, 66) for bad data.
    func prepare() throws -> APNSPreparedNotification {
        try self.prepare(self.headers())
    }

    /// The shared payload with already validated headers.
    func prepare(_ headers: Headers) throws -> APNSPreparedNotification {
        if self.built.isPresent {
            guard self.payload == nil else {
                throw ValidationError("Give --payload or build the payload with flags (--title, --body, --data…), not both.")
            }
            guard headers.pushType == .alert || headers.pushType == .background else {
                throw ValidationError("--title, --body, --data… build alert and background payloads; for push type \(headers.pushType) give --payload.")
            }
            let bundleID: APNSBundleID
            do { bundleID = try APNSBundleID(headers.topicText) } catch {
                throw CLIFailure.badData("--topic", error, value: headers.topicText)
            }
            if headers.pushType == .background {
                return try self.prepareBackground(headers, bundleID: bundleID)
            }
            let notification = try self.built.alert(
                topic: bundleID, priority: headers.priority, expiration: headers.expiration, collapseID: headers.collapseID,
                apnsID: headers.apnsID
            )
            do { return try notification.prepared() } catch { throw CLIFailure.badData(self.flag(blamedFor: error), error) }
        }
        let body = try self.payloadBytes()
        do {
            return try headers.prepare(body: body)
        } catch {
            if error.code == .badPriority { throw CLIFailure.badData("--priority", error) }
            throw CLIFailure.badData("--payload", error, value: self.payload)
        }
    }

    /// The flag whose value broke the rule of a payload built from flags; for a payload too large,
    /// the flag that holds the most of it (`--body` for a 5,000-byte body, not `--data`).
    func flag(blamedFor error: APNSValidationError) -> String {
        if error.code == .payloadTooLarge {
            let sizes = [
                ("--title", self.built.title?.utf8.count ?? 0), ("--subtitle", self.built.subtitle?.utf8.count ?? 0),
                ("--body", self.built.body?.utf8.count ?? 0), ("--data", self.built.data.reduce(0) { $0 + $1.utf8.count }),
            ]
            if let largest = sizes.max(by: { $0.1 < $1.1 }), largest.1 > 0 { return largest.0 }
        }
        switch error.field {
        case "apns-priority": return "--priority"
        case "aps.badge": return "--badge"
        case "aps.relevance-score": return "--relevance-score"
        case "aps.interruption-level": return "--interruption-level"
        case let field where field.hasPrefix("aps.sound"): return "--sound"
        case let field where field.hasPrefix("aps.alert"): return "--title/--subtitle/--body"
        case let field where field.hasPrefix("payload"): return "--data"
        default: return "--title/--body/--data"
        }
    }

    /// A background push from flags: `content-available` (implied) and the `--data` keys; the
    /// alert flags do not apply, and its priority is 5.
    private func prepareBackground(_ headers: Headers, bundleID: APNSBundleID) throws -> APNSPreparedNotification {
        let flags = self.built
        if flags.title != nil || flags.subtitle != nil || flags.body != nil || flags.badge != nil || flags.sound != nil
            || flags.threadID != nil || flags.category != nil || flags.mutableContent || flags.interruptionLevel != nil
            || flags.relevanceScore != nil
        {
            throw ValidationError("A background push carries no alert, badge or sound: give only --content-available and --data KEY=JSON.")
        }
        if let priority = headers.priority, priority != .consideringDevicePower {
            throw CLIFailure(message: "--priority: a background push must have apns-priority 5", exitCode: CLIExit.dataError)
        }
        let notification = APNSBackgroundNotification(
            topic: bundleID, expiration: headers.expiration, collapseID: headers.collapseID, apnsID: headers.apnsID,
            payload: try flags.customKeys()
        )
        do { return try notification.prepared() } catch { throw CLIFailure.badData("--data", error) }
    }

    /// Reads the payload and validates a broadcast to `channel` (`--channel-id`): push type
    /// liveactivity, priority 10 unless given, expiration 0 unless given.
    func prepareBroadcast(channel text: String) throws -> APNSPreparedBroadcast {
        if let pushType = self.pushType, pushType != .liveactivity {
            throw ValidationError("--channel-id sends a broadcast, whose push type is liveactivity (got --push-type \(pushType.rawValue)).")
        }
        if self.collapseID != nil {
            throw ValidationError("--collapse-id does not apply to broadcasts.")
        }
        let topicText = try self.topicText()
        let bundleID: APNSBundleID
        do { bundleID = try APNSBundleID(topicText) } catch { throw CLIFailure.badData("--topic", error, value: topicText) }
        let channelID: APNSChannelID
        do { channelID = try APNSChannelID(text) } catch { throw CLIFailure.badData("--channel-id", error, value: text) }
        let expiration = try self.parsedExpiration() ?? .immediately
        let requestID = try self.parsedAPNSID()
        let body = try self.payloadBytes()
        do {
            return try APNSPreparedBroadcast(
                bundleID: bundleID, channelID: channelID, priority: self.priority?.priority ?? .immediately,
                expiration: expiration, requestID: requestID, body: body
            )
        } catch {
            if error.code == .badPriority { throw CLIFailure.badData("--priority", error) }
            throw CLIFailure.badData("--payload", error, value: self.payload)
        }
    }
}
