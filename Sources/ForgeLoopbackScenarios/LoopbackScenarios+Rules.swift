internal import ForgeAPNs
internal import ForgeAPNsCore
internal import ForgeNotificationTypes
internal import ForgeSimulatedDevice
internal import Foundation

extension ScenarioSteps {
    /// How many priority-10 updates the scenario sends: two beyond the device's default budget.
    static let urgentUpdates = 12

    // MARK: 7. iOS's rules: storage while offline, the update budget

    func deviceRules(_ client: APNSClient) async {
        let mark = self.sections.begin(
            "7. iOS's rules: an offline phone gets the last of three pushes; priority-10 updates beyond the budget are throttled"
        )
        var extra: [ScenarioLine] = []
        do {
            // Offline: APNs keeps one push per app, the last; it arrives when the phone reconnects.
            self.device.goOffline()
            var sent: [String] = []
            for (index, text) in ["Table for two?", "Make it three", "Make it four, at 8"].enumerated() {
                let alert = APNSAlertNotification(
                    alert: APNSAlert(title: "Bob", body: text), topic: try self.topic, threadID: "chat-bob",
                    payload: MessagePayload(messageID: "M-20\(index)")
                )
                sent.append(try await client.send(alert, to: self.tokens.device).apnsID)
            }
            let last = sent[2]
            try await self.device.awaitEvent(from: mark.device) { event in
                if case .delivery(last, .stored, _) = event { return true }
                return false
            }
            await self.device.goOnline()
            let states = sent.map { id in self.device.deliveryLog.filter { $0.apnsID == id }.map(\.state) }
            let listed = self.device.notificationList(for: ChatApp.bundleID).map(\.request.identifier)
            self.sections.check(
                states[0] == [.stored, .discarded(.replacedInStorage)] && states[1] == [.stored, .discarded(.replacedInStorage)]
                    && states[2] == [.stored, .deliveredFromStorage] && listed.contains(last)
                    && !listed.contains(sent[0]) && !listed.contains(sent[1]),
                "offline: the first two replaced in storage, the last delivered from storage and shown",
                expected: "stored -> replaced, stored -> replaced, stored -> delivered from storage; the last shown",
                got: "\(states.map { $0.map(\.description) }), shown \(listed.filter(sent.contains).map(SectionBuilder.short))"
            )

            // The update budget: priority-10 updates beyond it are throttled, not applied.
            let t0 = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let (activityID, updateToken) = try await self.start(
                client, order: "4712", state: DeliveryAttributes.ContentState(status: "preparing", etaMinutes: 30), timestamp: t0, channel: nil
            )
            let token = try DeviceToken(updateToken)
            var updates: [String] = []
            var previous: ContinuousClock.Instant?
            for step in 1...Self.urgentUpdates {
                let notification = APNSLiveActivityNotification(
                    event: .update, contentState: DeliveryAttributes.ContentState(status: "on the way", etaMinutes: 30 - step),
                    timestamp: t0 + Double(step), topic: try self.topic, priority: .immediately
                )
                // What a sender's lint engine says before each send: the push alone, and (LA007)
                // its rate, which only the sender, or a server that sees every push, can judge.
                var lints = try notification.prepared().lints()
                let now = ContinuousClock.now
                if let previous, let frequent = APNSLinter.frequentUpdate(after: now - previous) { lints.append(frequent) }
                previous = now
                if step == 2 || step == Self.urgentUpdates, let lint = lints.first {
                    extra.append(ScenarioLine(.client, .client, date: Date(), text: "sender's lint: \(lint)", outcome: .info))
                }
                updates.append(try await client.send(notification, to: token).apnsID)
            }
            let final = updates[updates.count - 1]
            try await self.device.awaitEvent(from: mark.device) { event in
                if case .delivery(final, _, _) = event { return true }
                return false
            }
            // A throttled push is decided on arrival; an admitted one is applied later, in the Live
            // Activity lane. Wait for the last admitted update to be applied before reading the state.
            let admitted = updates.lastIndex { id in
                self.device.deliveryLog.contains { $0.apnsID == id && $0.state == .delivered }
            }
            if let admitted {
                let (stamp, apnsID) = (t0 + Double(admitted + 1), updates[admitted])
                try await self.device.awaitEvent(from: mark.device) { event in
                    switch event {
                    case .liveActivityUpdated(activityID, let timestamp): return timestamp == stamp
                    case .liveActivityPushIgnored(activityID, _): return true
                    case .liveActivityPushRejected(apnsID, _): return true
                    default: return false
                    }
                }
            }
            let throttled = updates.filter { id in
                self.device.deliveryLog.contains { $0.apnsID == id && $0.state == .throttled(.liveActivityBudget) }
            }
            let budget = self.device.rules.liveActivityUpdates?.limit ?? 0
            let applied = self.device.liveActivity(activityID)?.current?.contentState["etaMinutes"]?.intValue
            self.sections.check(
                throttled == Array(updates[budget...]) && applied == 30 - budget,
                "priority 10: \(budget) updates applied, the \(Self.urgentUpdates - budget) beyond the budget throttled",
                expected: "updates \(budget + 1)…\(Self.urgentUpdates) throttled, eta \(30 - budget) shown",
                got: "\(throttled.count) throttled, eta \(applied.map(String.init) ?? "none") shown"
            )
        } catch {
            self.sections.check(false, "step 7 completed", expected: "no error", got: "\(error)")
        }
        if !self.device.isOnline { await self.device.goOnline() }
        self.sections.finish(mark, extra: extra)
    }
}
