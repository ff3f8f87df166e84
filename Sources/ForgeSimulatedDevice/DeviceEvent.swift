public import ForgeNotificationTypes
public import struct Foundation.Date
public import struct Foundation.URL
internal import ForgeSupport

/// One step the device took, in the order it took them.
///
/// The six common mistakes of the iOS guide each leave their own event:
/// - no authorization: ``notShown(bundleID:identifier:reason:)`` with ``NotShownReason/notAuthorized``;
/// - no delegate set before launch: ``responseLost(bundleID:identifier:reason:)``;
/// - temporary attachment files: ``attachmentDropped(bundleID:identifier:attachmentID:url:)``;
/// - completion handler never called: ``backgroundBudgetExceeded(bundleID:apnsID:)``;
/// - missing `mutable-content` where the alert wanted the extension (see ``ServiceExtension``):
///   ``serviceExtensionNotRun(bundleID:identifier:reason:)``;
/// - one identifier for different notifications: ``notificationReplaced(bundleID:identifier:previous:)``.
public enum DeviceEvent: Hashable, Sendable, CustomStringConvertible {
    // MARK: Arrival
    /// A push arrived.
    case pushReceived(apnsID: String, token: String, pushType: String)
    /// A broadcast arrived on a channel.
    case broadcastReceived(apnsID: String, channelID: String)
    /// No app (or Live Activity) owns the push's token: the push is dropped.
    case droppedUnknownToken(apnsID: String, token: String)
    /// The payload is not a JSON object: the push is dropped.
    case droppedInvalidPayload(apnsID: String, reason: String)
    /// No Live Activity on the device is subscribed to the broadcast's channel: the broadcast is dropped.
    case broadcastNotSubscribed(apnsID: String, channelID: String)
    /// The push reached a delivery state (Apple's Push Notifications Console's names, and the
    /// device's throttles); `reason` says why when it was not simply delivered. See ``DeliveryState``.
    case delivery(apnsID: String, state: DeliveryState, reason: String?)

    // MARK: App life cycle
    /// The system launched the app (for a background push, or because the user opened a notification).
    case appLaunched(bundleID: String, reason: LaunchReason)
    /// The app moved to the foreground because the user opened a notification.
    case appForegrounded(bundleID: String)
    /// The app, launched by the user opening notification `identifier`, connected its scene
    /// (`scene(_:willConnectTo:options:)` with `notificationResponse`), before the response is routed.
    case sceneConnected(bundleID: String, identifier: String)

    // MARK: Background pushes
    /// A background push was not delivered (the app was force-quit).
    case backgroundNotDelivered(bundleID: String, apnsID: String, reason: String)
    /// A background push went to the app's SilentPushRouter.
    case backgroundDeliveryStarted(bundleID: String, apnsID: String, payload: JSONValue)
    /// The app called the completion handler with `result`.
    case backgroundCompleted(bundleID: String, apnsID: String, result: BackgroundFetchResult)
    /// The app did not call the completion handler within its background time budget.
    case backgroundBudgetExceeded(bundleID: String, apnsID: String)

    // MARK: Alerts
    /// The app's service extension was not run for an alert that wanted it (it carries a key the
    /// extension declared, or the extension is required for every alert), or `mutable-content` was
    /// sent to an app without one.
    case serviceExtensionNotRun(bundleID: String, identifier: String, reason: String)
    /// The app's service extension started on an alert.
    case serviceExtensionStarted(bundleID: String, identifier: String)
    /// The service extension delivered `content`; `expired` when it was the time-will-expire path.
    case serviceExtensionCompleted(bundleID: String, identifier: String, content: NotificationContent, expired: Bool)
    /// An attachment whose file no longer exists was dropped from the notification.
    case attachmentDropped(bundleID: String, identifier: String, attachmentID: String, url: URL)
    /// An alert was not shown.
    case notShown(bundleID: String, identifier: String, reason: NotShownReason)
    /// A notification with the same identifier replaced an earlier one in the list.
    case notificationReplaced(bundleID: String, identifier: String, previous: NotificationContent)
    /// The app, in the foreground, decided how to present the notification (`willPresent`).
    case willPresent(bundleID: String, identifier: String, options: PresentationOptions)
    /// The notification went into the notification list (notification centre).
    case addedToNotificationList(bundleID: String, identifier: String, content: NotificationContent)

    // MARK: User actions
    /// The user dismissed a notification.
    case notificationDismissed(bundleID: String, identifier: String)
    /// A response was routed to the app's VisiblePushRouter.
    case responseRouted(bundleID: String, identifier: String, action: String, userText: String?)
    /// The VisiblePushRouter finished; `handlerIDs` are the handlers that ran.
    case responseHandled(bundleID: String, identifier: String, handlerIDs: [String])
    /// A response never reached the app.
    case responseLost(bundleID: String, identifier: String, reason: String)

