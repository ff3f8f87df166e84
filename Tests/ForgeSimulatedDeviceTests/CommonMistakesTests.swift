import ForgeNotificationService
import ForgeNotificationTypes
import ForgeSilentPush
import ForgeSimulatedDevice
import ForgeSupport
import ForgeVisiblePush
import Foundation
import Testing

/// The six common mistakes of the iOS guide (seed 003), each visible in the timeline.
@Suite("The six common mistakes")
struct CommonMistakesTests {
    let alert = #"{"aps":{"alert":{"title":"Reminder","body":"Time to work!"}}}"#

    @Test("1. no authorization: nothing is shown and no error is reported")
    func noAuthorization() async {
        let device = Fixture.device()
        let ran = LockedBox(false)
        let spy = ServiceExtension(timeLimit: nil) { _, manager in
            ran.withLock { $0 = true }
            manager.complete(forces: false)
        }
        device.install(Fixture.app(authorization: .denied, serviceExtension: spy))

        await device.deliver(Fixture.push(#"{"aps":{"alert":"hi","mutable-content":1}}"#, apnsID: "M1"))

        #expect(device.events.last == .notShown(bundleID: Fixture.bundleID, identifier: "M1", reason: .notAuthorized))
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
        #expect(!ran.current)
    }

    @Test("2. delegate not set before launch: the response that launched the app is lost")
    func delegateSetLate() async throws {
        let device = Fixture.device()
        let app = Fixture.app(state: .notRunning, isDelegateSetBeforeLaunch: false)
        let recorder = ResponseRecorder(id: "opener")
        app.visibleRouter.addHandler(recorder)
        device.install(app)
        await device.deliver(Fixture.push(self.alert, apnsID: "M2"))

        let ran = try await device.tap("M2", in: Fixture.bundleID)

        #expect(ran.isEmpty)
        #expect(recorder.responses.current.isEmpty)
        #expect(device.events.suffix(3) == [
            .appLaunched(bundleID: Fixture.bundleID, reason: .notificationResponse(identifier: "M2")),
            .sceneConnected(bundleID: Fixture.bundleID, identifier: "M2"),
            .responseLost(bundleID: Fixture.bundleID, identifier: "M2", reason: "the notification centre delegate was not set before the app finished launching"),
        ])
    }

