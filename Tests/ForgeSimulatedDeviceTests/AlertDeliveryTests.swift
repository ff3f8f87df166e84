import ForgeNotificationTypes
import ForgeSimulatedDevice
import ForgeVisiblePush
import Foundation
import Testing

@Suite("Alerts and user actions")
struct AlertDeliveryTests {
    let chat = #"{"aps":{"alert":{"title":"New message","body":"Hi"},"category":"chat"},"type":"chat","chat_id":"42"}"#

    @Test("an alert in the background goes to the list; a tap runs the visible handler with the payload")
    func alertTapRunsHandler() async throws {
        let device = Fixture.device()
        let app = Fixture.app(state: .background)
        let recorder = ResponseRecorder(id: "chat-opener")
        app.visibleRouter.addHandler(recorder)
        device.install(app)

        await device.deliver(Fixture.push(self.chat, apnsID: "A-1"))

        let listed = try #require(device.notificationList(for: Fixture.bundleID).first)
        #expect(listed.request.identifier == "A-1")
        #expect(listed.request.content.title == "New message")
        #expect(device.events.contains(.addedToNotificationList(bundleID: Fixture.bundleID, identifier: "A-1", content: listed.request.content)))

        let ran = try await device.tap("A-1", in: Fixture.bundleID)

        #expect(ran == ["chat-opener"])
        let response = try #require(recorder.responses.current.first)
        #expect(response.action == .default)
        #expect(response.notification.request.content.userInfo["chat_id"]?.stringValue == "42")
        #expect(app.state == .foreground)
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
        #expect(device.events.suffix(3) == [
            .appForegrounded(bundleID: Fixture.bundleID),
            .responseRouted(bundleID: Fixture.bundleID, identifier: "A-1", action: NotificationAction.default.identifier, userText: nil),
            .responseHandled(bundleID: Fixture.bundleID, identifier: "A-1", handlerIDs: ["chat-opener"]),
        ])
    }

    @Test("a not-running app is launched with the notification first, then gets the response")
    func notRunningLaunchPath() async throws {
        let device = Fixture.device()
        let app = Fixture.app(state: .notRunning)
        let recorder = ResponseRecorder(id: "opener")
        app.visibleRouter.addHandler(recorder)
        device.install(app)
        await device.deliver(Fixture.push(self.chat, apnsID: "A-2"))

        try await device.tap("A-2", in: Fixture.bundleID)

        #expect(app.state == .foreground)
        #expect(recorder.responses.current.count == 1)
        let events = device.events
        let launched = try #require(events.firstIndex(of: .appLaunched(bundleID: Fixture.bundleID, reason: .notificationResponse(identifier: "A-2"))))
        let routed = try #require(events.firstIndex { if case .responseRouted = $0 { true } else { false } })
        #expect(launched < routed)
    }

    @Test("in the foreground the will-present decision is recorded; banner-only is tappable but not listed")
    func foregroundWillPresent() async throws {
        let device = Fixture.device()
        let app = Fixture.app(state: .foreground, foregroundPresentation: [.banner, .sound])
        let recorder = ResponseRecorder(id: "opener")
        app.visibleRouter.addHandler(recorder)
        device.install(app)

        await device.deliver(Fixture.push(self.chat, apnsID: "F-1"))

        #expect(device.events.contains(.willPresent(bundleID: Fixture.bundleID, identifier: "F-1", options: [.banner, .sound])))
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
        #expect(try await device.tap("F-1", in: Fixture.bundleID) == ["opener"])

        app.setForegroundPresentation([])
        await device.deliver(Fixture.push(self.chat, apnsID: "F-2"))
        #expect(device.events.suffix(2) == [
            .willPresent(bundleID: Fixture.bundleID, identifier: "F-2", options: []),
            .notShown(bundleID: Fixture.bundleID, identifier: "F-2", reason: .suppressedInForeground),
        ])
        await #expect(throws: SimulatedDeviceError.notificationNotFound) { try await device.tap("F-2", in: Fixture.bundleID) }
    }

    @Test("a text-input action routes the typed text; an action the category lacks is refused")
    func customActions() async throws {
        let category = NotificationCategory(
            identifier: "chat",
            actions: [
                NotificationCategoryAction(identifier: "reply", title: "Reply", isTextInput: true),
                NotificationCategoryAction(identifier: "mark-read", title: "Mark read"),
            ]
        )
        let device = Fixture.device()
        let app = Fixture.app(state: .background, categories: [category])
        let recorder = ResponseRecorder(id: "replier")
        app.visibleRouter.addHandler(recorder)
        device.install(app)
        await device.deliver(Fixture.push(self.chat, apnsID: "C-1"))

        await #expect(throws: SimulatedDeviceError.unknownAction) {
            try await device.perform(action: "delete", on: "C-1", in: Fixture.bundleID)
        }
        await #expect(throws: SimulatedDeviceError.missingUserText) {
            try await device.perform(action: "reply", on: "C-1", in: Fixture.bundleID)
        }
        try await device.perform(action: "reply", userText: "On my way", on: "C-1", in: Fixture.bundleID)

        let response = try #require(recorder.responses.current.first)
        #expect(response.actionIdentifier == "reply")
        #expect(response.userText == "On my way")
        #expect(app.state == .background, "an action without the foreground option does not open the app")
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
    }

    @Test("a dismissal reaches the app only when the category sends the dismiss action")
    func dismissal() async throws {
        let device = Fixture.device()
        let app = Fixture.app(state: .background, categories: [NotificationCategory(identifier: "chat", sendsDismissAction: true)])
        let recorder = ResponseRecorder(id: "dismiss-watcher")
        app.visibleRouter.addHandler(recorder)
        device.install(app)
        let plain = #"{"aps":{"alert":"no category"}}"#
        await device.deliver(Fixture.push(plain, apnsID: "D-1"))
        await device.deliver(Fixture.push(self.chat, apnsID: "D-2"))

        #expect(try await device.dismiss("D-1", in: Fixture.bundleID) == [])
        #expect(recorder.responses.current.isEmpty)
        #expect(try await device.dismiss("D-2", in: Fixture.bundleID) == ["dismiss-watcher"])
        #expect(recorder.responses.current.map(\.action) == [.dismiss])
        #expect(device.events.contains(.notificationDismissed(bundleID: Fixture.bundleID, identifier: "D-1")))
    }

    @Test("a push for a token no app owns is dropped; so is one for the other environment")
    func unknownTokenDropped() async {
        let device = Fixture.device()
        let app = Fixture.app()
        device.install(app)
        let stranger = String(repeating: "ef", count: 32)

        await device.deliver(Fixture.push(self.chat, token: stranger, apnsID: "U-1"))
        await device.deliver(Fixture.push(self.chat, token: Fixture.sandboxToken, apnsID: "U-2", environment: .production))
        await device.deliver(Fixture.push(self.chat, token: Fixture.productionToken, apnsID: "U-3", environment: .production))

        #expect(device.events.contains(.droppedUnknownToken(apnsID: "U-1", token: stranger)))
        #expect(device.events.contains(.droppedUnknownToken(apnsID: "U-2", token: Fixture.sandboxToken)))
        #expect(device.notificationList(for: Fixture.bundleID).map(\.request.identifier) == ["U-3"])
    }

    @Test("a push without an alert (badge only, or content-available without a background flag) shows nothing")
    func nothingToShow() async {
        let device = Fixture.device()
        device.install(Fixture.app())
        await device.deliver(Fixture.push(#"{"aps":{"badge":3}}"#, apnsID: "N-1"))
        await device.deliver(Fixture.push(#"{"aps":{"content-available":0},"type":"x"}"#, apnsID: "N-2"))

        #expect(device.events.contains(.notShown(bundleID: Fixture.bundleID, identifier: "N-1", reason: .nothingToShow)))
        #expect(device.events.contains(.notShown(bundleID: Fixture.bundleID, identifier: "N-2", reason: .nothingToShow)))
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
    }

    @Test("a payload that is not JSON is dropped with the reason")
    func invalidPayload() async {
        let device = Fixture.device()
        device.install(Fixture.app())
        await device.deliver(Fixture.push("{not json", apnsID: "J-1"))
        let last = device.events.last
        guard case .droppedInvalidPayload(let apnsID, let reason) = last else {
            Issue.record("expected a dropped payload, got \(String(describing: last))")
            return
        }
        #expect(apnsID == "J-1")
        #expect(reason.hasPrefix("the payload is not valid JSON: "), "\(reason)")
    }

    @Test("a payload a device cannot read (trailing brace, bad UTF-8, 1e999, a lone surrogate, an array) shows nothing")
    func unreadablePayloads() async {
        let bodies: [[UInt8]] = [
            Array(#"{"aps":{"alert":{"title":"Hi"}}{"#.utf8),
            Array(#"{"aps":{"alert":""#.utf8) + [0xFF] + Array(#""}}"#.utf8),
            Array(#"{"aps":{"alert":"Hi","badge":1e999}}"#.utf8),
            Array(#"{"aps":{"alert":"\ud800"}}"#.utf8),
            Array(#"[{"aps":{"alert":"Hi"}}]"#.utf8),
        ]
        let device = Fixture.device()
        device.install(Fixture.app())
        for (index, body) in bodies.enumerated() {
            await device.deliver(DevicePush(token: Fixture.sandboxToken, payload: body, apnsID: "U-\(index)", date: Fixture.start))
        }
        let dropped = device.events.compactMap { event -> String? in
            if case .droppedInvalidPayload(let apnsID, _) = event { return apnsID }
            return nil
        }
        #expect(dropped == ["U-0", "U-1", "U-2", "U-3", "U-4"])
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
    }

    @Test("a wait for an event that a dropped push never produced says which push was dropped and why")
    func waitNamesDroppedPush() async {
        let device = Fixture.device()
        device.install(Fixture.app())
        await device.deliver(Fixture.push(#"{"aps":{"alert":{"title":"Hi"}}{"#, apnsID: "W-1"))
        do {
            // The drop is already recorded; the shortest timeout only ends the wait.
            try await device.awaitEvent(timeout: .zero) { if case .addedToNotificationList = $0 { true } else { false } }
            Issue.record("the alert was shown")
        } catch {
            #expect(error == .timedOut)
            #expect(error.message.contains("pushes dropped: push W-1 dropped: the payload is not valid JSON"), "\(error.message)")
        }
    }
}
