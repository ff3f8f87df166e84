public import ForgeNotificationTypes

/// Handles one kind of response to a visible notification: a tap, a dismissal, a custom action.
public protocol VisiblePushHandler: Sendable {
    /// Unique identifier for this handler, for logging and deduplication.
    var id: String { get }

    /// Whether this handler processes `response`.
    func matches(_ response: NotificationResponse) -> Bool

    /// Acts on the response (navigate, update state).
    func handle(_ response: NotificationResponse, context: VisiblePushContext) async
}

/// What a handler knows of the device when it runs.
public struct VisiblePushContext: Sendable {
    /// Network connectivity at dispatch time.
    public let connectivity: ConnectivityStatus
    /// Whether protected data is readable at dispatch time.
    public let protectedDataAvailable: Bool
    /// The app's state at dispatch time (`UIApplication.shared.applicationState`).
    public let applicationState: ApplicationState

    /// Creates a context.
    public init(connectivity: ConnectivityStatus, protectedDataAvailable: Bool, applicationState: ApplicationState = .active) {
        self.connectivity = connectivity
        self.protectedDataAvailable = protectedDataAvailable
        self.applicationState = applicationState
    }
}

/// Routes notification responses to every matching handler, concurrently.
///
/// Handler ids are unique: adding a handler whose id is already registered is refused (it returns
/// `false`). Handlers can be added and removed while responses are handled.
public final class VisiblePushRouter: Sendable {
    private let handlers = HandlerRegistry<any VisiblePushHandler>()
    private let connectivity: any ConnectivityObserving
    private let protectedData: any ProtectedDataObserving
    private let applicationState: any ApplicationStateObserving

    /// Creates a router that reads the device's state from the observers at each dispatch.
    /// - Parameters:
    ///   - connectivity: the network, for ``VisiblePushContext/connectivity``.
    ///   - protectedData: whether protected data is readable, for ``VisiblePushContext/protectedDataAvailable``.
    ///   - applicationState: the app's state, for ``VisiblePushContext/applicationState``; always `.active` by default.
    public init(
        connectivity: any ConnectivityObserving, protectedData: any ProtectedDataObserving,
        applicationState: any ApplicationStateObserving = ManualApplicationStateObserver()
    ) {
        self.connectivity = connectivity
        self.protectedData = protectedData
        self.applicationState = applicationState
    }

    /// Registers a handler.
    /// - Returns: `false` when a handler with the same id is already registered (nothing changes).
    @discardableResult
    public func addHandler(_ handler: any VisiblePushHandler) -> Bool {
        self.handlers.add(handler, id: handler.id)
    }

    /// Removes the handler with `id`.
    /// - Returns: whether one was registered.
    @discardableResult
    public func removeHandler(_ id: String) -> Bool {
        self.handlers.remove(id: id)
    }

    /// The ids of the registered handlers, in registration order.
    public var handlerIDs: [String] { self.handlers.ids }

    /// Runs every handler that matches `response` concurrently; returns when all have finished.
    /// - Returns: the ids of the handlers that ran.
    @discardableResult
    public func handleResponse(_ response: NotificationResponse) async -> [String] {
        let matching = self.handlers.snapshot.filter { $0.matches(response) }
        guard !matching.isEmpty else { return [] }
        let context = VisiblePushContext(
            connectivity: self.connectivity.currentStatus,
            protectedDataAvailable: self.protectedData.isProtectedDataAvailable,
            applicationState: self.applicationState.applicationState
        )
        await withTaskGroup(of: Void.self) { group in
            for handler in matching {
                group.addTask { await handler.handle(response, context: context) }
            }
        }
        return matching.map(\.id)
    }

    /// The completion-handler variant of ``handleResponse(_:)``: `completionHandler` is called exactly
    /// once, after every matching handler has finished.
    /// - Note: The work runs in a new top-level task that nothing awaits, as the seed specifies (the
    ///   UserNotifications delegate method is synchronous). Prefer the async variant where the caller
    ///   can await; the simulated device does.
    public func handleResponse(_ response: NotificationResponse, completionHandler: @escaping @Sendable () -> Void) {
        let once = CompletionOnce<Void> { _ in completionHandler() }
        Task { [self] in
            await self.handleResponse(response)
            once.complete(())
        }
    }
}
