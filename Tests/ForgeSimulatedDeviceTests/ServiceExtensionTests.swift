import ForgeNotificationService
import ForgeNotificationTypes
import ForgeSimulatedDevice
import Foundation
import Testing

@Suite("Service extension")
struct ServiceExtensionTests {
    let secret = #"{"aps":{"alert":{"title":"Encrypted","body":"…"},"mutable-content":1},"cipher":"Z2VoZWlt"}"#

    @Test("the extension's modified content is what the user sees")
    func extensionModifiesContent() async throws {
        let device = Fixture.device()
        let decrypt = ServiceExtension(timeLimit: nil) { request, manager in
            let cipher = request.content.userInfo["cipher"]?.stringValue ?? ""
            manager.mutableContent.update {
                $0.title = "Decrypted"
                $0.body = "cipher was \(cipher)"
            }
            manager.complete(forces: false)
        }
        device.install(Fixture.app(serviceExtension: decrypt))

        await device.deliver(Fixture.push(self.secret, apnsID: "S-1"))

        let shown = try #require(device.notificationList(for: Fixture.bundleID).first)
        #expect(shown.request.content.title == "Decrypted")
        #expect(shown.request.content.body == "cipher was Z2VoZWlt")
        #expect(device.events.contains(.serviceExtensionStarted(bundleID: Fixture.bundleID, identifier: "S-1")))
        #expect(device.events.contains(.serviceExtensionCompleted(bundleID: Fixture.bundleID, identifier: "S-1", content: shown.request.content, expired: false)))
        #expect(device.runningServiceExtensions == 0)
    }

    @Test("when time runs out, the time-will-expire path shows the best attempt")
    func expiryDeliversBestAttempt() async throws {
        let device = Fixture.device()
        let stuck = ServiceExtension(timeLimit: nil) { _, manager in
            manager.mutableContent.update { $0.title = "Partly decrypted" }
            manager.wait()  // a download that never finishes: no notify()
            manager.complete(forces: false)
        }
        device.install(Fixture.app(serviceExtension: stuck))

        async let delivered: Void = device.deliver(Fixture.push(self.secret, apnsID: "S-2"))
        try await device.awaitEvent { $0 == .serviceExtensionStarted(bundleID: Fixture.bundleID, identifier: "S-2") }
        #expect(device.expireServiceExtensions() == 1)
        await delivered

        let shown = try #require(device.notificationList(for: Fixture.bundleID).first)
        #expect(shown.request.content.title == "Partly decrypted")
        #expect(device.events.contains(.serviceExtensionCompleted(bundleID: Fixture.bundleID, identifier: "S-2", content: shown.request.content, expired: true)))
    }

    @Test("tasks the extension starts are awaited through wait() and notify()")
    func asynchronousTasks() async throws {
        let device = Fixture.device()
        let gate = Gate()
        let fetching = ServiceExtension(timeLimit: nil) { _, manager in
            manager.wait()
            Task {
                await gate.wait()
                manager.mutableContent.update { $0.subtitle = "with picture" }
                manager.notify()
            }
            manager.complete(forces: false)
        }
        device.install(Fixture.app(serviceExtension: fetching))

        async let delivered: Void = device.deliver(Fixture.push(self.secret, apnsID: "S-3"))
        try await device.awaitEvent { $0 == .serviceExtensionStarted(bundleID: Fixture.bundleID, identifier: "S-3") }
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty, "nothing is shown while the task runs")
        gate.open()
        await delivered

        #expect(device.notificationList(for: Fixture.bundleID).first?.request.content.subtitle == "with picture")
        #expect(device.expireServiceExtensions() == 0)
    }
}
