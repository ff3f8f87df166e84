internal import ForgeAPNsCore
internal import ForgeNotificationService
internal import ForgeNotificationTypes
internal import ForgeSilentPush
internal import ForgeSimulatedDevice
internal import ForgeVisiblePush
internal import Foundation

/// The app the scenarios install on the simulated device: a chat app with a delivery tracker. A
/// template for your own: each part stands in for a piece of an iOS app.
///
/// - Scene and notification-centre delegate: ``ChatAppDelegate`` notes the scene connecting and the
///   foreground presentation it chooses.
/// - Visible pushes (`didReceive`): ``OpenMessageHandler`` opens the message a tapped notification
///   is about, noting the application state it ran in.
/// - Background pushes: ``InboxSyncHandler`` and ``BadgeCountHandler`` both handle `inbox_sync`.
/// - Its notification service extension (``ChatApp/serviceExtension(recorder:)``) unseals an
///   end-to-end encrypted message: the title names the sender, the body is the decoded text. Every
///   alert carrying `sealed` needs it.
/// - Live Activities of type ``DeliveryAttributes``.
///
/// Every handler reports what it did to the ``ScenarioRecorder``, so the timeline shows the app's side.
enum ChatApp {
    /// The bundle id (the push topic).
    static let bundleID = "com.example.forgepush"
    /// The custom key naming what a push is about.
    static let typeKey = "type"

    /// The app, with its handlers registered, its extension and its Live Activity type.
    static func make(deviceToken: String, pushToStartToken: String, recorder: ScenarioRecorder) -> SimulatedApp {
        let app = SimulatedApp(
            bundleID: Self.bundleID, deviceTokens: [.sandbox: deviceToken], state: .background,
            serviceExtension: Self.serviceExtension(recorder: recorder), pushToStartToken: pushToStartToken,
            activityTypes: [
                LiveActivityType(attributesType: DeliveryAttributes.typeName, attributes: DeliveryAttributes.self,
                                 contentState: DeliveryAttributes.ContentState.self)
            ],
            delegate: ChatAppDelegate(recorder: recorder)
        )
        app.visibleRouter.addHandler(OpenMessageHandler(recorder: recorder))
        app.silentRouter.addHandler(InboxSyncHandler(recorder: recorder))
        app.silentRouter.addHandler(BadgeCountHandler(recorder: recorder))
        return app
    }

    /// The notification service extension: replaces the placeholder title and body of a sealed
    /// message with its sender and its decoded text, then completes.
    static func serviceExtension(recorder: ScenarioRecorder) -> ServiceExtension {
        // A limit only as a safety net: this extension always completes at once. A sealed message
        // without mutable-content would show "(encrypted)": the device reports it.
        ServiceExtension(timeLimit: .seconds(10), payloadKeys: [SealedMessage.CodingKeys.sealed.rawValue]) { request, manager in
            let userInfo = request.content.userInfo
            guard let sealed = userInfo[SealedMessage.CodingKeys.sealed.rawValue]?.stringValue,
                let text = SealedMessage.unseal(sealed),
                let sender = userInfo[SealedMessage.CodingKeys.sender.rawValue]?.stringValue
            else {
                recorder.note(handler: "service-extension", "nothing to unseal; content left as sent")
                manager.complete(forces: false)
                return
            }
            manager.mutableContent.update { content in
                content.title = SealedMessage.title(sender: sender)
                content.body = text
            }
            recorder.note(handler: "service-extension", "unsealed \(sealed.utf8.count) bytes from \(sender)")
            manager.complete(forces: false)
        }
    }
}

/// The custom keys of a chat message alert.
struct MessagePayload: Encodable, Sendable {
    var type = "message"
    var messageID: String

    enum CodingKeys: String, CodingKey {
        case type
        case messageID = "message_id"
    }
}

/// The custom keys of an end-to-end encrypted message: the service extension shows the sender and
/// the text instead of the placeholder alert.
struct SealedMessage: Encodable, Sendable {
    var type = "message"
    var sender: String
    var sealed: String

