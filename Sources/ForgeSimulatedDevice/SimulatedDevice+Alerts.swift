internal import ForgeNotificationService
internal import ForgeNotificationTypes
internal import ForgeSupport
internal import Foundation

extension SimulatedDevice {
    /// What a service extension delivered, and whether by the time-will-expire path.
    private struct ExtensionOutcome: Sendable {
        var content: NotificationContent
        var expired: Bool
    }

    /// An alert push: authorization, service extension, attachments, then shown. A push with only a
    /// sound or a badge shows nothing (recorded as such; the sound and badge are not simulated).
    func deliverAlert(_ push: DevicePush, payload: JSONValue, to app: SimulatedApp) async {
        let identifier = push.notificationIdentifier
        let aps = payload["aps"]
        // The badge is set by any push that carries one, with or without an alert.
        if let badge = aps?["badge"]?.intValue, app.authorization == .granted {
            self.state.withLock { $0.badges[app.bundleID] = badge }
        }
        guard aps?["alert"] != nil else {
            self.record(.notShown(bundleID: app.bundleID, identifier: identifier, reason: .nothingToShow))
            return
        }
        guard app.authorization == .granted else {
            self.record(.notShown(bundleID: app.bundleID, identifier: identifier, reason: .notAuthorized))
            return
        }
        var request = NotificationRequest(identifier: identifier, content: NotificationContent(payload: payload))
        request.content = await self.runServiceExtension(of: app, on: request)
        request.content.attachments = self.existingAttachments(of: request, app: app)
        await self.show(DeliveredNotification(request: request, date: self.clock.now), of: push, app: app)
    }

    /// Runs the app's service extension when the payload asks for it; returns the content to show.
    /// Records ``DeviceEvent/serviceExtensionNotRun(bundleID:identifier:reason:)`` for `mutable-content`
    /// sent to an app without an extension, and for an alert that wanted the extension but lacks
    /// `mutable-content` (see ``ServiceExtension``); a plain alert is not a mistake.
    private func runServiceExtension(of app: SimulatedApp, on request: NotificationRequest) async -> NotificationContent {
        let isMutable = request.content.userInfo["aps"]?["mutable-content"]?.intValue == 1
        guard let serviceExtension = app.serviceExtension else {
            if isMutable {
                self.record(
                    .serviceExtensionNotRun(
                        bundleID: app.bundleID, identifier: request.identifier, reason: "the app has no service extension"
                    )
                )
            }
            return request.content
        }
        let outcome = OneShot<ExtensionOutcome>()
        let expiring = LockedBox(false)
        let manager = NotificationServiceManager(request: request) { content in
            outcome.resolve(ExtensionOutcome(content: content, expired: expiring.withLock { $0 }))
        }
        guard isMutable, let manager else {
            // A plain alert needs no extension; it is a mistake only where the alert wanted one.
            if let wanted = serviceExtension.reasonToRun(request.content.userInfo) {
                self.record(
                    .serviceExtensionNotRun(
                        bundleID: app.bundleID, identifier: request.identifier,
                        reason: "the payload lacks aps.mutable-content: 1, but \(wanted)"
                    )
                )
            }
            return request.content
        }
        let expiryID = self.serviceExtensions.register {
            expiring.withLock { $0 = true }
            manager.complete(forces: true)
        }
        self.record(.serviceExtensionStarted(bundleID: app.bundleID, identifier: request.identifier))
        serviceExtension.didReceive(request, manager)
        let registry = self.serviceExtensions
        let result = await outcome.value(limit: serviceExtension.timeLimit) { registry.expire(expiryID) }
        self.serviceExtensions.remove(expiryID)
        self.record(
            .serviceExtensionCompleted(
                bundleID: app.bundleID, identifier: request.identifier, content: result.content, expired: result.expired
            )
        )
        return result.content
    }

    /// The attachments whose files still exist; records the others as dropped.
    private func existingAttachments(of request: NotificationRequest, app: SimulatedApp) -> [NotificationAttachment] {
        request.content.attachments.filter { attachment in
            let exists = attachment.url.isFileURL && FileManager.default.fileExists(atPath: attachment.url.path)
            if !exists {
                self.record(
                    .attachmentDropped(
                        bundleID: app.bundleID, identifier: request.identifier, attachmentID: attachment.identifier,
                        url: attachment.url
                    )
                )
            }
            return exists
        }
    }

    /// Replaces a notification with the same identifier, then presents: the will-present decision in
    /// the foreground (the app's delegate, `.active`), the notification list otherwise.
    private func show(_ notification: DeliveredNotification, of push: DevicePush, app: SimulatedApp) async {
        let identifier = notification.request.identifier
        let previous = self.state.withLock { state -> NotificationContent? in
            guard let index = state.shown[app.bundleID]?.firstIndex(where: { $0.notification.request.identifier == identifier })
            else { return nil }
            return state.shown[app.bundleID]?.remove(at: index).notification.request.content
        }
        if let previous {
            self.record(.notificationReplaced(bundleID: app.bundleID, identifier: identifier, previous: previous))
        }
        var inList = true
        if app.state == .foreground {
            let options = await app.presentationOptions(for: notification)
            self.record(.willPresent(bundleID: app.bundleID, identifier: identifier, options: options))
            guard !options.isDisjoint(with: [.banner, .list]) else {
                self.record(.notShown(bundleID: app.bundleID, identifier: identifier, reason: .suppressedInForeground))
                return
            }
            inList = options.contains(.list)
        }
        self.state.withLock { state in
            state.shown[app.bundleID, default: []].append(Shown(notification: notification, inList: inList, apnsID: push.apnsID, collapseID: push.collapseID))
            if let limit = self.notificationRetention, let count = state.shown[app.bundleID]?.count, count > limit {
                state.shown[app.bundleID]?.removeFirst(count - limit)
            }
        }
        if inList {
            self.record(
                .addedToNotificationList(bundleID: app.bundleID, identifier: identifier, content: notification.request.content)
            )
        }
    }
}
