public import ForgeNotificationTypes
public import ForgeSilentPush
public import ForgeVisiblePush
internal import ForgeSupport

/// An app installed on a ``SimulatedDevice``: its tokens, its settings and state, the routers that
/// stand in for its delegates, and the scene and notification-centre hooks UIKit calls.
///
/// Tests add handlers to ``silentRouter`` and ``visibleRouter``, set a ``delegate`` to see the scene
/// connect and decide foreground presentation, and change the state (``state``, ``authorization``,
/// ``forceQuit()``) between pushes. The device sets ``applicationState`` at each step as iOS would,
/// and the routers' handlers read it from their context. Thread-safe.
public final class SimulatedApp: Sendable {
    private struct State {
        var appState: AppState
        var applicationState: ApplicationState
        var isForceQuit = false
        var authorization: NotificationAuthorization
        var categories: [NotificationCategory]
        var isDelegateSetBeforeLaunch: Bool
        var pushToStartToken: String?
        var activityTypes: [String: LiveActivityType] = [:]
        var foregroundPresentation: PresentationOptions
        var delegate: (any SimulatedAppDelegate)?
        var supportsFrequentUpdates: Bool
        var activityReporting: ActivityReporting?
        var reportSequence: Int64 = 0
    }

    /// The routers' view of ``SimulatedApp/applicationState``.
    private struct ApplicationStateReader: ApplicationStateObserving {
        let read: @Sendable () -> ApplicationState
        var applicationState: ApplicationState { self.read() }
    }