    enum CodingKeys: String, CodingKey {
        case type, sender, sealed
    }

    /// Seals `text` (base64 stands in for the real cipher).
    init(sender: String, text: String) {
        self.sender = sender
        self.sealed = Data(text.utf8).base64EncodedString()
    }

    /// The text of a sealed message, or `nil` when it is not one.
    static func unseal(_ sealed: String) -> String? {
        Data(base64Encoded: sealed).flatMap { String(data: $0, encoding: .utf8) }
    }

    /// The title the extension gives a message from `sender`.
    static func title(sender: String) -> String { "From \(sender)" }
}

/// The custom keys of a background inbox sync.
struct InboxSyncPayload: Encodable, Sendable {
    var type = "inbox_sync"
    var newMessages: Int

    enum CodingKeys: String, CodingKey {
        case type
        case newMessages = "new_messages"
    }
}

/// A food delivery's Live Activity attributes.
struct DeliveryAttributes: Codable, Sendable {
    /// The `attributes-type` name.
    static let typeName = "DeliveryAttributes"

    var orderNumber: String

    /// What changes while the order travels.
    struct ContentState: Codable, Sendable, Equatable {
        var status: String
        var etaMinutes: Int
    }
}

/// Opens the message a tapped notification is about.
struct OpenMessageHandler: VisiblePushHandler {
    static let handlerID = "open-message"
    let id = Self.handlerID
    let recorder: ScenarioRecorder

    func matches(_ response: NotificationResponse) -> Bool {
        response.notification.request.content.userInfo[ChatApp.typeKey]?.stringValue == "message"
    }

    func handle(_ response: NotificationResponse, context: VisiblePushContext) async {
        let message = response.notification.request.content.userInfo["message_id"]?.stringValue ?? "-"
        let action = response.action == .default ? "tap" : response.actionIdentifier
        self.recorder.note(handler: self.id, "opened message \(message) (\(action), app \(context.applicationState))")
    }
}

/// Fetches the new messages a background inbox sync announces.
struct InboxSyncHandler: SilentPushHandler {
    static let handlerID = "inbox-sync"
    let id = Self.handlerID
    let recorder: ScenarioRecorder

    func matchesPayload(_ payload: JSONValue) -> Bool { payload[ChatApp.typeKey]?.stringValue == "inbox_sync" }

    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        let count = payload["new_messages"]?.intValue ?? 0
        let result: SilentPushResult = count > 0 ? .newData : .noData
        self.recorder.note(handler: self.id, "fetched \(count) new messages (\(context.connectivity)) -> \(result)")
        return result
    }
}

/// Recomputes the badge after an inbox sync; the badge server already sent it, so nothing is new.
struct BadgeCountHandler: SilentPushHandler {
    static let handlerID = "badge-count"
    let id = Self.handlerID
    let recorder: ScenarioRecorder

    func matchesPayload(_ payload: JSONValue) -> Bool { payload[ChatApp.typeKey]?.stringValue == "inbox_sync" }

    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        self.recorder.note(handler: self.id, "badge already current -> \(SilentPushResult.noData)")
        return .noData
    }
}

/// The app's scene delegate and notification-centre delegate: notes the scene connecting
/// with the notification that launched the app, and presents foreground notifications as a banner
/// in the list with sound and badge.
struct ChatAppDelegate: SimulatedAppDelegate {
    static let handlerID = "scene"
    let recorder: ScenarioRecorder

    func sceneWillConnect(_ options: SceneConnectionOptions) async {
        let message = options.notificationResponse?.notification.request.content.userInfo["message_id"]?.stringValue
        self.recorder.note(handler: Self.handlerID, "connected with the response to message \(message ?? "-") (before didReceive)")
    }

    func willPresent(_ notification: DeliveredNotification) async -> PresentationOptions {
        [.banner, .list, .sound, .badge]
    }
}
