internal import ForgeAPNs
internal import ForgeAPNsCore
internal import ForgeLoopback
internal import ForgeNotificationTypes
internal import ForgeSimulatedDevice
internal import Foundation

/// The scenarios' steps: each sends with the real client, waits for the device's events (never
/// for time), checks what it expects and finishes its section.
struct ScenarioSteps {
    let tokens: ScenarioTokens
    let bulkTokens: Int
    let sections: SectionBuilder
    let loopback: LoopbackMode
    var topic: APNSBundleID { get throws { try APNSBundleID(ChatApp.bundleID) } }
    var device: SimulatedDevice { self.sections.device }

    // MARK: 1. An alert, tapped

    func alertAndTap(_ client: APNSClient) async {
        let mark = self.sections.begin("1. Alert -> shown -> the user taps it -> the visible-push handler")
        do {
            let alert = APNSAlertNotification(
                alert: APNSAlert(title: "Alice", body: "Lunch at noon?"), topic: try self.topic, threadID: "chat-alice",
                payload: MessagePayload(messageID: "M-1001")
            )
            let sent = try await client.send(alert, to: self.tokens.device)
            try await self.device.awaitEvent { event in
                if case .addedToNotificationList(_, let identifier, _) = event { return identifier == sent.apnsID }
                return false
            }
            let ran = try await self.device.tap(sent.apnsID, in: ChatApp.bundleID)
            let notes = self.notes(since: mark, handler: OpenMessageHandler.handlerID)
            self.sections.check(
                ran == [OpenMessageHandler.handlerID] && notes.contains { $0.contains("M-1001") },
                "tap handled by \(OpenMessageHandler.handlerID) with message M-1001",
                expected: "[\(OpenMessageHandler.handlerID)] noting M-1001", got: "\(ran) noting \(notes)"
            )
        } catch {
            self.sections.check(false, "step 1 completed", expected: "no error", got: "\(error)")
        }
        self.sections.finish(mark)
    }

    // MARK: 2. A background push, two silent handlers

    func background(_ client: APNSClient) async {
        let mark = self.sections.begin("2. Background push -> both silent-push handlers -> one combined result")
        do {
            let push = APNSBackgroundNotification(topic: try self.topic, payload: InboxSyncPayload(newMessages: 3))
            let sent = try await client.send(push, to: self.tokens.device)
            let entry = try await self.device.awaitEvent { event in
                if case .backgroundCompleted(_, let apnsID, _) = event { return apnsID == sent.apnsID }
                if case .backgroundBudgetExceeded(_, let apnsID) = event { return apnsID == sent.apnsID }
                return false
            }
            var result: BackgroundFetchResult?
            if case .backgroundCompleted(_, _, let completed) = entry.event { result = completed }
            let ran = Set([InboxSyncHandler.handlerID, BadgeCountHandler.handlerID].filter {
                !self.notes(since: mark, handler: $0).isEmpty
            })
            self.sections.check(
                result == .newData && ran.count == 2,
                "silent handlers \(InboxSyncHandler.handlerID) + \(BadgeCountHandler.handlerID) returned newData",
                expected: "both handlers, newData", got: "\(ran.sorted()), \(result.map { "\($0)" } ?? "no completion")"
            )
        } catch {
            self.sections.check(false, "step 2 completed", expected: "no error", got: "\(error)")
        }
        self.sections.finish(mark)
    }

    // MARK: 3. A mutable-content alert, rewritten by the service extension

