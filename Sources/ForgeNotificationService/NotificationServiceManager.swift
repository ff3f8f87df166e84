public import ForgeNotificationTypes
internal import ForgeSupport

/// A notification's content that a service extension and the tasks it starts edit concurrently
/// (`UNMutableNotificationContent`). Thread-safe.
public final class MutableNotificationContent: Sendable {
    private let content: LockedBox<NotificationContent>

    /// Copies `content`.
    public init(_ content: NotificationContent) { self.content = LockedBox(content) }

    /// The content now.
    public var current: NotificationContent { self.content.withLock { $0 } }

    /// Edits the content under the lock.
    public func update(_ change: (inout NotificationContent) -> Void) { self.content.withLock { change(&$0) } }
}

/// Helps write a notification service extension: holds the request and the content handler, counts
/// the asynchronous tasks the extension starts, and delivers the (possibly modified) content exactly
/// once: when the last task ends after ``complete(forces:)`` with `false`, or at once with `true`
/// (the extension's time-will-expire path).
///
/// ```swift
/// guard let manager = NotificationServiceManager(request: request, contentHandler: contentHandler) else { return }
/// manager.wait()
/// downloadImage { file in
///     manager.mutableContent.update { $0.attachments = [file] }
///     manager.notify()
/// }
/// manager.complete(forces: false)          // before returning from didReceive
/// // serviceExtensionTimeWillExpire: manager.complete(forces: true)
/// ```
///
/// - Important: Unlike the seed's wording ("if complete() has already been called, it is a no-op"),
///   `complete(forces: true)` after `complete(forces: false)` still delivers at once if the content
///   has not been delivered yet: otherwise the time-will-expire path could never deliver while a task
///   hangs. A second `complete(forces: false)`, `wait()` after completion was asked for, and
///   `notify()` at zero are no-ops. Thread-safe.
public final class NotificationServiceManager: Sendable, CustomDebugStringConvertible {
    private struct State {
        var pending = 0
        var completionRequested = false
        var handler: (@Sendable (NotificationContent) -> Void)?
    }

    /// The request that started the extension.
    public let request: NotificationRequest
    /// The content to edit before it is delivered.
    public let mutableContent: MutableNotificationContent
    private let state: LockedBox<State>

    /// Creates a manager in `didReceive(_:withContentHandler:)`.
    ///
    /// Returns `nil` when the request's payload lacks `aps.mutable-content: 1`: iOS runs no service
    /// extension for it, so there is nothing to manage.
    public init?(request: NotificationRequest, contentHandler: @escaping @Sendable (NotificationContent) -> Void) {
        guard request.content.userInfo["aps"]?["mutable-content"]?.intValue == 1 else { return nil }
        self.request = request
        self.mutableContent = MutableNotificationContent(request.content)
        self.state = LockedBox(State(handler: contentHandler))
    }

    /// Marks that an asynchronous task is about to start (no-op once completion was asked for).
    public func wait() {
        self.state.withLock { state in
            guard !state.completionRequested else { return }
            state.pending += 1
        }
    }

    /// Marks that an asynchronous task ended; delivers if it was the last and completion was asked for.
    public func notify() {
        let handler = self.state.withLock { state -> (@Sendable (NotificationContent) -> Void)? in
            guard state.pending > 0 else { return nil }
            state.pending -= 1
            guard state.pending == 0, state.completionRequested else { return nil }
            return Self.take(&state)
        }
        handler?(self.mutableContent.current)
    }

    /// Asks to deliver: now if no task runs or `forces` is `true`, else when the last task ends.
    public func complete(forces: Bool) {
        let handler = self.state.withLock { state -> (@Sendable (NotificationContent) -> Void)? in
            if state.completionRequested && !forces { return nil }
            state.completionRequested = true
            guard forces || state.pending == 0 else { return nil }
            return Self.take(&state)
        }
        handler?(self.mutableContent.current)
    }

    /// Whether the content handler has been called.
    public var isDelivered: Bool { self.state.withLock { $0.handler == nil } }

    public var debugDescription: String {
        let state = self.state.withLock { ($0.pending, $0.completionRequested, $0.handler == nil) }
        let phase = state.2 ? "delivered" : (state.1 ? "completing" : "running")
        return "NotificationServiceManager(request: \(self.request.identifier), pending tasks: \(state.0), \(phase))"
    }

    private static func take(_ state: inout State) -> (@Sendable (NotificationContent) -> Void)? {
        defer { state.handler = nil }
        return state.handler
    }
}
