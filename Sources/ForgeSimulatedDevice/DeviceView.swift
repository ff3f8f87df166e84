package import ForgeNotificationTypes
package import struct Foundation.Date
internal import ForgeSupport

/// What a phone shows now, as a person would read it off the screen: the notification list, the
/// app badges, the Live Activities, the channels they listen to, and the quiet background pushes.
/// ``SimulatedDevice/view(token:)`` makes one; `apnsctl serve`'s inbox serves it as JSON.
package struct DeviceView: Sendable, Hashable {
    /// A notification in the notification list.
    package struct Notification: Sendable, Hashable {
        package var apnsID: String
        package var bundleID: String
        package var title: String
        package var subtitle: String
        package var body: String
        package var threadID: String
        package var collapseID: String?
        package var badge: Int?
        package var deliveredAt: Date
        /// `aps.relevance-score` (0 when absent): the list puts the highest first.
        package var relevanceScore: Double
    }

    /// A Live Activity on the Lock Screen.
    package struct Activity: Sendable, Hashable {
        package var id: String
        package var bundleID: String
        package var attributesType: String
        package var attributes: JSONValue
        package var contentState: JSONValue
        package var staleDate: Date?
        package var dismissalDate: Date?
        /// `active`, `stale`, `ended` or `dismissed`; `awaiting_permission` for a running activity
        /// that waits for the person's Allow (``SimulatedDevice/asksBeforeActivities``).
        package var state: String
        /// When the last applied push (or the start) was sent: its `timestamp`.
        package var updatedAt: Date
        /// The token its updates go to; empty while it awaits permission (none issued yet).
        package var pushToken: String
        /// The broadcast channel it listens to.
        package var channelID: String?
        /// The alert that came with the last applied push.
        package var alertTitle: String?
        package var alertBody: String?
        /// How many pushes were applied (the start included).
        package var updates: Int
    }

    /// A background push that reached (or, for a force-quit app, did not reach) an app.
    package struct SilentPush: Sendable, Hashable {
        package var apnsID: String
        package var bundleID: String
        package var receivedAt: Date
        package var payload: JSONValue?
        /// Why it was not delivered, if it was not.
        package var notDelivered: String?
    }

    /// The token the view was asked for.
    package var token: String
    /// The installed apps' bundle ids.
    package var apps: [String]
    /// Each app's icon badge, by bundle id.
    package var badges: [String: Int]
    /// Each app's push-to-start token (one for all its attributes types, as on iOS), by bundle id;
    /// an app with none is absent.
    package var pushToStartTokens: [String: String]
    /// The notification list as iOS sorts it: by relevance score, highest first, then newest first.
    package var notifications: [Notification]
    /// The Live Activities, newest first.
    package var liveActivities: [Activity]
    /// The channels the Live Activities listen to.
    package var channels: [String]
    /// How many background pushes reached an app.
    package var backgroundPushes: Int
    /// The background pushes still in the timeline, newest first.
    package var silentPushes: [SilentPush]
    /// The timeline's last events, newest first, as one line each.
    package var events: [Event]
    /// Whether the device is online (offline, APNs stores the last push per app).
    package var isOnline: Bool
    /// The delivery log's last records, newest first: what became of each push.
    package var deliveries: [DeliveryRecord]

    /// One line of the timeline.
    package struct Event: Sendable, Hashable {
        package var date: Date
        package var text: String
    }
}

extension SimulatedDevice {
    /// What the device shows now (stale and dismissal dates checked against its clock first).
    /// - Parameters:
    ///   - token: the token to name in the view (any token of the device).
    ///   - events: how many of the timeline's last events to include.
    package func view(token: String, events: Int = 200) -> DeviceView {
        let activities = self.liveActivities
        let timeline = self.timeline
        let (installed, shown, badges, background) = self.state.withLock { state in
            (state.apps, state.shown, state.badges, state.backgroundPushes)
        }
        let apps = installed.map(\.bundleID)
        var pushToStart: [String: String] = [:]
        for app in installed { pushToStart[app.bundleID] = app.pushToStartToken }
        var notifications: [DeviceView.Notification] = []
        for bundleID in apps {
            for entry in shown[bundleID, default: []] where entry.inList {
                let content = entry.notification.request.content
                notifications.append(
                    DeviceView.Notification(
                        apnsID: entry.apnsID, bundleID: bundleID, title: content.title, subtitle: content.subtitle,
                        body: content.body, threadID: content.threadIdentifier, collapseID: entry.collapseID, badge: content.badge,
                        deliveredAt: entry.notification.date, relevanceScore: content.relevanceScore
                    )
                )
            }
        }
        // iOS sorts an app's notifications by relevance score (https://developer.apple.com/documentation/usernotifications/unnotificationcontent/relevancescore).
        notifications.sort { ($0.relevanceScore, $0.deliveredAt) > ($1.relevanceScore, $1.deliveredAt) }
        let views = activities.reversed().map { activity in
            let current = activity.current
            return DeviceView.Activity(
                id: activity.id, bundleID: activity.bundleID, attributesType: activity.attributesType,
                attributes: activity.attributes, contentState: current?.contentState ?? .null, staleDate: current?.staleDate,
                dismissalDate: activity.dismissalDate,
                state: activity.isAwaitingPermission ? "awaiting_permission" : activity.phase.description,
                updatedAt: current?.timestamp ?? Date(timeIntervalSince1970: 0), pushToken: activity.updateToken,
                channelID: activity.channelID, alertTitle: Self.alertText(current?.alert, "title"),
                alertBody: Self.alertText(current?.alert, "body"), updates: activity.history.count
            )
        }
        var silent: [DeviceView.SilentPush] = []
        for entry in timeline.reversed() {
            switch entry.event {
            case .backgroundDeliveryStarted(let bundleID, let apnsID, let payload):
                silent.append(DeviceView.SilentPush(apnsID: apnsID, bundleID: bundleID, receivedAt: entry.date, payload: payload))
            case .backgroundNotDelivered(let bundleID, let apnsID, let reason):
                silent.append(DeviceView.SilentPush(apnsID: apnsID, bundleID: bundleID, receivedAt: entry.date, notDelivered: reason))
            default:
                continue
            }
            if silent.count >= 50 { break }
        }
        return DeviceView(
            token: token.lowercased(), apps: apps, badges: badges, pushToStartTokens: pushToStart, notifications: notifications, liveActivities: views,
            channels: Array(Set(activities.compactMap(\.channelID))).sorted(), backgroundPushes: background, silentPushes: silent,
            events: timeline.suffix(events).reversed().map { DeviceView.Event(date: $0.date, text: $0.event.description) },
            isOnline: self.isOnline, deliveries: self.deliveryLog.suffix(events).reversed()
        )
    }

    private static func alertText(_ alert: JSONValue?, _ key: String) -> String? {
        guard let alert else { return nil }
        if key == "body", let text = alert.stringValue { return text }
        return alert[key]?.stringValue
    }
}
