public import struct Foundation.Date
public import struct Foundation.URL

/// A file shown with a notification (`UNNotificationAttachment`).
public struct NotificationAttachment: Hashable, Sendable {
    /// The attachment's identifier.
    public var identifier: String
    /// Where the file is.
    public var url: URL
    /// A uniform type identifier hint, such as `public.jpeg`.
    public var typeHint: String?

    /// Creates an attachment.
    public init(identifier: String, url: URL, typeHint: String? = nil) {
        self.identifier = identifier
        self.url = url
        self.typeHint = typeHint
    }
}

/// What a notification shows (`UNNotificationContent`).
public struct NotificationContent: Hashable, Sendable {
    public var title: String
    public var subtitle: String
    public var body: String
    public var badge: Int?
    /// The sound's name, `default`, or `nil` for silence.
    public var sound: String?
    public var threadIdentifier: String
    public var categoryIdentifier: String
    public var targetContentIdentifier: String?
    /// `passive`, `active`, `time-sensitive` or `critical`.
    public var interruptionLevel: String
    public var relevanceScore: Double
    public var attachments: [NotificationAttachment]
    /// The whole payload, custom keys included.
    public var userInfo: JSONValue

    /// Creates content; everything is empty by default.
    public init(
        title: String = "", subtitle: String = "", body: String = "", badge: Int? = nil, sound: String? = nil,
        threadIdentifier: String = "", categoryIdentifier: String = "", targetContentIdentifier: String? = nil,
        interruptionLevel: String = "active", relevanceScore: Double = 0, attachments: [NotificationAttachment] = [],
        userInfo: JSONValue = .object([:])
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.badge = badge
        self.sound = sound
        self.threadIdentifier = threadIdentifier
        self.categoryIdentifier = categoryIdentifier
        self.targetContentIdentifier = targetContentIdentifier
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.attachments = attachments
        self.userInfo = userInfo
    }

    /// The content iOS builds from a remote notification's payload (`aps.alert` as a string or a
    /// dictionary; localisation keys are shown as the key, as a device without the app's strings would).
    public init(payload: JSONValue) {
        let aps = payload["aps"]
        let alert = aps?["alert"]
        var title = "", subtitle = "", body = ""
        if let text = alert?.stringValue {
            body = text
        } else if let alert {
            title = alert["title"]?.stringValue ?? alert["title-loc-key"]?.stringValue ?? ""
            subtitle = alert["subtitle"]?.stringValue ?? alert["subtitle-loc-key"]?.stringValue ?? ""
            body = alert["body"]?.stringValue ?? alert["loc-key"]?.stringValue ?? ""
        }
        let sound = aps?["sound"]?.stringValue ?? aps?["sound"]?["name"]?.stringValue
        self.init(
            title: title, subtitle: subtitle, body: body, badge: aps?["badge"]?.intValue, sound: sound,
            threadIdentifier: aps?["thread-id"]?.stringValue ?? "", categoryIdentifier: aps?["category"]?.stringValue ?? "",
            targetContentIdentifier: aps?["target-content-id"]?.stringValue,
            interruptionLevel: aps?["interruption-level"]?.stringValue ?? "active",
            relevanceScore: aps?["relevance-score"]?.doubleValue ?? 0, userInfo: payload
        )
    }
}

/// A notification to show (`UNNotificationRequest`): content and an identifier. A second request
/// with the same identifier replaces the first.
public struct NotificationRequest: Hashable, Sendable {
    public var identifier: String
    public var content: NotificationContent

    /// Creates a request.
    public init(identifier: String, content: NotificationContent) {
        self.identifier = identifier
        self.content = content
    }
}

/// A notification the system delivered (`UNNotification`).
public struct DeliveredNotification: Hashable, Sendable {
    public var request: NotificationRequest
    public var date: Date

    /// Creates a delivered notification.
    public init(request: NotificationRequest, date: Date) {
        self.request = request
        self.date = date
    }
}

/// What the user did with a notification.
public struct NotificationAction: Hashable, Sendable, CustomStringConvertible {
    /// The identifier iOS reports.
    public let identifier: String

    private init(_ identifier: String) { self.identifier = identifier }

    /// A tap on the notification (`UNNotificationDefaultActionIdentifier`).
    public static let `default` = NotificationAction("com.apple.UNNotificationDefaultActionIdentifier")
    /// A dismissal (`UNNotificationDismissActionIdentifier`; only with the category's custom dismiss option).
    public static let dismiss = NotificationAction("com.apple.UNNotificationDismissActionIdentifier")
    /// A custom action of the notification's category.
    public static func custom(_ identifier: String) -> NotificationAction { NotificationAction(identifier) }

    public var description: String { self.identifier }
}

/// The user's response to a notification (`UNNotificationResponse`, or `UNTextInputNotificationResponse`
/// when ``userText`` is set).
public struct NotificationResponse: Hashable, Sendable {
    public var notification: DeliveredNotification
    public var action: NotificationAction
    /// The text typed into a text-input action.
    public var userText: String?

    /// Creates a response.
    public init(notification: DeliveredNotification, action: NotificationAction = .default, userText: String? = nil) {
        self.notification = notification
        self.action = action
        self.userText = userText
    }

    /// `actionIdentifier`, as UIKit spells it.
    public var actionIdentifier: String { self.action.identifier }
}
