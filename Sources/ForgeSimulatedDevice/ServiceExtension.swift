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
///
/// iOS runs the extension only for alerts with `mutable-content: 1`. A plain alert to an app with an
/// extension is normal (most alerts need no change), so the device reports
/// ``DeviceEvent/serviceExtensionNotRun(bundleID:identifier:reason:)`` (the guide's common mistake 5)
/// only where the alert wanted the extension: it carries one of ``payloadKeys`` (say the attachment
/// URL key the extension downloads), or ``isRequiredForEveryAlert`` says every alert needs it.
public struct ServiceExtension: Sendable {
    /// How long the extension may run before the time-will-expire path; `nil` means only
    /// ``SimulatedDevice/expireServiceExtensions()`` ends it (deterministic tests).
    public var timeLimit: Duration?
    /// The custom payload keys only the extension acts on (an attachment URL such as `image_url`, a
    /// ciphertext): an alert that carries one without `mutable-content: 1` is reported as not run.
    public var payloadKeys: Set<String>
    /// Whether every alert to the app needs the extension (all content is encrypted, say): any alert
    /// without `mutable-content: 1` is reported as not run.
    public var isRequiredForEveryAlert: Bool
    /// The extension's `didReceive`.
    public var didReceive: @Sendable (NotificationRequest, NotificationServiceManager) -> Void

    /// Creates an extension.
    /// - Parameters:
    ///   - timeLimit: the time before the time-will-expire path; 30 s as on iOS; `nil` for a manual trigger only.
    ///   - payloadKeys: the custom keys only the extension acts on; none by default.
    ///   - isRequiredForEveryAlert: whether every alert needs the extension; `false` by default.
    ///   - didReceive: edits the content and completes the manager.
    public init(
        timeLimit: Duration? = .seconds(30),
        payloadKeys: Set<String> = [],
        isRequiredForEveryAlert: Bool = false,
        didReceive: @escaping @Sendable (NotificationRequest, NotificationServiceManager) -> Void
    ) {
        self.timeLimit = timeLimit
        self.payloadKeys = payloadKeys
        self.isRequiredForEveryAlert = isRequiredForEveryAlert
        self.didReceive = didReceive
    }

    /// Why an alert without `mutable-content: 1` wanted this extension; `nil` when it did not.
    func reasonToRun(_ payload: JSONValue) -> String? {
        if self.isRequiredForEveryAlert { return "every alert to the app needs its service extension" }
        let keys = self.payloadKeys.filter { payload[$0] != nil }.sorted()
        guard !keys.isEmpty else { return nil }
        return "it carries \(keys.joined(separator: ", ")), which only the service extension acts on"
    }
}