    func serviceExtension(_ client: APNSClient) async {
        let mark = self.sections.begin("3. Mutable-content alert -> the service extension rewrites it -> shown")
        do {
            let message = SealedMessage(sender: "Bob", text: "The keys are under the mat")
            let alert = APNSAlertNotification(
                alert: APNSAlert(title: "New message", body: "(encrypted)"), topic: try self.topic, mutableContent: true,
                payload: message
            )
            let sent = try await client.send(alert, to: self.tokens.device)
            let shown = try await self.device.awaitEvent { event in
                if case .addedToNotificationList(_, let identifier, _) = event { return identifier == sent.apnsID }
                if case .notShown(_, let identifier, _) = event { return identifier == sent.apnsID }
                return false
            }
            let completed = self.device.timeline.lazy.compactMap { entry -> (NotificationContent, Bool)? in
                if case .serviceExtensionCompleted(_, let identifier, let content, let expired) = entry.event, identifier == sent.apnsID {
                    return (content, expired)
                }
                return nil
            }.first
            var shownContent: NotificationContent?
            if case .addedToNotificationList(_, _, let content) = shown.event { shownContent = content }
            let expectedTitle = SealedMessage.title(sender: message.sender)
            let expectedBody = SealedMessage.unseal(message.sealed) ?? ""
            self.sections.check(
                completed?.1 == false && completed?.0 == shownContent && shownContent?.title == expectedTitle
                    && shownContent?.body == expectedBody,
                "rewritten title \"\(expectedTitle)\" shown, as the extension completed it",
                expected: "\"\(expectedTitle)\" \"\(expectedBody)\" completed in time",
                got: "shown \(shownContent.map { "\"\($0.title)\" \"\($0.body)\"" } ?? "nothing"), "
                    + "extension \(completed.map { "\"\($0.0.title)\"\($0.1 ? " (expired)" : "")" } ?? "not run")"
            )
        } catch {
            self.sections.check(false, "step 3 completed", expected: "no error", got: "\(error)")
        }
        self.sections.finish(mark)
    }

    // MARK: 4. A Live Activity: start, update, a stale update, end

    func liveActivity(_ client: APNSClient) async {
        let mark = self.sections.begin("4. Live Activity: push-to-start, update, a stale update, end")
        do {
            // Whole seconds: `timestamp` goes out in seconds.
            let t0 = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let states = [
                (t0, DeliveryAttributes.ContentState(status: "preparing", etaMinutes: 25)),
                (t0 + 60, DeliveryAttributes.ContentState(status: "on the way", etaMinutes: 10)),
                (t0 + 30, DeliveryAttributes.ContentState(status: "preparing", etaMinutes: 20)),  // older: stale
                (t0 + 120, DeliveryAttributes.ContentState(status: "delivered", etaMinutes: 0)),
            ]
            let (activityID, updateToken) = try await self.start(
                client, order: "4711", state: states[0].1, timestamp: states[0].0, channel: nil
            )
            let token = try DeviceToken(updateToken)
            for (timestamp, state) in states[1...2] {
                _ = try await client.send(
                    APNSLiveActivityNotification(event: .update, contentState: state, timestamp: timestamp, topic: try self.topic),
                    to: token
                )
            }
            _ = try await client.send(
                APNSLiveActivityNotification(
                    event: .end(dismissalDate: states[3].0 + 3600), contentState: states[3].1, timestamp: states[3].0,
                    topic: try self.topic
                ),
                to: token
            )
            try await self.device.awaitEvent { event in
                if case .liveActivityEnded(let id, _) = event { return id == activityID }
                return false
            }
            self.checkHistory(of: activityID, since: mark, expected: [states[0], states[1], states[3]].map(\.1.status))
            let activity = self.device.liveActivity(activityID)
            self.sections.check(
                activity?.phase == .ended, "Live Activity ended", expected: "ended", got: activity.map { "\($0.phase)" } ?? "no activity"
            )
        } catch {
            self.sections.check(false, "step 4 completed", expected: "no error", got: "\(error)")
        }
        self.sections.finish(mark)
    }

    // MARK: 5. Launch from the terminated state

    func launchFromTerminated(_ client: APNSClient) async {
        let mark = self.sections.begin("5. App terminated -> alert tapped -> launched, the scene connects first, then the router")
        do {
            let app = try self.app()
            app.state = .notRunning  // the system terminated it
            let alert = APNSAlertNotification(
                alert: APNSAlert(title: "Carol", body: "Are you coming?"), topic: try self.topic, threadID: "chat-carol",
                payload: MessagePayload(messageID: "M-2002")
            )
            let sent = try await client.send(alert, to: self.tokens.device)
            try await self.device.awaitEvent { event in
                if case .addedToNotificationList(_, let identifier, _) = event { return identifier == sent.apnsID }
                return false
            }
            let ran = try await self.device.tap(sent.apnsID, in: ChatApp.bundleID)
            let notes = self.sections.recorder.entries(since: mark.recorder).compactMap { entry -> String? in
                if case .note(let handler, let text) = entry.kind { return "\(handler): \(text)" }
                return nil
            }
            let scene = notes.firstIndex { $0.hasPrefix("\(ChatAppDelegate.handlerID): ") && $0.contains("M-2002") }
            let opened = notes.firstIndex { $0.hasPrefix("\(OpenMessageHandler.handlerID): ") && $0.contains("M-2002") }
            self.sections.check(
                ran == [OpenMessageHandler.handlerID] && scene != nil && opened != nil && scene! < opened!,
                "the scene got the response first, then \(OpenMessageHandler.handlerID)",
                expected: "scene, then \(OpenMessageHandler.handlerID)", got: "\(notes)"
            )
            self.sections.check(
                opened.map { notes[$0].contains("app inactive") } == true && app.applicationState == .active,
                "didReceive ran with the app inactive; the app is active afterwards",
                expected: "inactive, then active", got: "\(opened.map { notes[$0] } ?? "no note"), now \(app.applicationState)"
            )
        } catch {
            self.sections.check(false, "step 5 completed", expected: "no error", got: "\(error)")
        }
        self.sections.finish(mark)
    }

    // MARK: 6. A broadcast to a channel-subscribed Live Activity

    func broadcast(_ client: APNSClient) async {
        let mark = self.sections.begin("6. Broadcast channel -> Live Activity subscribed at start -> update, a stale update")
        do {
            let channel = try await client.createChannel(bundleID: try self.topic, storagePolicy: .noMessageStored)
            let t0 = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let (activityID, _) = try await self.start(
                client, order: "4712", state: DeliveryAttributes.ContentState(status: "preparing", etaMinutes: 30), timestamp: t0,
                channel: channel
            )
            let updates = [
                (t0 + 60, DeliveryAttributes.ContentState(status: "on the way", etaMinutes: 12)),
                (t0 + 30, DeliveryAttributes.ContentState(status: "preparing", etaMinutes: 28)),  // older: stale
            ]
            for (timestamp, state) in updates {
                _ = try await client.send(
                    APNSBroadcastNotification(
                        channelID: channel, bundleID: try self.topic, event: .update, contentState: state, timestamp: timestamp
                    )
                )
            }
            try await self.device.awaitEvent { event in
                if case .liveActivityPushIgnored(let id, _) = event { return id == activityID }
                return false
            }
            let subscribed = self.device.liveActivity(activityID)?.channelID == channel.rawValue
            self.sections.check(
                subscribed, "the activity is subscribed to channel \(channel.rawValue)",
                expected: channel.rawValue, got: self.device.liveActivity(activityID)?.channelID ?? "no channel"
            )
            self.checkHistory(of: activityID, since: mark, expected: ["preparing", "on the way"])
        } catch {
            self.sections.check(false, "step 6 completed", expected: "no error", got: "\(error)")
        }
        self.sections.finish(mark)
    }

    // MARK: 8. Bulk

    /// What the bulk send gave, kept until the device has received every push.
    struct BulkOutcome {
        var mark: SectionBuilder.Mark
        var summary: APNSBulkSummary?
        var verdicts = 0
        var duplicates = 0
        var unexpected: [String] = []
        var finished = Date()
        var error: String?
    }

    func bulk(_ client: APNSClient) async -> BulkOutcome {
        let every = LoopbackScenarios.unregisteredEvery
        let title = "8. Bulk send: \(self.bulkTokens) tokens, every \(every)th unregistered on the server"
        var outcome = BulkOutcome(mark: self.sections.begin(title))
        // The server learned three days ago that these tokens are gone (410 carries that date, in ms).
        let unregisteredAt = Date(timeIntervalSince1970: ((Date().timeIntervalSince1970 - 3 * 86_400) * 1000).rounded(.down) / 1000)
        var tokens: [DeviceToken] = []
        tokens.reserveCapacity(self.bulkTokens)
        do {
            for index in 0..<self.bulkTokens {
                let token = try ScenarioTokens.bulk(index)
                let state: LocalAPNSTokenRecord.State = Self.isUnregistered(index) ? .unregistered(unregisteredAt) : .active
                self.loopback.server.register(
                    token: token.hexString, LocalAPNSTokenRecord(bundleID: ChatApp.bundleID, environment: .sandbox, state: state)
                )
                tokens.append(token)
            }
            let digest = APNSAlertNotification(
                alert: APNSAlert(title: "Weekly digest", body: "5 new posts in your groups"), topic: try self.topic
            )
            self.sections.recorder.startCounting()
            let send = try client.sendBulk(digest, to: tokens)
            var seen = [Bool](repeating: false, count: self.bulkTokens)
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

    /// Finishes the bulk section once every delivery is done: the counts, and that none of the
    /// bulk's pushes reached the device (no app on it owns those tokens).
    func finishBulk(_ outcome: BulkOutcome) {
        var extra: [ScenarioLine] = []
        let tally = self.sections.recorder.bulkTally
        if let first = tally.firstRejection, case .decision(let decision) = first.kind {
            extra.append(SectionBuilder.line(decision, date: first.date, prefix: "first rejection: "))
        }
        let judged = tally.judged.sorted { $0.key < $1.key }.map { "\($0.value) x \($0.key)" }.joined(separator: ", ")
        extra.append(ScenarioLine(.server, .server, date: outcome.finished, text: "judged \(tally.judged.values.reduce(0, +)) requests: \(judged)", outcome: .info))
        let received = self.device.timeline.dropFirst(outcome.mark.device).count { entry in
            if case .pushReceived = entry.event { return true }
            return false
        }
        // The local server hands an accepted push only to the simulated device that owns its token;
        // the bulk's tokens are made up, so no push of the bulk goes anywhere after its 200.
        let accepted = tally.judged["200", default: 0]
        extra.append(
            ScenarioLine(
                .server, .device, date: outcome.finished,
                text: "\(received) of the \(accepted) accepted pushes reached this simulated device: the bulk's tokens are made up "
                    + "and belong to no app on it, so the local server stops each after its 200 (real APNs would deliver it "
                    + "to the device that owns the token)",
                outcome: .dropped
            )
        )
        if let summary = outcome.summary {
            extra.append(ScenarioLine(.client, .client, date: outcome.finished, text: "bulk summary: \(summary)", outcome: .info))
            let seconds = Double(summary.duration.components.seconds) + Double(summary.duration.components.attoseconds) / 1e18
            let rate = seconds > 0 ? Int((Double(summary.total) / seconds).rounded()) : 0
            extra.append(
                ScenarioLine(
                    .client, .client, date: outcome.finished,
                    text: "rate: \(rate) notifications/s, elapsed \(Int((seconds * 1000).rounded())) ms\(Self.buildNote)", outcome: .info
                )
            )
        }
        let gone = (0..<self.bulkTokens).count(where: Self.isUnregistered)
        let summary = outcome.summary
        self.sections.check(
            outcome.error == nil && summary?.accepted == self.bulkTokens - gone
                && summary?.rejected == (gone > 0 ? ["Unregistered": gone] : [:]) && summary?.failed == 0 && summary?.notSent == 0,
            "bulk: \(self.bulkTokens - gone) accepted + \(gone) Unregistered",
            expected: "\(self.bulkTokens - gone) accepted, \(gone) Unregistered",
            got: outcome.error ?? summary.map { "\($0)" } ?? "no summary"
        )
        self.sections.check(
            outcome.verdicts == self.bulkTokens && outcome.duplicates == 0 && outcome.unexpected.isEmpty,
            "every verdict consumed: one per token, each as the server registry says (410 with its timestamp)",
            expected: "\(self.bulkTokens) verdicts, one per token",
            got: "\(outcome.verdicts) verdicts, \(outcome.duplicates) duplicates; " + outcome.unexpected.joined(separator: "; ")
        )
        self.sections.check(
            tally.judged["200"] == summary?.accepted && received == 0,
            "the server accepted what the client counted; tokens no device owns are not delivered",
            expected: "\(summary?.accepted ?? -1) accepted, 0 received", got: "server \(tally.judged["200"] ?? 0), device \(received)"
        )
        // The device's events of the bulk are summed up above, not listed.
        self.sections.finish(outcome.mark, deviceEvents: false, extra: extra)
    }

    // MARK: Helpers

    #if DEBUG
    /// A debug build sends several times slower than a release build: the rate says so.
    static let buildNote = " (a debug build, with the whole stack in one process; for real figures run "
        + "`swift run -c release apns-bench bulk --tokens 1000000 --latency 30ms`)"
    #else
    static let buildNote = " (a release build, with the whole stack in one process; `apns-bench` measures the client alone)"
    #endif

    private static func isUnregistered(_ index: Int) -> Bool { (index + 1) % LoopbackScenarios.unregisteredEvery == 0 }

    private func app() throws -> SimulatedApp {
        guard let app = self.device.app(ChatApp.bundleID) else { throw StepFailure(description: "the app is not installed") }
        return app
    }

    /// Starts a delivery Live Activity by push-to-start (subscribed to `channel` when given);
    /// returns its id and update token.
    func start(
        _ client: APNSClient, order: String, state: DeliveryAttributes.ContentState, timestamp: Date, channel: APNSChannelID?
    ) async throws -> (String, String) {
        let position = self.device.timeline.count
        let sent = try await client.send(
            APNSLiveActivityStartNotification(
                attributesType: DeliveryAttributes.typeName, attributes: DeliveryAttributes(orderNumber: order),
                contentState: state, alert: APNSLiveActivityAlert(title: .plain("Order \(order)"), body: "Preparing your order"),
                timestamp: timestamp, topic: try self.topic, inputPushChannel: channel
            ),
            to: self.tokens.pushToStart
        )
        let started = try await self.device.awaitEvent(from: position) { event in
            switch event {
            case .liveActivityStarted, .liveActivityPushRejected(sent.apnsID, _): return true
            default: return false
            }
        }
        guard case .liveActivityStarted(let activityID, _, _, let updateToken) = started.event else {
            throw StepFailure(description: "no Live Activity started for order \(order): \(started.event)")
        }
        // The device records the subscription just after the start: waited for, so a broadcast sent
        // next finds it, and the timeline shows it before the broadcast's verdict.
        if let channel {
            _ = try await self.device.awaitEvent(from: position) { event in
                if case .liveActivitySubscribed(activityID, channel.rawValue) = event { return true }
                return false
            }
        }
        return (activityID, updateToken)
    }

    /// Checks that one push for `activityID` was ignored since `mark` and the applied states are `expected`.
    private func checkHistory(of activityID: String, since mark: SectionBuilder.Mark, expected: [String]) {
        let ignored = self.device.timeline.dropFirst(mark.device).contains { entry in
            if case .liveActivityPushIgnored(let id, _) = entry.event { return id == activityID }
            return false
        }
        let history = self.device.liveActivity(activityID)?.history.compactMap { $0.contentState["status"]?.stringValue } ?? []
        self.sections.check(
            ignored && history == expected,
            "stale update ignored; applied states \(expected.joined(separator: " -> "))",
            expected: "one ignored push, \(expected)", got: "\(ignored ? "ignored" : "not ignored"), \(history)"
        )
    }

    /// What `handler` noted since `mark`.
    private func notes(since mark: SectionBuilder.Mark, handler: String) -> [String] {
        self.sections.recorder.entries(since: mark.recorder).compactMap { entry in
            if case .note(let name, let text) = entry.kind, name == handler { return text }
            return nil
        }
    }
}

/// A step could not go on (the device did something else than the step needs next).
struct StepFailure: Error, CustomStringConvertible {
    var description: String
}
