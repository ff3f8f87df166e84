public import ForgeNotificationTypes
public import ForgeSilentPush
public import ForgeVisiblePush
internal import ForgeSupport

/// An app installed on a ``SimulatedDevice``: its tokens, its settings and state, and the routers
/// that stand in for its delegates.
///
/// Tests add handlers to ``silentRouter`` and ``visibleRouter`` and change the state (``state``,
/// ``authorization``, ``forceQuit()``) between pushes. Thread-safe.
public final class SimulatedApp: Sendable {
    private struct State {
        var appState: AppState
        var isForceQuit = false
        var authorization: NotificationAuthorization
        var categories: [NotificationCategory]
        var isDelegateSetBeforeLaunch: Bool
        var pushToStartToken: String?
        var activityTypes: [String: LiveActivityType] = [:]
        var willPresent: @Sendable (DeliveredNotification) -> PresentationOptions
    }

    /// The app's bundle identifier (the push topic).
    public let bundleID: String
    /// The device token per environment, lower-case hex.
    public let deviceTokens: [DeviceEnvironment: String]
    /// The app's notification service extension, if it has one.
    public let serviceExtension: ServiceExtension?
    /// Stands in for `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`.
    public let silentRouter: SilentPushRouter
    /// Stands in for `userNotificationCenter(_:didReceive:withCompletionHandler:)`.
    public let visibleRouter: VisiblePushRouter
    /// The connectivity the routers' handlers see.
    public let connectivity: ManualConnectivityObserver
    /// Whether protected data is available, as the routers' handlers see it.
    public let protectedData: ManualProtectedDataObserver
    private let storage: LockedBox<State>

    /// Creates an app.
    /// - Parameters:
    ///   - bundleID: the bundle identifier.
    ///   - deviceTokens: the device token per environment (any case; stored lower-cased).
    ///   - state: where the app is in its life cycle; not running by default.
    ///   - authorization: whether the user allowed notifications; granted by default.
    ///   - categories: the registered notification categories.
    ///   - serviceExtension: the notification service extension, if any.
    ///   - isDelegateSetBeforeLaunch: whether the app sets the notification centre delegate before
    ///     it finishes launching; when `false`, the response that launches it is lost.
    ///   - pushToStartToken: the Live Activity push-to-start token, if the app has one.
    ///   - activityTypes: the Live Activity types the app can show.
    ///   - foregroundPresentation: the will-present decision in the foreground.
    public init(
        bundleID: String,
        deviceTokens: [DeviceEnvironment: String],
        state: AppState = .notRunning,
        authorization: NotificationAuthorization = .granted,
        categories: [NotificationCategory] = [],
        serviceExtension: ServiceExtension? = nil,
        isDelegateSetBeforeLaunch: Bool = true,
        pushToStartToken: String? = nil,
        activityTypes: [LiveActivityType] = [],
        foregroundPresentation: PresentationOptions = [.banner, .sound, .badge, .list]
    ) {
        self.bundleID = bundleID
        self.deviceTokens = deviceTokens.mapValues { $0.lowercased() }
        self.serviceExtension = serviceExtension
        let connectivity = ManualConnectivityObserver()
        let protectedData = ManualProtectedDataObserver()
        self.connectivity = connectivity
        self.protectedData = protectedData
        self.silentRouter = SilentPushRouter(connectivity: connectivity, protectedData: protectedData)
        self.visibleRouter = VisiblePushRouter(connectivity: connectivity, protectedData: protectedData)
        var types: [String: LiveActivityType] = [:]
        for type in activityTypes { types[type.attributesType] = type }
        self.storage = LockedBox(
            State(
                appState: state, authorization: authorization, categories: categories,
                isDelegateSetBeforeLaunch: isDelegateSetBeforeLaunch, pushToStartToken: pushToStartToken?.lowercased(),
                activityTypes: types, willPresent: { _ in foregroundPresentation }
            )
        )
    }

    /// Where the app is in its life cycle. Setting `.foreground` or `.background` clears the force-quit flag.
    public var state: AppState {
        get { self.storage.withLock { $0.appState } }
        set {
            self.storage.withLock { state in
                state.appState = newValue
                if newValue != .notRunning { state.isForceQuit = false }
            }
        }
    }

    /// Whether the user force-quit the app (swiped it away): background pushes are not delivered
    /// until the user launches it again.
    public var isForceQuit: Bool { self.storage.withLock { $0.isForceQuit } }

    /// The user swipes the app away in the app switcher.
    public func forceQuit() {
        self.storage.withLock { state in
            state.appState = .notRunning
            state.isForceQuit = true
        }
    }

    /// The user opens the app from the home screen: foreground, no longer force-quit.
    public func launch() {
        self.storage.withLock { state in
            state.appState = .foreground
            state.isForceQuit = false
        }
    }

    /// Whether the user allowed the app's notifications.
    public var authorization: NotificationAuthorization {
        get { self.storage.withLock { $0.authorization } }
        set { self.storage.withLock { $0.authorization = newValue } }
    }

    /// The registered notification categories.
    public var categories: [NotificationCategory] {
        get { self.storage.withLock { $0.categories } }
        set { self.storage.withLock { $0.categories = newValue } }
    }

    /// Whether the app sets the notification centre delegate before it finishes launching.
    public var isDelegateSetBeforeLaunch: Bool {
        get { self.storage.withLock { $0.isDelegateSetBeforeLaunch } }
        set { self.storage.withLock { $0.isDelegateSetBeforeLaunch = newValue } }
    }

    /// The Live Activity push-to-start token, lower-case hex.
    public var pushToStartToken: String? {
        get { self.storage.withLock { $0.pushToStartToken } }
        set { self.storage.withLock { $0.pushToStartToken = newValue?.lowercased() } }
    }

    /// Registers a Live Activity type (replacing one with the same `attributesType`).
    public func registerActivityType(_ type: LiveActivityType) {
        self.storage.withLock { $0.activityTypes[type.attributesType] = type }
    }

    /// Sets the will-present decision to a fixed set of options.
    public func setForegroundPresentation(_ options: PresentationOptions) {
        self.storage.withLock { $0.willPresent = { _ in options } }
    }

    /// Sets the will-present decision (`userNotificationCenter(_:willPresent:withCompletionHandler:)`).
    public func setForegroundPresentation(_ decide: @escaping @Sendable (DeliveredNotification) -> PresentationOptions) {
        self.storage.withLock { $0.willPresent = decide }
    }

    // MARK: For the device

    func activityType(named name: String) -> LiveActivityType? { self.storage.withLock { $0.activityTypes[name] } }

    func category(named identifier: String) -> NotificationCategory? {
        self.storage.withLock { $0.categories.first { $0.identifier == identifier } }
    }

    func presentationOptions(for notification: DeliveredNotification) -> PresentationOptions {
        let decide = self.storage.withLock { $0.willPresent }
        return decide(notification)
    }

    /// Whether `token` is one of this app's device tokens (for `environment`, when given).
    func ownsDeviceToken(_ token: String, environment: DeviceEnvironment?) -> Bool {
        if let environment { return self.deviceTokens[environment] == token }
        return self.deviceTokens.values.contains(token)
    }
}