    // MARK: Live Activities
    /// A push-to-start push started a Live Activity.
    case liveActivityStarted(activityID: String, bundleID: String, attributesType: String, updateToken: String)
    /// The activity subscribed to a broadcast channel (`input-push-channel` at start, or a subscription).
    case liveActivitySubscribed(activityID: String, channelID: String)
    /// An update push was applied.
    case liveActivityUpdated(activityID: String, timestamp: Date)
    /// An end push ended the activity.
    case liveActivityEnded(activityID: String, dismissalDate: Date?)
    /// The device clock passed the activity's stale date.
    case liveActivityBecameStale(activityID: String)
    /// The device clock passed the ended activity's dismissal date.
    case liveActivityDismissed(activityID: String)
    /// A push-to-start push started a Live Activity on a phone that asks first
    /// (``SimulatedDevice/asksBeforeActivities``): it shows with Allow and Don't Allow, and has no
    /// update token until the person allows the app's activities.
    case liveActivityAwaitingPermission(activityID: String, bundleID: String, attributesType: String)
    /// The person allowed the app's Live Activities (``SimulatedDevice/allowActivities(of:)``).
    case liveActivitiesAllowed(bundleID: String)
    /// The person chose Don't Allow for the app's Live Activities (``SimulatedDevice/denyActivities(of:)``):
    /// its running activities end, its later starts are discarded.
    case liveActivitiesDenied(bundleID: String)
    /// An activity that awaited permission got its update token.
    case liveActivityTokenIssued(activityID: String, updateToken: String)
    /// A Live Activity push was ignored (older timestamp, activity already ended).
    case liveActivityPushIgnored(activityID: String, reason: String)
    /// A Live Activity push was rejected (content state that does not decode, unknown type, missing keys).
    case liveActivityPushRejected(apnsID: String, reason: String)
    /// A `Date` in the push's content state decodes far from the push's `timestamp`: the app would
    /// show `shows` (`field` is its path in `content-state`).
    case contentStateDateMisread(apnsID: String, field: String, shows: Date, reason: String)

    // MARK: Widgets
    /// A `widgets` push reloaded the app's widget timelines.
    case widgetReloaded(bundleID: String, apnsID: String)

    /// Why an app was launched.
    public enum LaunchReason: Hashable, Sendable, CustomStringConvertible {
        /// In the background, to handle a background push.
        case backgroundPush
        /// In the foreground, because the user opened the notification with this identifier.
        case notificationResponse(identifier: String)

        public var description: String {
            switch self {
            case .backgroundPush: return "in the background for a background push"
            case .notificationResponse(let identifier): return "by the user opening notification \(identifier)"
            }
        }
    }

    /// Why an alert was not shown.
    public enum NotShownReason: Hashable, Sendable, CustomStringConvertible {
        /// The user denied notifications; the app and the provider get no error.
        case notAuthorized
        /// The payload has no alert (a sound or badge alone, or a push with nothing for the user).
        case nothingToShow
        /// In the foreground, the app's will-present decision was none.
        case suppressedInForeground

        public var description: String {
            switch self {
            case .notAuthorized: return "not authorized (no error is reported)"
            case .nothingToShow: return "no alert to show"
            case .suppressedInForeground: return "the app presented it with no options"
            }
        }
    }

