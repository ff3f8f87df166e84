public import ForgeNotificationService
public import ForgeNotificationTypes

/// An app's notification service extension (`UNNotificationServiceExtension`), built on
/// ``NotificationServiceManager``.
///
/// `didReceive` plays `didReceive(_:withContentHandler:)`: it gets the request and a manager, edits
/// `manager.mutableContent`, and calls `manager.complete(forces: false)` (after `wait()` / `notify()`
/// around any tasks it starts). When the time limit runs out (or a test calls
/// ``SimulatedDevice/expireServiceExtensions()``), the device calls `manager.complete(forces: true)`,
/// the time-will-expire path, and shows the best-attempt content.
public struct ServiceExtension: Sendable {
    /// How long the extension may run before the time-will-expire path; `nil` means only
    /// ``SimulatedDevice/expireServiceExtensions()`` ends it (deterministic tests).
    public var timeLimit: Duration?
    /// The extension's `didReceive`.
    public var didReceive: @Sendable (NotificationRequest, NotificationServiceManager) -> Void

    /// Creates an extension.
    /// - Parameters:
    ///   - timeLimit: the time before the time-will-expire path; 30 s as on iOS; `nil` for a manual trigger only.
    ///   - didReceive: edits the content and completes the manager.
    public init(
        timeLimit: Duration? = .seconds(30),
        didReceive: @escaping @Sendable (NotificationRequest, NotificationServiceManager) -> Void
    ) {
        self.timeLimit = timeLimit
        self.didReceive = didReceive
    }
}