    /// The app's bundle identifier (the push topic).
    public let bundleID: String
    /// The device token per environment, lower-case hex.
    public let deviceTokens: [DeviceEnvironment: String]
    /// The app's notification service extension, if it has one.
    public let serviceExtension: ServiceExtension?
    /// Stands in for `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`.
    public let silentRouter: SilentPushRouter
    /// Stands in for `userNotificationCenter(_:didReceive:withCompletionHandler:)`: every response
    /// the user gives goes here.
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
    ///   - foregroundPresentation: how a notification arriving in the foreground is presented when
    ///     the app has no ``delegate``.
    ///   - delegate: the scene and notification-centre hooks; `nil` presents with `foregroundPresentation`.
    ///   - supportsFrequentUpdates: whether the app's Info.plist sets
    ///     `NSSupportsLiveActivitiesFrequentUpdates` (and the user left it on): its Live Activities
    ///     get the larger priority-10 budget (``DeviceRules/frequentLiveActivityUpdates``).
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
        foregroundPresentation: PresentationOptions = [.banner, .sound, .badge, .list],
        delegate: (any SimulatedAppDelegate)? = nil,
        supportsFrequentUpdates: Bool = false
    ) {
        self.bundleID = bundleID
        self.deviceTokens = deviceTokens.mapValues { $0.lowercased() }
        self.serviceExtension = serviceExtension
        var types: [String: LiveActivityType] = [:]
        for type in activityTypes { types[type.attributesType] = type }
        let storage = LockedBox(
            State(
                appState: state, applicationState: state.applicationState, authorization: authorization,
                categories: categories, isDelegateSetBeforeLaunch: isDelegateSetBeforeLaunch,
                pushToStartToken: pushToStartToken?.lowercased(), activityTypes: types,
                foregroundPresentation: foregroundPresentation, delegate: delegate, supportsFrequentUpdates: supportsFrequentUpdates
            )
        )
        self.storage = storage
        let connectivity = ManualConnectivityObserver()
        let protectedData = ManualProtectedDataObserver()
        let applicationState = ApplicationStateReader { storage.withLock { $0.applicationState } }
        self.connectivity = connectivity
        self.protectedData = protectedData
        self.silentRouter = SilentPushRouter(
            connectivity: connectivity, protectedData: protectedData, applicationState: applicationState
        )
        self.visibleRouter = VisiblePushRouter(
            connectivity: connectivity, protectedData: protectedData, applicationState: applicationState
        )
    }

    /// Where the app is in its life cycle. Setting `.foreground` or `.background` clears the force-quit
    /// flag; setting it also sets ``applicationState`` (`.active` in the foreground, else `.background`).
    public var state: AppState {
        get { self.storage.withLock { $0.appState } }
        set { self.enter(newValue, as: newValue.applicationState) }
    }

    /// What `UIApplication.shared.applicationState` says now: what the routers' handlers see in their
    /// context. The device sets it at each step as iOS would: `.inactive` while a tap on a
    /// notification brings the app to the foreground (launching it or from the background) until
    /// the response is handled, `.active` in the foreground, `.background` otherwise.
    public var applicationState: ApplicationState { self.storage.withLock { $0.applicationState } }

    /// The app's scene and notification-centre hooks; `nil` presents foreground
    /// notifications with the options given at creation or by ``setForegroundPresentation(_:)``.
    public var delegate: (any SimulatedAppDelegate)? {
        get { self.storage.withLock { $0.delegate } }
        set { self.storage.withLock { $0.delegate = newValue } }
    }

    /// Whether the user force-quit the app (swiped it away): background pushes are not delivered
    /// until the user launches it again.
    public var isForceQuit: Bool { self.storage.withLock { $0.isForceQuit } }

    /// The user swipes the app away in the app switcher.
    public func forceQuit() {
        self.storage.withLock { state in
            state.appState = .notRunning
            state.applicationState = .background
            state.isForceQuit = true
        }
    }

    /// The user opens the app from the home screen: foreground and active, no longer force-quit.
    public func launch() { self.enter(.foreground, as: .active) }

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

    /// Whether the app supports frequent Live Activity updates (`NSSupportsLiveActivitiesFrequentUpdates`).
    public var supportsFrequentUpdates: Bool {
        get { self.storage.withLock { $0.supportsFrequentUpdates } }
        set { self.storage.withLock { $0.supportsFrequentUpdates = newValue } }
    }

    /// How the app reports its Live Activity tokens and ends to its backend (``ActivityTokenReport``);
    /// `nil` (the default): it does not. Set it before installing the app: the install reports its
    /// push-to-start token.
    public var activityReporting: ActivityReporting? {
        get { self.storage.withLock { $0.activityReporting } }
        set { self.storage.withLock { $0.activityReporting = newValue } }
    }

    /// The attributes types the app registered, sorted.
    package var activityTypeNames: [String] { self.storage.withLock { $0.activityTypes.keys.sorted() } }

    /// The reporting and the next report's sequence number, when the app reports.
    func nextReport() -> (ActivityReporting, Int64)? {
        self.storage.withLock { state in
            guard let reporting = state.activityReporting else { return nil }
            state.reportSequence += 1
            return (reporting, state.reportSequence)
        }
    }

    /// Registers a Live Activity type (replacing one with the same `attributesType`).
    public func registerActivityType(_ type: LiveActivityType) {
        self.storage.withLock { $0.activityTypes[type.attributesType] = type }
    }

    /// Sets how a notification arriving in the foreground is presented when the app has no ``delegate``.
    public func setForegroundPresentation(_ options: PresentationOptions) {
        self.storage.withLock { $0.foregroundPresentation = options }
    }

    // MARK: For the device

    func activityType(named name: String) -> LiveActivityType? { self.storage.withLock { $0.activityTypes[name] } }

    func category(named identifier: String) -> NotificationCategory? {
        self.storage.withLock { $0.categories.first { $0.identifier == identifier } }
    }

    /// The will-present decision: the delegate's, else the fixed options.
    func presentationOptions(for notification: DeliveredNotification) async -> PresentationOptions {
        let (delegate, options) = self.storage.withLock { ($0.delegate, $0.foregroundPresentation) }
        guard let delegate else { return options }
        return await delegate.willPresent(notification)
    }

    /// Moves the app to `state`, with `applicationState` as what its handlers see; leaving
    /// `.notRunning` clears the force-quit flag.
    func enter(_ state: AppState, as applicationState: ApplicationState) {
        self.storage.withLock { stored in
            stored.appState = state
            stored.applicationState = applicationState
            if state != .notRunning { stored.isForceQuit = false }
        }
    }

    /// Whether `token` is one of this app's device tokens (for `environment`, when given).
    func ownsDeviceToken(_ token: String, environment: DeviceEnvironment?) -> Bool {
        if let environment { return self.deviceTokens[environment] == token }
        return self.deviceTokens.values.contains(token)
    }
}