    /// A one-line, human-readable account of the step.
    public var description: String {
        switch self {
        case .pushReceived(let apnsID, let token, let pushType):
            return "push \(apnsID) (\(pushType)) received for token \(token.prefix(8))…"
        case .droppedUnknownToken(let apnsID, let token):
            return "push \(apnsID) dropped: no app owns token \(token.prefix(8))…"
        case .droppedInvalidPayload(let apnsID, let reason):
            return "push \(apnsID) dropped: \(reason)"
        case .broadcastReceived(let apnsID, let channelID):
            return "broadcast \(apnsID) received on channel \(channelID)"
        case .broadcastNotSubscribed(let apnsID, let channelID):
            return "broadcast \(apnsID) dropped: no Live Activity here is subscribed to channel \(channelID)"
        case .delivery(let apnsID, let state, let reason):
            return DeliveryRecord.text(apnsID: apnsID, state: state, reason: reason)
        case .appLaunched(let bundleID, let reason):
            return "\(bundleID) launched \(reason)"
        case .appForegrounded(let bundleID):
            return "\(bundleID) brought to the foreground"
        case .sceneConnected(let bundleID, let identifier):
            return "\(bundleID)'s scene connected with the response to \(identifier) (scene(_:willConnectTo:options:))"
        case .backgroundNotDelivered(let bundleID, let apnsID, let reason):
            return "background push \(apnsID) not delivered to \(bundleID): \(reason)"
        case .backgroundDeliveryStarted(let bundleID, let apnsID, let payload):
            return "background push \(apnsID) delivered to \(bundleID)'s SilentPushRouter with \(payload)"
        case .backgroundCompleted(let bundleID, let apnsID, let result):
            return "\(bundleID) completed background push \(apnsID) with \(result)"
        case .backgroundBudgetExceeded(let bundleID, let apnsID):
            return "\(bundleID) never called the completion handler for background push \(apnsID): budget exceeded"
        case .serviceExtensionNotRun(let bundleID, let identifier, let reason):
            return "service extension of \(bundleID) not run for \(identifier): \(reason)"
        case .serviceExtensionStarted(let bundleID, let identifier):
            return "service extension of \(bundleID) started for \(identifier)"
        case .serviceExtensionCompleted(let bundleID, let identifier, let content, let expired):
            let path = expired ? "time expired, best attempt" : "completed"
            return "service extension of \(bundleID) \(path) for \(identifier): \"\(content.title)\" \"\(content.body)\""
        case .attachmentDropped(let bundleID, let identifier, let attachmentID, let url):
            return "attachment \(attachmentID) of \(bundleID)/\(identifier) dropped: \(url.path) no longer exists"
        case .notShown(let bundleID, let identifier, let reason):
            return "\(bundleID)/\(identifier) not shown: \(reason)"
        case .notificationReplaced(let bundleID, let identifier, let previous):
            return "\(bundleID)/\(identifier) replaced the earlier notification \"\(previous.title)\" \"\(previous.body)\""
        case .willPresent(let bundleID, let identifier, let options):
            return "\(bundleID) in the foreground presents \(identifier) as \(options)"
        case .addedToNotificationList(let bundleID, let identifier, let content):
            return "\(bundleID)/\(identifier) added to the notification list: \"\(content.title)\" \"\(content.body)\""
        case .notificationDismissed(let bundleID, let identifier):
            return "user dismissed \(bundleID)/\(identifier)"
        case .responseRouted(let bundleID, let identifier, let action, let userText):
            let text = userText.map { " with text \"\($0)\"" } ?? ""
            return "response \(action)\(text) to \(identifier) routed to \(bundleID)'s VisiblePushRouter"
        case .responseHandled(let bundleID, let identifier, let handlerIDs):
            let handlers = handlerIDs.isEmpty ? "no handler matched" : "handlers " + handlerIDs.joined(separator: ", ")
            return "\(bundleID) handled the response to \(identifier): \(handlers)"
        case .responseLost(let bundleID, let identifier, let reason):
            return "response to \(bundleID)/\(identifier) lost: \(reason)"
        case .liveActivityStarted(let activityID, let bundleID, let attributesType, let updateToken):
            return "Live Activity \(activityID) (\(attributesType)) started for \(bundleID), update token \(updateToken.prefix(8))…"
        case .liveActivitySubscribed(let activityID, let channelID):
            return "Live Activity \(activityID) subscribed to channel \(channelID)"
        case .liveActivityUpdated(let activityID, let timestamp):
            return "Live Activity \(activityID) updated (timestamp \(ISODate.string(timestamp)))"
        case .liveActivityEnded(let activityID, let dismissalDate):
            let dismissal = dismissalDate.map { " (dismissal at \(ISODate.string($0)))" } ?? ""
            return "Live Activity \(activityID) ended\(dismissal)"
        case .liveActivityBecameStale(let activityID):
            return "Live Activity \(activityID) became stale"
        case .liveActivityDismissed(let activityID):
            return "Live Activity \(activityID) dismissed"
        case .liveActivityAwaitingPermission(let activityID, let bundleID, let attributesType):
            return "Live Activity \(activityID) (\(attributesType)) started for \(bundleID), awaiting permission: "
                + "no update token until the person taps Allow"
        case .liveActivitiesAllowed(let bundleID):
            return "the person allowed \(bundleID)'s Live Activities"
        case .liveActivitiesDenied(let bundleID):
            return "the person chose Don't Allow for \(bundleID)'s Live Activities: its starts are discarded from now on"
        case .liveActivityTokenIssued(let activityID, let updateToken):
            return "Live Activity \(activityID) got its update token \(updateToken.prefix(8))…"
        case .liveActivityPushIgnored(let activityID, let reason):
            return "push for Live Activity \(activityID) ignored: \(reason)"
        case .liveActivityPushRejected(let apnsID, let reason):
            return "Live Activity push \(apnsID) rejected: \(reason)"
        case .contentStateDateMisread(let apnsID, let field, _, let reason):
            return "Live Activity push \(apnsID): content-state.\(field) \(reason)"
        case .widgetReloaded(let bundleID, let apnsID):
            return "widget push \(apnsID) reloaded \(bundleID)'s widget timelines"
        }
    }
}

/// A timeline entry: an event and the device clock's date when it happened.
public struct TimelineEntry: Hashable, Sendable, CustomStringConvertible {
    /// The position in the timeline, from 0.
    public var sequence: Int
    /// When it happened, by the device clock.
    public var date: Date
    /// What happened.
    public var event: DeviceEvent

    /// Creates an entry.
    public init(sequence: Int, date: Date, event: DeviceEvent) {
        self.sequence = sequence
        self.date = date
        self.event = event
    }

    /// `#sequence date: event`, one line.
    public var description: String { "#\(self.sequence) \(self.date): \(self.event)" }
}
