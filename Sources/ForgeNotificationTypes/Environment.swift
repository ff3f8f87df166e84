internal import ForgeSupport

/// The network as a handler sees it when it runs.
public enum ConnectivityStatus: Hashable, Sendable {
    case wifi
    case cellular
    case wired
    case offline

    /// Whether any network is reachable.
    public var isConnected: Bool { self != .offline }
}

/// Reports the current connectivity (on iOS, an `NWPathMonitor`).
public protocol ConnectivityObserving: Sendable {
    /// The status now.
    var currentStatus: ConnectivityStatus { get }
}

/// Reports whether protected data (Keychain items, data-protected files) can be read now: not
/// while the device is locked after a restart.
public protocol ProtectedDataObserving: Sendable {
    /// Whether protected data is available now.
    var isProtectedDataAvailable: Bool { get }
}

/// A connectivity observer whose status a test or the simulated device sets.
public final class ManualConnectivityObserver: ConnectivityObserving {
    private let status: LockedBox<ConnectivityStatus>

    /// Creates an observer with `status`.
    public init(_ status: ConnectivityStatus = .wifi) { self.status = LockedBox(status) }

    public var currentStatus: ConnectivityStatus {
        get { self.status.withLock { $0 } }
        set { self.status.withLock { $0 = newValue } }
    }
}

/// A protected-data observer whose state a test or the simulated device sets.
public final class ManualProtectedDataObserver: ProtectedDataObserving {
    private let available: LockedBox<Bool>

    /// Creates an observer.
    public init(available: Bool = true) { self.available = LockedBox(available) }

    public var isProtectedDataAvailable: Bool {
        get { self.available.withLock { $0 } }
        set { self.available.withLock { $0 = newValue } }
    }
}

/// Where the app is when a handler runs, as `UIApplication.shared.applicationState` reports it.
///
/// An app's `didReceive` typically switches on it: `.active` when the user tapped a notification while the app
/// was on screen, `.inactive` when the tap brought the app to the foreground (from the background or
/// by launching it), `.background` for an action that does not open the app and for background pushes
/// to an app that is not on screen.
public enum ApplicationState: Hashable, Sendable, CustomStringConvertible {
    /// In the foreground and receiving events.
    case active
    /// In the foreground but not receiving events yet: while it launches or comes back to the foreground.
    case inactive
    /// Not on screen.
    case background

    public var description: String {
        switch self {
        case .active: return "active"
        case .inactive: return "inactive"
        case .background: return "background"
        }
    }
}

/// Reports the app's state (on iOS, `UIApplication.shared.applicationState`).
public protocol ApplicationStateObserving: Sendable {
    /// The state now.
    var applicationState: ApplicationState { get }
}

/// An application-state observer whose state a test or the simulated device sets.
public final class ManualApplicationStateObserver: ApplicationStateObserving {
    private let state: LockedBox<ApplicationState>

    /// Creates an observer with `state` (`.active` by default).
    public init(_ state: ApplicationState = .active) { self.state = LockedBox(state) }

    public var applicationState: ApplicationState {
        get { self.state.withLock { $0 } }
        set { self.state.withLock { $0 = newValue } }
    }
}

/// The outcome a background push handler reports (UIKit's `UIBackgroundFetchResult`).
public enum BackgroundFetchResult: Hashable, Sendable {
    case newData
    case noData
    case failed
}

/// Calls a completion handler at most once, whichever path gets there first.
package final class CompletionOnce<Value: Sendable>: Sendable {
    private let handler: LockedBox<(@Sendable (Value) -> Void)?>

    /// Wraps `handler`.
    package init(_ handler: @escaping @Sendable (Value) -> Void) { self.handler = LockedBox(handler) }

    /// Calls the handler with `value` if it has not been called yet.
    /// - Returns: whether this call was the one that ran it.
    @discardableResult
    package func complete(_ value: Value) -> Bool {
        let handler = self.handler.withLock { stored -> (@Sendable (Value) -> Void)? in
            defer { stored = nil }
            return stored
        }
        handler?(value)
        return handler != nil
    }
}
