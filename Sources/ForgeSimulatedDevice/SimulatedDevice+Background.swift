internal import ForgeNotificationTypes
internal import ForgeSilentPush

extension SimulatedDevice {
    /// A background push: to the app's SilentPushRouter through the completion-handler variant,
    /// within the background budget.
    func deliverBackground(_ push: DevicePush, payload: JSONValue, to app: SimulatedApp) async {
        guard !app.isForceQuit else {
            self.record(
                .backgroundNotDelivered(bundleID: app.bundleID, apnsID: push.apnsID, reason: "the user force-quit the app")
            )
            return
        }
        if app.state == .notRunning {
            app.enter(.background, as: .background)
            self.record(.appLaunched(bundleID: app.bundleID, reason: .backgroundPush))
        }
        // `nil`: the budget ran out before the completion handler was called.
        let outcome = OneShot<BackgroundFetchResult?>()
        let expiryID = self.backgroundBudgets.register { outcome.resolve(nil) }
        self.record(.backgroundDeliveryStarted(bundleID: app.bundleID, apnsID: push.apnsID, payload: payload))
        app.silentRouter.handlePush(payload: payload) { result in outcome.resolve(result) }
        let registry = self.backgroundBudgets
        let result = await outcome.value(limit: self.backgroundBudget) { registry.expire(expiryID) }
        self.backgroundBudgets.remove(expiryID)
        if let result {
            self.record(.backgroundCompleted(bundleID: app.bundleID, apnsID: push.apnsID, result: result))
        } else {
            self.record(.backgroundBudgetExceeded(bundleID: app.bundleID, apnsID: push.apnsID))
        }
    }
}
