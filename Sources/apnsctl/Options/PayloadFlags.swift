import ArgumentParser
import ForgeAPNsCore

/// Flags that build an alert payload instead of reading one with `--payload`.
struct PayloadFlags: ParsableArguments {
    enum InterruptionLevel: String, CaseIterable, ExpressibleByArgument {
        case passive, active, timeSensitive = "time-sensitive", critical

        var level: APNSInterruptionLevel { APNSInterruptionLevel(rawValue: self.rawValue)! }
    }

    @Option(name: .long, help: "aps.alert.title.")
    var title: String?

    @Option(name: .long, help: "aps.alert.subtitle.")
    var subtitle: String?

    @Option(name: .long, help: "aps.alert.body.")
    var body: String?

    // Unconditional: `--badge -1` is a value to refuse by its rule, not a missing value and a flag.
    @Option(name: .long, parsing: .unconditional, help: "aps.badge: the number on the app icon (0 removes it).")
    var badge: Int?

    @Option(name: .long, help: ArgumentHelp("aps.sound: a sound file name, or default.", valueName: "name"))
    var sound: String?

    @Option(name: .customLong("thread-id"), help: "aps.thread-id: groups notifications.")
    var threadID: String?

    @Option(name: .long, help: "aps.category: a registered notification category.")
    var category: String?

    @Flag(name: .customLong("mutable-content"), help: "aps.mutable-content: 1 (route through the service extension).")
    var mutableContent = false

    @Flag(name: .customLong("content-available"), help: "aps.content-available: 1 (also wake the app).")
    var contentAvailable = false

    @Option(name: .customLong("interruption-level"), help: "aps.interruption-level.")
    var interruptionLevel: InterruptionLevel?

    @Option(name: .customLong("relevance-score"), parsing: .unconditional, help: "aps.relevance-score: 0 to 1.")
    var relevanceScore: Double?

    @Option(name: .customLong("data"), help: ArgumentHelp("A custom key beside aps, as KEY=JSON; repeatable.", valueName: "key=json"))
    var data: [String] = []

    /// Whether any of these flags was given.
    var isPresent: Bool {
        self.title != nil || self.subtitle != nil || self.body != nil || self.badge != nil || self.sound != nil
            || self.threadID != nil || self.category != nil || self.mutableContent || self.contentAvailable
            || self.interruptionLevel != nil || self.relevanceScore != nil || !self.data.isEmpty
    }

    /// The custom keys of `--data`, parsed.
    /// - Throws: ``CLIFailure`` (65) for an entry that is not KEY=JSON.
    func customKeys() throws -> CodableJSON {
        var keys: [String: CodableJSON] = [:]
        for entry in self.data {
            guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                throw CLIFailure(message: "--data '\(CLIFailure.abbreviate(entry))': expected KEY=JSON", exitCode: CLIExit.dataError)
            }
            let key = String(entry[..<equals])
            let text = entry[entry.index(after: equals)...]
            do {
                keys[key] = try CodableJSON(parsing: Array(text.utf8))
            } catch {
                throw CLIFailure(
                    message: "--data '\(CLIFailure.abbreviate(entry))': the value must be JSON: "
                        + "\(CodableJSON.describe(error)) (quote text: \(key)='\"text\"')",
                    exitCode: CLIExit.dataError
                )
            }
        }
        return .object(keys)
    }

    /// The alert notification these flags describe, with the header flags' values.
    func alert(
        topic: APNSBundleID, priority: APNSPriority?, expiration: APNSExpiration, collapseID: APNSCollapseID?, apnsID: APNSID?
    ) throws -> APNSAlertNotification<CodableJSON> {
        APNSAlertNotification(
            alert: APNSAlert(title: self.title, subtitle: self.subtitle, body: self.body),
            topic: topic,
            badge: self.badge,
            sound: self.sound.map { APNSSound.named($0) },
            threadID: self.threadID,
            category: self.category,
            mutableContent: self.mutableContent,
            contentAvailable: self.contentAvailable,
            interruptionLevel: self.interruptionLevel?.level,
            relevanceScore: self.relevanceScore,
            priority: priority,
            expiration: expiration,
            collapseID: collapseID,
            apnsID: apnsID,
            payload: try self.customKeys()
        )
    }
}
