import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeLoopback
import ForgeNotificationTypes
import ForgeSilentPush
import ForgeSimulatedDevice
import ForgeVisiblePush
import Foundation
import Logging

extension APNSCtl {
    /// `apnsctl demo`: the client, the local APNs server and a simulated iPhone in one process,
    /// over TLS on loopback, with a readable timeline of what each of them did.
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "demo",
            abstract: "Run the whole push path in-process on loopback: no Apple account, no network.",
            discussion: """
                Starts the local APNs server (TLS with keys-example/ certificates) and a simulated device \
                with one app (two silent-push handlers, a visible-push handler, a notification service \
                extension, a Live Activity type), then sends with the real client: an alert the user taps, \
                a background push, a mutable-content alert the extension rewrites, a Live Activity start, \
                two updates (one stale) and an end, and a bulk send where every 100th token is unregistered.

                Prints a timeline: what the server judged, what the device and the app's handlers did, \
                each line with its offset in milliseconds; then the bulk summary. Exit 0 when every step \
                did what the demo expects; otherwise what differed goes to stderr and the exit code is 70.
                """
        )

        @Option(help: "How many tokens the bulk send addresses (every 100th is unregistered).")
        var tokens: Int = 10_000

        func validate() throws {
            guard (1...1_000_000).contains(self.tokens) else { throw ValidationError("--tokens must be 1...1000000 (got \(self.tokens)).") }
        }

        func run() async throws {
            var failed = false
            try await runReportingFailures {
                failed = try await DemoRun(tokens: self.tokens).run() > 0
            }
            if failed { throw ExitCode(CLIExit.software) }
        }
    }
}

/// One run of the demo: the setup, the five steps and the checks.
private struct DemoRun {
    /// Every `unregisteredEvery`-th bulk token is unregistered on the server.
    static let unregisteredEvery = 100

    let tokens: Int
    let topic: APNSBundleID
    let deviceToken: DeviceToken
    let pushToStartToken: DeviceToken

    init(tokens: Int) throws {
        self.tokens = tokens
        self.topic = try APNSBundleID(DemoApp.bundleID)
        self.deviceToken = try DeviceToken(DemoTokens.token(seed: 0xD3_71CE, index: 0))
        self.pushToStartToken = try DeviceToken(DemoTokens.token(seed: 0x57A2_7000, index: 0))
    }

