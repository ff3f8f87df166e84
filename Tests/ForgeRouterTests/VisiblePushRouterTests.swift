import ForgeNotificationTypes
import ForgeSupport
import ForgeVisiblePush
import Foundation
import Testing

/// Where the app navigated: the seed's TaskFlowNavigator, reduced to a record.
final class Navigator: Sendable {
    private let destinations = LockedBox<[String]>([])

    func navigate(toTask id: String) { self.destinations.withLock { $0.append("task/\(id)") } }
    var visited: [String] { self.destinations.withLock { $0 } }
}

/// The seed's example, ported: a tap on a task reminder opens the task.
struct TaskTappedHandler: VisiblePushHandler {
    let id = "task-tapped"
    let navigator: Navigator

    func matches(_ response: NotificationResponse) -> Bool {
        response.notification.request.content.userInfo["type"]?.stringValue == "task_reminder"
    }

    func handle(_ response: NotificationResponse, context: VisiblePushContext) async {
        guard let taskID = response.notification.request.content.userInfo["task_id"]?.stringValue else { return }
        self.navigator.navigate(toTask: taskID)
    }
}

/// Records each response it handled, matching a given action.
final class ActionRecorder: VisiblePushHandler, Sendable {
    let id: String
    let action: NotificationAction
    private let handled = LockedBox<[NotificationResponse]>([])

    init(id: String, action: NotificationAction) {
        self.id = id
        self.action = action
    }

    func matches(_ response: NotificationResponse) -> Bool { response.action == self.action }
    func handle(_ response: NotificationResponse, context: VisiblePushContext) async {
        self.handled.withLock { $0.append(response) }
    }
    var responses: [NotificationResponse] { self.handled.withLock { $0 } }
}

private func response(_ payload: String, action: NotificationAction = .default, text: String? = nil) throws -> NotificationResponse {
    let userInfo = try JSONValue(parsing: Array(payload.utf8))
    let request = NotificationRequest(identifier: "n-1", content: NotificationContent(payload: userInfo))
    return NotificationResponse(
        notification: DeliveredNotification(request: request, date: Date(timeIntervalSince1970: 1_700_000_000)),
        action: action, userText: text
    )
}

@Suite("VisiblePushRouter")
struct VisiblePushRouterTests {
    let router = VisiblePushRouter(connectivity: ManualConnectivityObserver(), protectedData: ManualProtectedDataObserver())

    @Test("The seed's TaskTappedHandler opens the task that was tapped")
    func taskTapped() async throws {
        let navigator = Navigator()
        self.router.addHandler(TaskTappedHandler(navigator: navigator))
        let ran = await self.router.handleResponse(
            try response(#"{"aps":{"alert":{"title":"Review","body":"Due today"}},"type":"task_reminder","task_id":"T-42"}"#)
        )
        #expect(ran == ["task-tapped"])
        #expect(navigator.visited == ["task/T-42"])
        #expect(await self.router.handleResponse(try response(#"{"aps":{"alert":"x"},"type":"other"}"#)).isEmpty)
    }

    @Test("Every matching handler runs; actions and typed text reach them")
    func allMatching() async throws {
        let reply = ActionRecorder(id: "reply", action: .custom("REPLY"))
        let alsoReply = ActionRecorder(id: "reply-audit", action: .custom("REPLY"))
        let dismiss = ActionRecorder(id: "dismiss", action: .dismiss)
        for handler in [reply, alsoReply, dismiss] { self.router.addHandler(handler) }
        let ran = await self.router.handleResponse(try response(#"{"aps":{"alert":"hi"}}"#, action: .custom("REPLY"), text: "On my way"))
        #expect(Set(ran) == ["reply", "reply-audit"])
        #expect(reply.responses.first?.userText == "On my way")
        #expect(alsoReply.responses.count == 1 && dismiss.responses.isEmpty)
        #expect(NotificationAction.default.identifier == "com.apple.UNNotificationDefaultActionIdentifier")
    }

    @Test("Duplicate ids are refused; the completion variant calls back once, after every handler")
    func completion() async throws {
        let recorder = ActionRecorder(id: "tap", action: .default)
        #expect(self.router.addHandler(recorder))
        #expect(!self.router.addHandler(ActionRecorder(id: "tap", action: .dismiss)))
        let tapped = try response(#"{"aps":{"alert":"hi"}}"#)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.router.handleResponse(tapped) {
                #expect(recorder.responses.count == 1)
                continuation.resume()
            }
        }
        #expect(self.router.removeHandler("tap"))
    }
}

@Suite("JSON values and notification content")
struct JSONValueTests {
    @Test("Parsing, subscripts and typed accessors")
    func parsing() throws {
        let value = try JSONValue(parsing: Array(#"{"aps":{"badge":3,"content-available":1,"flag":true},"list":[1,"a",null],"pi":3.5}"#.utf8))
        #expect(value["aps"]?["badge"]?.intValue == 3)
        #expect(value["aps"]?["flag"]?.boolValue == true)
        #expect(value["aps"]?["content-available"]?.boolValue == nil)  // 1 is a number, not true
        #expect(value["list"]?[1]?.stringValue == "a")
        #expect(value["list"]?[2] == .null)
        #expect(value["list"]?[9] == nil)
        #expect(value["pi"]?.doubleValue == 3.5 && value["pi"]?.intValue == nil)
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: Array("{".utf8)) }
    }

    @Test("Content from a payload: alert string or dictionary, sound string or dictionary")
    func content() throws {
        let dictionary = NotificationContent(payload: try JSONValue(parsing: Array(
            #"{"aps":{"alert":{"title":"T","subtitle":"S","body":"B"},"badge":2,"sound":{"critical":1,"name":"siren.caf"},"thread-id":"th","category":"CAT","interruption-level":"time-sensitive","relevance-score":0.5},"k":"v"}"#.utf8
        )))
        #expect(dictionary.title == "T" && dictionary.subtitle == "S" && dictionary.body == "B")
        #expect(dictionary.badge == 2 && dictionary.sound == "siren.caf" && dictionary.threadIdentifier == "th")
        #expect(dictionary.categoryIdentifier == "CAT" && dictionary.interruptionLevel == "time-sensitive")
        #expect(dictionary.relevanceScore == 0.5 && dictionary.userInfo["k"]?.stringValue == "v")
        let plain = NotificationContent(payload: try JSONValue(parsing: Array(#"{"aps":{"alert":"Hello","sound":"default"}}"#.utf8)))
        #expect(plain.body == "Hello" && plain.title.isEmpty && plain.sound == "default")
    }
}
