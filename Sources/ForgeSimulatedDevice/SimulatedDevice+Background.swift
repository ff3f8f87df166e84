internal import ForgeSupport
internal import ForgeNotificationTypes
internal import ForgeSilentPush

extension SimulatedDevice {
    /// A background push: to the app's SilentPushRouter, within the background budget.
    ///
    /// `turn` (the app's background lane) ends once the delivery has started, so the app's delegate
    /// sees its background pushes in arrival order while their handlers run concurrently. The
    /// handlers run in a child task; when the budget runs out (or the delivery is cancelled) the
    /// violation is recorded and that task is cancelled, as iOS suspends the app.
    func deliverBackground(_ push: DevicePush, payload: JSONValue, to app: SimulatedApp, turn: Turn) async {
        await turn.begin()
        guard !app.isForceQuit else {
            self.record(
                .backgroundNotDelivered(bundleID: app.bundleID, apnsID: push.apnsID, reason: "the user force-quit the app")
            )
            turn.end()
            return
        }
        if app.state == .notRunning {
            app.enter(.background, as: .background)
            self.record(.appLaunched(bundleID: app.bundleID, reason: .backgroundPush))
        }
        // `nil`: the budget ran out before the handlers finished.
        let outcome = OneShot<BackgroundFetchResult?>()
        let expiryID = self.backgroundBudgets.register { outcome.resolve(nil) }
        self.state.withLock { $0.backgroundPushes += 1 }
        self.record(.backgroundDeliveryStarted(bundleID: app.bundleID, apnsID: push.apnsID, payload: payload))
        turn.end()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                let result = await app.silentRouter.handlePush(payload: payload)
                outcome.resolve(result.backgroundFetchResult)
            }
            let registry = self.backgroundBudgets
            let result = await outcome.value(limit: self.backgroundBudget) { registry.expire(expiryID) }
            self.backgroundBudgets.remove(expiryID)
            if let result {
                self.record(.backgroundCompleted(bundleID: app.bundleID, apnsID: push.apnsID, result: result))
            } else {
                self.record(.backgroundBudgetExceeded(bundleID: app.bundleID, apnsID: push.apnsID))
            }
            group.cancelAll()
        }
    }
}