    @Test("3. temporary attachment files: an attachment whose file is gone is dropped")
    func temporaryAttachment() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("forge-device-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let kept = directory.appendingPathComponent("kept.jpg")
        let temporary = directory.appendingPathComponent("download.tmp")
        try Data([0xFF, 0xD8]).write(to: kept)
        try Data([0xFF, 0xD8]).write(to: temporary)

        let device = Fixture.device()
        let attach = ServiceExtension(timeLimit: nil) { _, manager in
            manager.mutableContent.update {
                $0.attachments = [
                    NotificationAttachment(identifier: "kept", url: kept, typeHint: "public.jpeg"),
                    NotificationAttachment(identifier: "temp", url: temporary, typeHint: "public.jpeg"),
                ]
            }
            // The system deletes a download's temporary file once the download callback returns.
            try? FileManager.default.removeItem(at: temporary)
            manager.complete(forces: false)
        }
        device.install(Fixture.app(serviceExtension: attach))

        await device.deliver(Fixture.push(#"{"aps":{"alert":"photo","mutable-content":1}}"#, apnsID: "M3"))

        #expect(device.events.contains(.attachmentDropped(bundleID: Fixture.bundleID, identifier: "M3", attachmentID: "temp", url: temporary)))
        let shown = try #require(device.notificationList(for: Fixture.bundleID).first)
        #expect(shown.request.content.attachments.map(\.identifier) == ["kept"])
    }

    @Test("4. completion handler never called: a budget violation once the time runs out")
    func completionNeverCalled() async throws {
        let device = Fixture.device()
        let app = Fixture.app()
        let gate = Gate()
        let handler = HangingSilentHandler(gate: gate)
        app.silentRouter.addHandler(handler)
        device.install(app)
        defer { gate.open() }

        async let delivered: Void = device.deliver(Fixture.push(#"{"aps":{"content-available":1}}"#, apnsID: "M4"))
        try await device.awaitEvent { $0 == .backgroundDeliveryStarted(bundleID: Fixture.bundleID, apnsID: "M4", payload: .object(["aps": .object(["content-available": .number(1)])])) }
        #expect(device.pendingBackgroundPushes == 1)
        #expect(device.expireBackgroundBudgets() == 1)
        await delivered

        #expect(device.events.last == .backgroundBudgetExceeded(bundleID: Fixture.bundleID, apnsID: "M4"))
        #expect(!device.events.contains { if case .backgroundCompleted = $0 { true } else { false } })
    }

    @Test("5. missing mutable-content: the service extension is not run, reported where the alert wanted it")
    func missingMutableContent() async throws {
        let device = Fixture.device()
        let ran = LockedBox(false)
        let modify = ServiceExtension(timeLimit: nil, payloadKeys: ["image_url"]) { _, manager in
            ran.withLock { $0 = true }
            manager.mutableContent.update { $0.title = "Modified" }
            manager.complete(forces: false)
        }
        device.install(Fixture.app(serviceExtension: modify))

        await device.deliver(Fixture.push(#"{"aps":{"alert":{"title":"New Message"},"sound":"default"},"image_url":"https://example.com/i.jpg"}"#, apnsID: "M5"))

        #expect(!ran.current)
        #expect(device.events.contains(.serviceExtensionNotRun(
            bundleID: Fixture.bundleID, identifier: "M5",
            reason: "the payload lacks aps.mutable-content: 1, but it carries image_url, which only the service extension acts on"
        )))
        #expect(device.notificationList(for: Fixture.bundleID).first?.request.content.title == "New Message")
    }

    @Test("5. a plain alert to an app with an extension is no mistake; unless every alert needs the extension")
    func plainAlertIsNoMistake() async throws {
        let device = Fixture.device()
        let complete = ServiceExtension(timeLimit: nil, payloadKeys: ["image_url"]) { _, manager in manager.complete(forces: false) }
        device.install(Fixture.app(serviceExtension: complete))
        await device.deliver(Fixture.push(self.alert, apnsID: "M5-plain"))
        #expect(!device.events.contains { if case .serviceExtensionNotRun = $0 { true } else { false } })
        #expect(device.notificationList(for: Fixture.bundleID).count == 1)

        let encrypted = ServiceExtension(timeLimit: nil, isRequiredForEveryAlert: true) { _, manager in manager.complete(forces: false) }
        device.install(Fixture.app(serviceExtension: encrypted))
        await device.deliver(Fixture.push(self.alert, apnsID: "M5-required"))
        #expect(device.events.contains(.serviceExtensionNotRun(
            bundleID: Fixture.bundleID, identifier: "M5-required",
            reason: "the payload lacks aps.mutable-content: 1, but every alert to the app needs its service extension"
        )))
    }

    @Test("6. one identifier for different notifications: the later replaces the earlier")
    func identifierReused() async throws {
        let device = Fixture.device()
        device.install(Fixture.app())

        for index in 1...3 {
            let json = #"{"aps":{"alert":{"title":"Reminder \#(index)","body":"Task \#(index)"}}}"#
            await device.deliver(Fixture.push(json, apnsID: "R-\(index)", collapseID: "reminder"))
        }

        let list = device.notificationList(for: Fixture.bundleID)
        #expect(list.map(\.request.content.title) == ["Reminder 3"])
        let replaced = device.events.compactMap { event -> String? in
            guard case .notificationReplaced(_, "reminder", let previous) = event else { return nil }
            return previous.title
        }
        #expect(replaced == ["Reminder 1", "Reminder 2"])

        // With distinct identifiers (the apns-id) nothing is replaced.
        await device.deliver(Fixture.push(self.alert, apnsID: "R-4"))
        await device.deliver(Fixture.push(self.alert, apnsID: "R-5"))
        #expect(device.notificationList(for: Fixture.bundleID).count == 3)
    }
}
