internal import ForgeNotificationTypes
internal import ForgeSupport
internal import ForgeVisiblePush

extension SimulatedDevice {
    /// The user taps a shown notification (the default action): the app opens (launching first
    /// when it is not running) and the response goes to its VisiblePushRouter.
    /// - Parameters:
    ///   - identifier: the notification's identifier (`apns-collapse-id`, else `apns-id`).
    ///   - bundleID: the app that shows it.
    /// - Returns: the ids of the handlers that ran; empty when the response was lost.
    /// - Throws: ``SimulatedDeviceError/unknownApp`` or ``SimulatedDeviceError/notificationNotFound``.
    @discardableResult
    public func tap(_ identifier: String, in bundleID: String) async throws(SimulatedDeviceError) -> [String] {
        let (app, notification) = try self.take(identifier, in: bundleID)
        return await self.respond(NotificationResponse(notification: notification, action: .default), app: app, opensApp: true)
    }

    /// The user dismisses a shown notification. It leaves the list; the app gets a response only
    /// when the notification's category sends the dismiss action (`.customDismissAction`).
    /// - Returns: the ids of the handlers that ran; empty when no response was sent.
    /// - Throws: ``SimulatedDeviceError/unknownApp`` or ``SimulatedDeviceError/notificationNotFound``.
    @discardableResult
    public func dismiss(_ identifier: String, in bundleID: String) async throws(SimulatedDeviceError) -> [String] {
        let (app, notification) = try self.take(identifier, in: bundleID)
        self.record(.notificationDismissed(bundleID: bundleID, identifier: identifier))
        let category = app.category(named: notification.request.content.categoryIdentifier)
        guard category?.sendsDismissAction == true else { return [] }
        return await self.respond(NotificationResponse(notification: notification, action: .dismiss), app: app, opensApp: false)
    }

    /// The user picks an action of the notification's category (typing `userText` for a
    /// text-input action).
    /// - Parameters:
    ///   - action: the action's identifier in the registered category.
    ///   - userText: the text typed; required for a text-input action, ignored otherwise.
    ///   - identifier: the notification's identifier.
    ///   - bundleID: the app that shows it.
    /// - Returns: the ids of the handlers that ran; empty when the response was lost.
    /// - Throws: ``SimulatedDeviceError/unknownApp``, ``SimulatedDeviceError/notificationNotFound``,
    ///   ``SimulatedDeviceError/unknownAction`` when the category (registered by the app) has no such
    ///   action, ``SimulatedDeviceError/missingUserText`` for a text-input action without text.
    @discardableResult
    public func perform(
        action: String, userText: String? = nil, on identifier: String, in bundleID: String
    ) async throws(SimulatedDeviceError) -> [String] {
        let (app, notification) = try self.find(identifier, in: bundleID)
        let categoryID = notification.request.content.categoryIdentifier
        guard let choice = app.category(named: categoryID)?.actions.first(where: { $0.identifier == action }) else {
            throw SimulatedDeviceError.unknownAction.with("category \"\(categoryID)\" of \(bundleID) has no action \(action)")
        }
        guard !choice.isTextInput || userText != nil else {
            throw SimulatedDeviceError.missingUserText.with("action \(action) asks for text")
        }
        _ = try self.take(identifier, in: bundleID)
        let response = NotificationResponse(
            notification: notification, action: .custom(action), userText: choice.isTextInput ? userText : nil
        )
        return await self.respond(response, app: app, opensApp: choice.opensApp)
    }

    /// UIKit's routes to `didReceive`, which goes to the app's VisiblePushRouter:
    /// - not running: launched (into the foreground, `.inactive`, when the action opens the app; else
    ///   in the background), the scene connects with the response first, then the router;
    /// - in the background, for an action that opens the app: foregrounded (`.inactive`), then the router;
    /// - otherwise the router at once (`.active` in the foreground, `.background` for an action that
    ///   leaves a background app where it is).
    /// An app brought up by the response becomes `.active` once the router has finished.
    private func respond(_ response: NotificationResponse, app: SimulatedApp, opensApp: Bool) async -> [String] {
        let identifier = response.notification.request.identifier
        var activates = false
        switch app.state {
        case .notRunning:
            app.enter(opensApp ? .foreground : .background, as: opensApp ? .inactive : .background)
            self.record(.appLaunched(bundleID: app.bundleID, reason: .notificationResponse(identifier: identifier)))
            if opensApp {
                activates = true
                self.record(.sceneConnected(bundleID: app.bundleID, identifier: identifier))
                await app.delegate?.sceneWillConnect(SceneConnectionOptions(notificationResponse: response))
            }
            guard app.isDelegateSetBeforeLaunch else {
                self.record(
                    .responseLost(
                        bundleID: app.bundleID, identifier: identifier,
                        reason: "the notification centre delegate was not set before the app finished launching"
                    )
                )
                if activates { app.enter(.foreground, as: .active) }
                return []
            }
        case .background where opensApp:
            activates = true
            app.enter(.foreground, as: .inactive)
            self.record(.appForegrounded(bundleID: app.bundleID))
        case .background, .foreground:
            break
        }
        self.record(
            .responseRouted(
                bundleID: app.bundleID, identifier: identifier, action: response.actionIdentifier, userText: response.userText
            )
        )
        let handlerIDs = await app.visibleRouter.handleResponse(response)
        self.record(.responseHandled(bundleID: app.bundleID, identifier: identifier, handlerIDs: handlerIDs))
        if activates { app.enter(.foreground, as: .active) }
        return handlerIDs
    }

    /// The app and the shown notification, left in place.
    private func find(
        _ identifier: String, in bundleID: String
    ) throws(SimulatedDeviceError) -> (SimulatedApp, DeliveredNotification) {
        guard let app = self.app(bundleID) else { throw SimulatedDeviceError.unknownApp.with("no app \(bundleID)") }
        let notification = self.state.withLock { state in
            state.shown[bundleID]?.first { $0.notification.request.identifier == identifier }?.notification
        }
        guard let notification else {
            throw SimulatedDeviceError.notificationNotFound.with("\(bundleID) shows no notification \(identifier)")
        }
        return (app, notification)
    }

    /// The app and the shown notification, removed (iOS removes a notification the user acted on).
    private func take(
        _ identifier: String, in bundleID: String
    ) throws(SimulatedDeviceError) -> (SimulatedApp, DeliveredNotification) {
        guard let app = self.app(bundleID) else { throw SimulatedDeviceError.unknownApp.with("no app \(bundleID)") }
        let notification = self.state.withLock { state -> DeliveredNotification? in
            guard let index = state.shown[bundleID]?.firstIndex(where: { $0.notification.request.identifier == identifier })
            else { return nil }
            return state.shown[bundleID]?.remove(at: index).notification
        }
        guard let notification else {
            throw SimulatedDeviceError.notificationNotFound.with("\(bundleID) shows no notification \(identifier)")
        }
        return (app, notification)
    }
}