    /// Runs everything; returns how many checks failed.
    func run() async throws -> Int {
        let ca = try KeysExample.path("ca.pem")
        let tls = LoopbackMode.TLS.files(chain: try KeysExample.path("server.pem"), key: try KeysExample.path("server.key"), ca: ca)
        let environment = LocalAPNsConfiguration.Environment.sandbox
        let recorder = DemoRecorder()
        // Limits only as a safety net: the app's handlers and extension complete at once.
        let device = SimulatedDevice(backgroundBudget: .seconds(10))
        device.install(DemoApp.make(deviceToken: self.deviceToken.hexString, pushToStartToken: self.pushToStartToken.hexString,
                                    recorder: recorder))
        let start = Date()
        let loopback: LoopbackMode
        do {
            // No history: the bulk send's pushes only pass through to the device.
            loopback = try LoopbackMode(
                devices: [device], tls: tls, environment: environment, configuration: LocalAPNsConfiguration(keepsHistory: false),
                observer: { recorder.judged($0) }
            )
        } catch {
            throw CLIFailure(message: "cannot start the local APNs server: \(error)", exitCode: CLIExit.unavailable)
        }
        let report = DemoReport(start: start, recorder: recorder, device: device)
        let cwd = FileManager.default.currentDirectoryPath + "/"
        Output.result("apnsctl demo: local APNs (\(environment.rawValue)) on localhost:\(loopback.server.port) over TLS, "
                      + "trusting \(ca.hasPrefix(cwd) ? String(ca.dropFirst(cwd.count)) : ca)")
        for app in device.apps {
            Output.result("device: \(app.bundleID) (\(app.state)), token \(app.deviceTokens[.sandbox]?.prefix(8) ?? "none")…; "
                          + "visible: \(app.visibleRouter.handlerIDs.joined(separator: ", ")); "
                          + "silent: \(app.silentRouter.handlerIDs.joined(separator: ", ")); "
                          + "service extension: \(app.serviceExtension == nil ? "none" : "yes"); "
                          + "Live Activity push-to-start token \(app.pushToStartToken?.prefix(8) ?? "none")…")
        }
        var bulk: BulkOutcome?
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await loopback.run() }
            do {
                var configuration = loopback.clientConfiguration
                // The timeline reports what the client did; its own log lines would only repeat it on stderr.
                configuration.logger = Logger(label: "apnsctl.demo", factory: { _ in SwiftLogNoOpLogHandler() })
                try await withAPNSClient(configuration: configuration) { client in
                    await self.alertAndTap(client, report: report)
                    await self.background(client, report: report)
                    await self.serviceExtension(client, report: report)
                    await self.liveActivity(client, report: report)
                    bulk = await self.bulk(client, loopback: loopback, report: report)
                }
            } catch {
                report.check(false, "the client ran", expected: "a client", got: "\(error)")
            }
            // Every accepted push reaches the device before run() returns.
            await loopback.shutdown()
        }
        if let bulk { self.finishBulk(bulk, report: report) }
        Output.result("")
        if report.failures.isEmpty {
            Output.result("demo: all \(report.passed) checks passed")
        } else {
            Output.result("demo: \(report.failures.count) of \(report.passed + report.failures.count) checks FAILED (details on stderr)")
        }
        return report.failures.count
    }

    // MARK: 1. An alert, tapped

    private func alertAndTap(_ client: APNSClient, report: DemoReport) async {
        let mark = report.begin("1. Alert -> shown -> the user taps it -> the visible-push handler")
        do {
            let alert = APNSAlertNotification(
                alert: APNSAlert(title: "Alice", body: "Lunch at noon?"), topic: self.topic, threadID: "chat-alice",
                payload: MessagePayload(messageID: "M-1001")
            )
            let sent = try await client.send(alert, to: self.deviceToken)
            try await report.device.awaitEvent { event in
                if case .addedToNotificationList(_, let identifier, _) = event { return identifier == sent.apnsID }
                return false
            }
            let ran = try await report.device.tap(sent.apnsID, in: DemoApp.bundleID)
            let notes = Self.notes(report, since: mark, handler: OpenMessageHandler.handlerID)
            report.check(
                ran == [OpenMessageHandler.handlerID] && notes.contains { $0.contains("M-1001") },
                "tap handled by \(OpenMessageHandler.handlerID) with message M-1001",
                expected: "[\(OpenMessageHandler.handlerID)] noting M-1001", got: "\(ran) noting \(notes)"
            )
        } catch {
            report.check(false, "step 1 completed", expected: "no error", got: "\(error)")
        }
        report.finish(mark)
    }

    // MARK: 2. A background push, two silent handlers

    private func background(_ client: APNSClient, report: DemoReport) async {
        let mark = report.begin("2. Background push -> both silent-push handlers -> one combined result")
        do {
            let push = APNSBackgroundNotification(topic: self.topic, payload: InboxSyncPayload(newMessages: 3))
            let sent = try await client.send(push, to: self.deviceToken)
            let entry = try await report.device.awaitEvent { event in
                if case .backgroundCompleted(_, let apnsID, _) = event { return apnsID == sent.apnsID }
                if case .backgroundBudgetExceeded(_, let apnsID) = event { return apnsID == sent.apnsID }
                return false
            }
            var result: BackgroundFetchResult?
            if case .backgroundCompleted(_, _, let completed) = entry.event { result = completed }
            let ran = Set([InboxSyncHandler.handlerID, BadgeCountHandler.handlerID].filter {
                !Self.notes(report, since: mark, handler: $0).isEmpty
            })
            report.check(
                result == .newData && ran.count == 2,
                "silent handlers \(InboxSyncHandler.handlerID) + \(BadgeCountHandler.handlerID) returned newData",
                expected: "both handlers, newData", got: "\(ran.sorted()), \(result.map { "\($0)" } ?? "no completion")"
            )
        } catch {
            report.check(false, "step 2 completed", expected: "no error", got: "\(error)")
        }
        report.finish(mark)
    }

    // MARK: 3. A mutable-content alert, rewritten by the service extension

    private func serviceExtension(_ client: APNSClient, report: DemoReport) async {
        let mark = report.begin("3. Mutable-content alert -> the service extension rewrites it -> shown")
        do {
            let message = SealedMessage(sender: "Bob", text: "The keys are under the mat")
            let alert = APNSAlertNotification(
                alert: APNSAlert(title: "New message", body: "(encrypted)"), topic: self.topic, mutableContent: true,
                payload: message
            )
            let sent = try await client.send(alert, to: self.deviceToken)
            let shown = try await report.device.awaitEvent { event in
                if case .addedToNotificationList(_, let identifier, _) = event { return identifier == sent.apnsID }
                if case .notShown(_, let identifier, _) = event { return identifier == sent.apnsID }
                return false
            }
            let completed = report.device.timeline.lazy.compactMap { entry -> (NotificationContent, Bool)? in
                if case .serviceExtensionCompleted(_, let identifier, let content, let expired) = entry.event, identifier == sent.apnsID {
                    return (content, expired)
                }
                return nil
            }.first
            var shownContent: NotificationContent?
            if case .addedToNotificationList(_, _, let content) = shown.event { shownContent = content }
            let expectedTitle = SealedMessage.title(sender: message.sender)
            let expectedBody = SealedMessage.unseal(message.sealed) ?? ""
            report.check(
                completed?.1 == false && completed?.0 == shownContent && shownContent?.title == expectedTitle
                    && shownContent?.body == expectedBody,
                "rewritten title \"\(expectedTitle)\" shown, as the extension completed it",
                expected: "\"\(expectedTitle)\" \"\(expectedBody)\" completed in time",
                got: "shown \(shownContent.map { "\"\($0.title)\" \"\($0.body)\"" } ?? "nothing"), "
                    + "extension \(completed.map { "\"\($0.0.title)\"\($0.1 ? " (expired)" : "")" } ?? "not run")"
            )
        } catch {
            report.check(false, "step 3 completed", expected: "no error", got: "\(error)")
        }
        report.finish(mark)
    }

    // MARK: 4. A Live Activity: start, update, a stale update, end

    private func liveActivity(_ client: APNSClient, report: DemoReport) async {
        let mark = report.begin("4. Live Activity: push-to-start, update, a stale update, end")
        do {
            // Whole seconds: `timestamp` goes out in seconds.
            let t0 = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let states = [
                (t0, DeliveryAttributes.ContentState(status: "preparing", etaMinutes: 25)),
                (t0 + 60, DeliveryAttributes.ContentState(status: "on the way", etaMinutes: 10)),
                (t0 + 30, DeliveryAttributes.ContentState(status: "preparing", etaMinutes: 20)),  // older: stale
                (t0 + 120, DeliveryAttributes.ContentState(status: "delivered", etaMinutes: 0)),
            ]
            _ = try await client.send(
                APNSLiveActivityStartNotification(
                    attributesType: DeliveryAttributes.typeName, attributes: DeliveryAttributes(orderNumber: "4711"),
                    contentState: states[0].1, alert: APNSLiveActivityAlert(title: "Order 4711", body: "Preparing your order"),
                    timestamp: states[0].0, topic: self.topic
                ),
                to: self.pushToStartToken
            )
            let started = try await report.device.awaitEvent { event in
                if case .liveActivityStarted = event { return true }
                if case .liveActivityPushRejected = event { return true }
                return false
            }
            guard case .liveActivityStarted(let activityID, _, _, let updateToken) = started.event else {
                throw DemoStepFailure(description: "no Live Activity started: \(started.event)")
            }
            let token = try DeviceToken(updateToken)
            for (timestamp, state) in states[1...2] {
                _ = try await client.send(
                    APNSLiveActivityNotification(event: .update, contentState: state, timestamp: timestamp, topic: self.topic), to: token
                )
            }
            _ = try await client.send(
                APNSLiveActivityNotification(
                    event: .end(dismissalDate: states[3].0 + 3600), contentState: states[3].1, timestamp: states[3].0, topic: self.topic
                ),
                to: token
            )
            try await report.device.awaitEvent { event in
                if case .liveActivityEnded(let id, _) = event { return id == activityID }
                return false
            }
            let ignored = report.device.timeline.dropFirst(mark.device).contains { entry in
                if case .liveActivityPushIgnored(let id, _) = entry.event { return id == activityID }
                return false
            }
            let activity = report.device.liveActivity(activityID)
            let history = activity?.history.compactMap { $0.contentState["status"]?.stringValue } ?? []
            let expected = [states[0], states[1], states[3]].map(\.1.status)
            report.check(
                ignored && history == expected,
                "stale update ignored; applied states \(expected.joined(separator: " -> "))",
                expected: "one ignored push, \(expected)", got: "\(ignored ? "ignored" : "not ignored"), \(history)"
            )
            report.check(
                activity?.phase == .ended, "Live Activity ended", expected: "ended", got: activity.map { "\($0.phase)" } ?? "no activity"
            )
        } catch {
            report.check(false, "step 4 completed", expected: "no error", got: "\(error)")
        }
        report.finish(mark)
    }

    // MARK: 5. Bulk

    /// What the bulk send gave, kept until the device has received every push.
    struct BulkOutcome {
        var mark: DemoReport.Mark
        var summary: APNSBulkSummary?
        var verdicts = 0
        var duplicates = 0
        var unexpected: [String] = []
        var finished = Date()
        var error: String?
    }

    private func bulk(_ client: APNSClient, loopback: LoopbackMode, report: DemoReport) async -> BulkOutcome {
        let title = "5. Bulk send: \(self.tokens) tokens, every \(Self.unregisteredEvery)th unregistered on the server"
        var outcome = BulkOutcome(mark: report.begin(title))
        // The server learned three days ago that these tokens are gone (410 carries that date, in ms).
        let unregisteredAt = Date(timeIntervalSince1970: ((Date().timeIntervalSince1970 - 3 * 86_400) * 1000).rounded(.down) / 1000)
        var tokens: [DeviceToken] = []
        tokens.reserveCapacity(self.tokens)
        do {
            for index in 0..<self.tokens {
                let token = try DeviceToken(DemoTokens.token(seed: 0xB0_1C, index: index))
                let state: LocalAPNsTokenRecord.State = Self.isUnregistered(index) ? .unregistered(unregisteredAt) : .active
                loopback.server.register(token: token.hexString, LocalAPNsTokenRecord(bundleID: DemoApp.bundleID, environment: .sandbox, state: state))
                tokens.append(token)
            }
            let digest = APNSAlertNotification(alert: APNSAlert(title: "Weekly digest", body: "5 new posts in your groups"), topic: self.topic)
            report.recorder.startCounting()
            let send = try client.sendBulk(digest, to: tokens)
            var seen = [Bool](repeating: false, count: self.tokens)
            for await verdict in send {
                outcome.verdicts += 1
                if seen[verdict.index] { outcome.duplicates += 1 }
                seen[verdict.index] = true
                let expectedGone = Self.isUnregistered(verdict.index)
                switch verdict.outcome {
                case .accepted where !expectedGone:
                    break
                case .rejected(let error)
                where expectedGone && error.status == 410 && error.reason == .unregistered
                    && error.timestamp.map { abs($0.timeIntervalSince(unregisteredAt)) < 0.001 } == true:
                    break
                default:
                    if outcome.unexpected.count < 5 { outcome.unexpected.append("token #\(verdict.index): \(verdict.outcome)") }
                }
            }
            outcome.finished = Date()
            if send.summary == nil { outcome.summary = await send.summary() } else { outcome.summary = send.summary }
        } catch {
            outcome.error = "\(error)"
        }
        return outcome
    }

    /// Prints the bulk section once the device has received every push and checks the counts.
    private func finishBulk(_ outcome: BulkOutcome, report: DemoReport) {
        var extra: [(date: Date, source: String, text: String)] = []
        let tally = report.recorder.bulkTally
        if let first = tally.firstRejection, case .verdict(let verdict) = first.kind {
            extra.append((first.date, "server", "first rejection: " + DemoReport.describe(verdict)))
        }
        let judged = tally.judged.sorted { $0.key < $1.key }.map { "\($0.value) x \($0.key)" }.joined(separator: ", ")
        extra.append((outcome.finished, "server", "judged \(tally.judged.values.reduce(0, +)) requests: \(judged)"))
        var received = 0, dropped = 0, last = outcome.finished
        for entry in report.device.timeline.dropFirst(outcome.mark.device) {
            switch entry.event {
            case .pushReceived: received += 1
            case .droppedUnknownToken: dropped += 1
            default: continue
            }
            last = entry.date
        }
        extra.append((last, "device", "\(received) pushes received, \(dropped) dropped: the bulk's tokens belong to no device here, so none is delivered"))
        if let summary = outcome.summary {
            extra.append((outcome.finished, "client", "bulk summary: \(summary)"))
            let seconds = Double(summary.duration.components.seconds) + Double(summary.duration.components.attoseconds) / 1e18
            let rate = seconds > 0 ? Int((Double(summary.total) / seconds).rounded()) : 0
            extra.append((outcome.finished, "client", "rate: \(rate) notifications/s, elapsed \(Int((seconds * 1000).rounded())) ms"))
        }
        let gone = (0..<self.tokens).count(where: Self.isUnregistered)
        let summary = outcome.summary
        report.check(
            outcome.error == nil && summary?.accepted == self.tokens - gone && summary?.rejected == (gone > 0 ? ["Unregistered": gone] : [:])
                && summary?.failed == 0 && summary?.notSent == 0,
            "bulk: \(self.tokens - gone) accepted + \(gone) Unregistered",
            expected: "\(self.tokens - gone) accepted, \(gone) Unregistered", got: outcome.error ?? summary.map { "\($0)" } ?? "no summary"
        )
        report.check(
            outcome.verdicts == self.tokens && outcome.duplicates == 0 && outcome.unexpected.isEmpty,
            "every verdict consumed: one per token, each as the server registry says (410 with its timestamp)",
            expected: "\(self.tokens) verdicts, one per token", got: "\(outcome.verdicts) verdicts, \(outcome.duplicates) duplicates; "
                + outcome.unexpected.joined(separator: "; ")
        )
        report.check(
            received == 0 && tally.judged["200"] == summary?.accepted,
            "server accepted what the client counted as accepted; none reached this device (not its tokens)",
            expected: "\(summary?.accepted ?? -1), device 0", got: "server \(tally.judged["200"] ?? 0), device \(received)"
        )
        // The device's events of the bulk are summed up above, not listed.
        report.finish(outcome.mark, deviceEvents: false, extra: extra)
    }

    // MARK: Helpers

    private static func isUnregistered(_ index: Int) -> Bool { (index + 1) % Self.unregisteredEvery == 0 }

    /// What `handler` noted since `mark`.
    private static func notes(_ report: DemoReport, since mark: DemoReport.Mark, handler: String) -> [String] {
        report.recorder.entries(since: mark.recorder).compactMap { entry in
            if case .note(let name, let text) = entry.kind, name == handler { return text }
            return nil
        }
    }
}

/// A step could not go on (the device did something else than the step needs next).
private struct DemoStepFailure: Error, CustomStringConvertible {
    var description: String
}

/// Device tokens for the demo: 64 hex digits from a seed and an index (SplitMix64), so every run
/// addresses the same tokens.
enum DemoTokens {
    static func token(seed: UInt64, index: Int) -> String {
        // Four steps of the generator per index, so no two tokens share a word.
        var state = seed &+ UInt64(index) &* 4 &* 0x9E37_79B9_7F4A_7C15
        var text = ""
        for _ in 0..<4 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            let hex = String(z, radix: 16)
            text += String(repeating: "0", count: 16 - hex.count) + hex
        }
        return text
    }
}
