public import ForgeNotificationTypes

/// Where an app is in its life cycle: on screen, running off screen, or not running. What its
/// handlers see (`UIApplication.State`, with `.inactive` during transitions) is
/// ``SimulatedApp/applicationState``.
public enum AppState: Hashable, Sendable, CustomStringConvertible {
    /// On screen: alerts go to the will-present decision.
    case foreground
    /// Running but not on screen.
    case background
    /// Not running (never launched, terminated by the system, or force-quit).
    case notRunning

    public var description: String {
        switch self {
        case .foreground: return "foreground"
        case .background: return "background"
        case .notRunning: return "not running"
        }
    }

    /// The application state of an app that is settled in this state: `.active` in the foreground,
    /// `.background` otherwise.
    var applicationState: ApplicationState { self == .foreground ? .active : .background }
}

/// The options the scene is connected with (`UIScene.ConnectionOptions`).
public struct SceneConnectionOptions: Hashable, Sendable {
    /// The response to the notification the user opened to launch the app (`notificationResponse`);
    /// `nil` when the app was launched otherwise.
    public var notificationResponse: NotificationResponse?

    /// Creates options.
    public init(notificationResponse: NotificationResponse? = nil) { self.notificationResponse = notificationResponse }
}

/// The parts of an app's scene delegate and notification-centre delegate that the device calls, in
/// the order iOS calls them. Implement it to see each step; both methods have defaults.
///
/// - Foreground: a notification arrives → ``willPresent(_:)`` (app `.active`) → shown as its options
///   say → on a tap, the response goes to the app's `VisiblePushRouter` (`didReceive`, `.active`).
/// - Background: shown in the list → on a tap the app comes to the foreground (`.inactive`) → the
///   response goes to the router → `.active`.
/// - Terminated: shown in the list → on a tap the app launches (`.inactive`) →
///   ``sceneWillConnect(_:)`` with the response → the response goes to the router → `.active`.
///
/// `didReceive` is not a requirement: as in the seeds' delegate, every response goes to the app's
/// ``SimulatedApp/visibleRouter``.
public protocol SimulatedAppDelegate: Sendable {
    /// `scene(_:willConnectTo:options:)`: the app's scene connects as the app launches into the
    /// foreground (the app is `.inactive`). When the user launched it by opening a notification,
    /// `options.notificationResponse` holds the response, and the router gets it only after this returns.
    /// The default does nothing.
    func sceneWillConnect(_ options: SceneConnectionOptions) async

    /// `userNotificationCenter(_:willPresent:withCompletionHandler:)`: a notification arrives while
    /// the app is in the foreground (`.active`). The options returned (the completion handler's)
    /// decide: `.banner` shows it (and a tap can open it), `.list` puts it in the notification list,
    /// no banner and no list shows nothing. The default is banner, list, sound and badge.
    func willPresent(_ notification: DeliveredNotification) async -> PresentationOptions
}

extension SimulatedAppDelegate {
    public func sceneWillConnect(_ options: SceneConnectionOptions) async {}

    public func willPresent(_ notification: DeliveredNotification) async -> PresentationOptions {
        [.banner, .list, .sound, .badge]
    }
}

/// Whether the user allowed the app's notifications.
public enum NotificationAuthorization: Hashable, Sendable {
    /// Alerts are shown.
    case granted
    /// Alerts are silently not shown: no error reaches the app or the provider.
    case denied
}

/// How a notification arriving in the foreground is presented (`UNNotificationPresentationOptions`).
public struct PresentationOptions: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int

    /// Creates options from their raw value.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Show a banner.
    public static let banner = PresentationOptions(rawValue: 1 << 0)
    /// Play the sound.
    public static let sound = PresentationOptions(rawValue: 1 << 1)
    /// Set the badge.
    public static let badge = PresentationOptions(rawValue: 1 << 2)
    /// Put the notification in the notification list.
    public static let list = PresentationOptions(rawValue: 1 << 3)

    public var description: String {
        let names = [(Self.banner, "banner"), (Self.sound, "sound"), (Self.badge, "badge"), (Self.list, "list")]
            .filter { self.contains($0.0) }.map(\.1)
        return names.isEmpty ? "none" : names.joined(separator: "+")
    }
}

/// An action button of a notification category (`UNNotificationAction` / `UNTextInputNotificationAction`).
public struct NotificationCategoryAction: Hashable, Sendable {
    /// The action's identifier, reported in the response.
    public var identifier: String
    /// The button's title.
    public var title: String
    /// Whether the action asks for text (a text-input action); its response carries `userText`.
    public var isTextInput: Bool
    /// Whether the action brings the app to the foreground (`.foreground` option).
    public var opensApp: Bool

    /// Creates an action.
    public init(identifier: String, title: String, isTextInput: Bool = false, opensApp: Bool = false) {
        self.identifier = identifier
        self.title = title
        self.isTextInput = isTextInput
        self.opensApp = opensApp
    }
}

/// A notification category an app registered (`UNNotificationCategory`).
public struct NotificationCategory: Hashable, Sendable {
    /// The identifier payloads name in `aps.category`.
    public var identifier: String
    /// The action buttons.
    public var actions: [NotificationCategoryAction]
    /// Whether dismissing the notification sends the app a response (`.customDismissAction`).
    public var sendsDismissAction: Bool

    /// Creates a category.
    public init(identifier: String, actions: [NotificationCategoryAction] = [], sendsDismissAction: Bool = false) {
        self.identifier = identifier
        self.actions = actions
        self.sendsDismissAction = sendsDismissAction
    }
}
