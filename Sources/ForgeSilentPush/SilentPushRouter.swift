public import ForgeNotificationTypes

/// Handles one kind of background (`content-available`) push.
public protocol SilentPushHandler: Sendable {
    /// Unique identifier for this handler, for logging and deduplication.
    var id: String { get }

    /// Whether this handler processes `payload`.
    func matchesPayload(_ payload: JSONValue) -> Bool

    /// Processes the payload and reports the fetch outcome.
    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult
}

/// What a handler knows of the device when it runs.
public struct SilentPushContext: Sendable {
    /// Network connectivity at dispatch time.
    public let connectivity: ConnectivityStatus
    /// Whether protected data (Keychain, data-protected files) is readable at dispatch time.
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

/// A handler's outcome.
public enum SilentPushResult: Hashable, Sendable {
    /// The handler fetched new content.
    case newData
    /// The handler ran and found nothing new.
    case noData
    /// The handler failed.
    case failed

    /// The value for the system's completion handler.
    public var backgroundFetchResult: BackgroundFetchResult {
        switch self {
        case .newData: return .newData
        case .noData: return .noData
        case .failed: return .failed
        }
    }

    /// Merges the results of every handler that ran: any `newData` wins; otherwise any `failed`;
    /// otherwise (all `noData`, or no handler matched) `noData`.
    public static func aggregate(_ results: some Sequence<SilentPushResult>) -> SilentPushResult {
        var sawFailure = false
        for result in results {
            switch result {
            case .newData: return .newData
            case .failed: sawFailure = true
            case .noData: break
            }
        }
        return sawFailure ? .failed : .noData
    }
}

/// Routes background pushes to every matching handler, concurrently, and merges their results.
///
/// ```swift
/// let router = SilentPushRouter(connectivity: connectivityObserver, protectedData: protectedDataObserver)
/// router.addHandler(TaskSyncHandler())
/// let result = await router.handlePush(payload: payload)
/// ```
///
/// Handler ids are unique: adding a handler whose id is already registered is refused (it returns
/// `false` and the first handler stays), so a handler can never be replaced by accident. Handlers can
/// be added and removed while pushes are handled; each push uses the handlers registered when it arrived.
public final class SilentPushRouter: Sendable {
    private let handlers = HandlerRegistry<any SilentPushHandler>()
    private let connectivity: any ConnectivityObserving
    private let protectedData: any ProtectedDataObserving
    private let applicationState: any ApplicationStateObserving

    /// Creates a router that reads the device's state from the observers at each dispatch.
    /// - Parameters:
    ///   - connectivity: the network, for ``SilentPushContext/connectivity``.
    ///   - protectedData: whether protected data is readable, for ``SilentPushContext/protectedDataAvailable``.
    ///   - applicationState: the app's state, for ``SilentPushContext/applicationState``; always `.active` by default.
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
    public func addHandler(_ handler: any SilentPushHandler) -> Bool {
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

    /// Runs every handler that matches `payload` concurrently and merges their results.
    public func handlePush(payload: JSONValue) async -> SilentPushResult {
        let matching = self.handlers.snapshot.filter { $0.matchesPayload(payload) }
        guard !matching.isEmpty else { return .noData }
        let context = SilentPushContext(
            connectivity: self.connectivity.currentStatus,
            protectedDataAvailable: self.protectedData.isProtectedDataAvailable,
            applicationState: self.applicationState.applicationState
        )
        let results = await withTaskGroup(of: SilentPushResult.self) { group in
            for handler in matching {
                group.addTask { await handler.handle(payload, context: context) }
            }
            var results: [SilentPushResult] = []
            for await result in group { results.append(result) }
            return results
        }
        return SilentPushResult.aggregate(results)
    }

    /// The completion-handler variant of ``handlePush(payload:)``, for a UIKit-style delegate.
    ///
    /// `completionHandler` is called exactly once, with the merged result, however long the handlers
    /// take and even if the router is released meanwhile (the work holds what it needs).
    /// - Note: The work runs in a new top-level task that nothing awaits, as the seed specifies (the
    ///   variant "manages the Task internally" because UIKit's delegate method is synchronous). Prefer the
    ///   async variant where the caller can await; the simulated device does.
    public func handlePush(
        payload: JSONValue,
        completionHandler: @escaping @Sendable (BackgroundFetchResult) -> Void
    ) {
        let once = CompletionOnce(completionHandler)
        Task { [self] in
            let result = await self.handlePush(payload: payload)
            once.complete(result.backgroundFetchResult)
        }
    }
}
