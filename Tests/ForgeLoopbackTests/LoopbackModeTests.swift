import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import ForgeLoopback
import ForgeNotificationService
import ForgeNotificationTypes
import ForgeSilentPush
import ForgeSimulatedDevice
import ForgeSupport
import ForgeTestSupport
import ForgeVisiblePush
import Foundation
import Testing

private let app = "com.example.tasks"
private let appID = try! APNSBundleID(app)
private let sandboxToken = String(repeating: "ab", count: 32)
private let pushToStart = String(repeating: "5a", count: 32)
private let tabletToken = String(repeating: "ac", count: 32)
private let tabletPushToStart = String(repeating: "5b", count: 32)

/// The seed's task-sync silent handler: syncs when the payload says `task_sync`.
private struct TaskSyncHandler: SilentPushHandler {
    let id = "task-sync"
    let seen: Seen
    func matchesPayload(_ payload: JSONValue) -> Bool { payload["type"]?.stringValue == "task_sync" }
    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        self.seen.append("\(self.id):\(payload["task_id"]?.stringValue ?? "-")")
        return .newData
    }
}

/// A second silent handler for the same payload that finds nothing new.
private struct AuditHandler: SilentPushHandler {
    let id = "audit"
    let seen: Seen
    func matchesPayload(_ payload: JSONValue) -> Bool { payload["type"]?.stringValue == "task_sync" }
    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        self.seen.append(self.id)
        return .noData
    }
}

/// The seed's task-tapped visible handler.
private struct TaskTappedHandler: VisiblePushHandler {
    let id = "task-tapped"
    let seen: Seen
    func matches(_ response: NotificationResponse) -> Bool {
        response.notification.request.content.userInfo["type"]?.stringValue == "task_assigned"
    }
    func handle(_ response: NotificationResponse, context: VisiblePushContext) async {
        self.seen.append("\(response.actionIdentifier):\(response.notification.request.content.userInfo["task_id"]?.stringValue ?? "-")")
    }
}

final class Seen: Sendable {
    private let values = LockedBox<[String]>([])
    func append(_ value: String) { self.values.withLock { $0.append(value) } }
    var all: [String] { self.values.withLock { $0 } }
}

private struct Delivery: Codable, Sendable {
    var status: String
    var eta: Int
}

private struct DeliveryAttributes: Codable, Sendable {
    var pizzaName: String
}

private struct Custom: Encodable, Sendable {
    var type: String
    var task_id: String
}

private func loopbackTLS() -> LoopbackMode.TLS {
    .files(chain: KeysExample.path("server.pem"), key: KeysExample.path("server.key"), ca: KeysExample.path("ca.pem"))
}

private func makeApp(
    state: AppState = .background, authorization: NotificationAuthorization = .granted,
    serviceExtension: ServiceExtension? = nil, isDelegateSetBeforeLaunch: Bool = true,
    pushToStartToken: String = pushToStart, deviceToken: String = sandboxToken
) -> SimulatedApp {
    SimulatedApp(
        bundleID: app, deviceTokens: [.sandbox: deviceToken], state: state, authorization: authorization,
        serviceExtension: serviceExtension, isDelegateSetBeforeLaunch: isDelegateSetBeforeLaunch, pushToStartToken: pushToStartToken,
        activityTypes: [LiveActivityType(attributesType: "DeliveryAttributes", attributes: DeliveryAttributes.self,
                                         contentState: Delivery.self)]
    )
}

private func assigned(_ id: String, mutable: Bool = false, collapseID: String? = nil) throws -> APNSAlertNotification<Custom> {
    try APNSAlertNotification(
        alert: APNSAlert(title: "Task \(id)", body: "Assigned to you"), topic: appID, mutableContent: mutable,
        collapseID: collapseID.map { try APNSCollapseID($0) }, payload: Custom(type: "task_assigned", task_id: id)
    )
}

private func event(_ device: SimulatedDevice, _ match: @escaping @Sendable (DeviceEvent) -> Bool) async throws -> DeviceEvent {
    try await device.awaitEvent(where: match).event
}

@Suite("Loopback mode: the client, the local server and the simulated devices in one process", .timeLimit(.minutes(1)))
struct LoopbackModeTests {
    @Test("Alert -> shown -> tap -> the visible handler ran with the payload (TLS from files, and made in memory)",
          arguments: [false, true])
    func alertTap(inMemoryTLS: Bool) async throws {
        let device = SimulatedDevice(backgroundBudget: nil)
        let seen = Seen()
        let phone = makeApp()
        phone.visibleRouter.addHandler(TaskTappedHandler(seen: seen))
        device.install(phone)
        try await withLoopbackMode(devices: [device], tls: inMemoryTLS ? .ephemeral : loopbackTLS()) { loopback in
            let sent = try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                try await client.send(try assigned("T-7"), to: try DeviceToken(sandboxToken))
            }
            _ = try await event(device) { if case .addedToNotificationList = $0 { true } else { false } }
            let ran = try await device.tap(sent.apnsID, in: app)
            #expect(ran == ["task-tapped"])
            #expect(seen.all == ["\(NotificationAction.default.identifier):T-7"])
        }
    }

    @Test("LoopbackMode.start(device:) with no TLS argument delivers at once; shutdown() waits for the deliveries and returns once")
    func startDevice() async throws {
        let device = SimulatedDevice(backgroundBudget: nil)
        let seen = Seen()
        let phone = makeApp()
        phone.visibleRouter.addHandler(TaskTappedHandler(seen: seen))
        device.install(phone)
        let loopback = try LoopbackMode.start(device: device)
        let sent = try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
            try await client.send(try assigned("T-8"), to: try DeviceToken(sandboxToken))
        }
        _ = try await event(device) { if case .addedToNotificationList = $0 { true } else { false } }
        #expect(try await device.tap(sent.apnsID, in: app) == ["task-tapped"])
        await loopback.shutdown()
        await loopback.shutdown()
        #expect(seen.all == ["\(NotificationAction.default.identifier):T-8"])
    }

    @Test("No TLS argument: a CA made in memory that the client and the bare transport trust, and keys-example's CA does not")
    func ephemeralTLS() async throws {
        try await withLoopbackMode(devices: [SimulatedDevice()]) { loopback in
            #expect(loopback.clientConfiguration.tls.caFile == nil)
            #expect(loopback.clientConfiguration.tls.caPEM?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
            let connection = try await HTTP2Connection.connect(loopback.http2Configuration)
            await connection.close()
            do {
                _ = try await HTTP2Connection.connect(HTTP2ClientConfiguration(
                    host: "localhost", port: loopback.server.port, tls: HTTP2TLSConfiguration(trustRoots: .file(KeysExample.path("ca.pem")))
                ))
                Issue.record("the keys-example CA was trusted for the in-memory certificate")
            } catch let error as HTTP2ClientError {
                #expect(error.code == .tlsFailed, "\(error)")
            }
        }
    }

    @Test("A payload a device cannot read: accepted with a warning (P3), dropped by the device, named when a wait fails")
    func unreadablePayload() async throws {
        let device = SimulatedDevice(backgroundBudget: nil)
        device.install(makeApp())
        let warnings = Seen()
        try await withLoopbackMode(devices: [device], tls: loopbackTLS(), observer: { judgement in
            if let warning = judgement.decision.warning { warnings.append(warning) }
        }) { loopback in
            // The bare transport sends what it is given: the body issue 14 found apnsctl sending.
            let connection = try await HTTP2Connection.connect(loopback.http2Configuration)
            let response = try await push(
                connection, token: sandboxToken, topic: app, headers: [("authorization", try loopback.providerToken())],
                body: Array(#"{"aps":{"alert":{"title":"Hi"}}{"#.utf8)
            )
            await connection.close()
            #expect(response.status == 200)
            let dropped = try await event(device) { if case .droppedInvalidPayload = $0 { true } else { false } }
            guard case .droppedInvalidPayload(let apnsID, let reason) = dropped else { return }
            #expect(reason.hasPrefix("the payload is not valid JSON: "), "\(reason)")
            #expect(warnings.all == ["body is not valid JSON: unexpected '{' at column 32 (expected ',' or '}')"])
            do {
                try await device.awaitEvent(timeout: .zero) { if case .addedToNotificationList = $0 { true } else { false } }
                Issue.record("the alert was shown")
            } catch let error as SimulatedDeviceError {
                #expect(error.message.contains("push \(apnsID) dropped: the payload is not valid JSON"), "\(error.message)")
            }
        }
    }

    @Test("Background push -> every matching silent handler -> aggregated newData")
    func background() async throws {
        let device = SimulatedDevice(backgroundBudget: nil)
        let seen = Seen()
        let phone = makeApp()
        phone.silentRouter.addHandler(TaskSyncHandler(seen: seen))
        phone.silentRouter.addHandler(AuditHandler(seen: seen))
        device.install(phone)
        try await withLoopbackMode(devices: [device], tls: loopbackTLS()) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(
                    APNSBackgroundNotification(topic: appID, payload: Custom(type: "task_sync", task_id: "T-9")),
                    to: try DeviceToken(sandboxToken)
                )
            }
            let completed = try await event(device) { if case .backgroundCompleted = $0 { true } else { false } }
            guard case .backgroundCompleted(_, _, let result) = completed else { return }
            #expect(result == .newData)
            #expect(Set(seen.all) == ["task-sync:T-9", "audit"])
        }
    }

    @Test("A background handler that never completes holds only its own push: a later alert is shown meanwhile")
    func stuckBackgroundHandler() async throws {
        let device = SimulatedDevice(backgroundBudget: nil)
        let phone = makeApp()
        phone.silentRouter.addHandler(NeverCompletes())
        device.install(phone)
        try await withLoopbackMode(devices: [device], tls: loopbackTLS()) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(APNSBackgroundNotification(topic: appID, payload: Custom(type: "hang", task_id: "T-1")),
                                          to: try DeviceToken(sandboxToken))
                _ = try await client.send(try assigned("T-2"), to: try DeviceToken(sandboxToken))
            }
            _ = try await event(device) { if case .addedToNotificationList = $0 { true } else { false } }
            #expect(device.pendingBackgroundPushes == 1)
            #expect(device.expireBackgroundBudgets() == 1)
            _ = try await event(device) { if case .backgroundBudgetExceeded = $0 { true } else { false } }
        }
    }

    @Test("Service extension: content rewritten; and the time-will-expire path shows the best attempt")
    func serviceExtension() async throws {
        let device = SimulatedDevice(backgroundBudget: nil)
        let phone = makeApp(serviceExtension: ServiceExtension(timeLimit: nil) { request, manager in
            manager.mutableContent.update { $0.title = "[decrypted] " + $0.title }
            // Completes only for T-1; T-2's extension never does, so iOS expires it.
            if request.content.userInfo["task_id"]?.stringValue == "T-1" { manager.complete(forces: false) }
        })
        device.install(phone)
        try await withLoopbackMode(devices: [device], tls: loopbackTLS()) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(try assigned("T-1", mutable: true), to: try DeviceToken(sandboxToken))
                _ = try await client.send(try assigned("T-2", mutable: true), to: try DeviceToken(sandboxToken))
            }
            let first = try await event(device) { if case .serviceExtensionCompleted(_, _, _, false) = $0 { true } else { false } }
            guard case .serviceExtensionCompleted(_, _, let content, _) = first else { return }
            #expect(content.title == "[decrypted] Task T-1")
            _ = try await event(device) { event in
                if case .serviceExtensionStarted = event, device.runningServiceExtensions == 1 { return true }
                return false
            }
            while device.expireServiceExtensions() == 0 { await Task.yield() }
            let expired = try await event(device) { if case .serviceExtensionCompleted(_, _, _, true) = $0 { true } else { false } }
            guard case .serviceExtensionCompleted(_, _, let best, _) = expired else { return }
            #expect(best.title == "[decrypted] Task T-2")
        }
    }

    @Test("Live Activity: start by push-to-start token, update, a stale update ignored, end; tokens registered with a strict server")
    func liveActivity() async throws {
        let device = SimulatedDevice(backgroundBudget: nil)
        device.install(makeApp())
        // A server that rejects unknown tokens: the push-to-start and update tokens are in its registry.
        try await withLoopbackMode(
            devices: [device], tls: loopbackTLS(), configuration: LocalAPNSConfiguration(acceptsUnknownTokens: false)
        ) { loopback in
            let t0 = Date(timeIntervalSince1970: 1_760_000_000)
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(APNSLiveActivityStartNotification(
                    attributesType: "DeliveryAttributes", attributes: DeliveryAttributes(pizzaName: "Margherita"),
                    contentState: Delivery(status: "baking", eta: 20), alert: APNSLiveActivityAlert(title: "Order", body: "Baking"),
                    timestamp: t0, topic: appID), to: try DeviceToken(pushToStart))
            }
            let started = try await event(device) { if case .liveActivityStarted = $0 { true } else { false } }
            guard case .liveActivityStarted(let activityID, _, _, let updateToken) = started else { return }
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                let token = try DeviceToken(updateToken)
                _ = try await client.send(APNSLiveActivityNotification(event: .update, contentState: Delivery(status: "on the way", eta: 10),
                                                                       timestamp: t0 + 60, topic: appID), to: token)
                _ = try await client.send(APNSLiveActivityNotification(event: .update, contentState: Delivery(status: "baking", eta: 19),
                                                                       timestamp: t0 + 30, topic: appID), to: token)
                _ = try await client.send(APNSLiveActivityNotification(event: .end(dismissalDate: t0 + 3600),
                                                                       contentState: Delivery(status: "delivered", eta: 0),
                                                                       timestamp: t0 + 120, topic: appID), to: token)
            }
            _ = try await event(device) { if case .liveActivityEnded = $0 { true } else { false } }
            let activity = try #require(device.liveActivity(activityID))
            #expect(activity.history.map { $0.contentState["status"]?.stringValue } == ["baking", "on the way", "delivered"])
            #expect(device.timeline.contains { if case .liveActivityPushIgnored = $0.event { true } else { false } })
        }
    }

    @Test("A rotated push-to-start token: APNs still answers 200 for the old one, and no phone shows anything")
    func rotatedPushToStartToken() async throws {
        let device = SimulatedDevice(backgroundBudget: nil)
        device.install(makeApp())
        // A server that rejects unknown tokens: the new token is registered as the app reports it.
        try await withLoopbackMode(
            devices: [device], tls: loopbackTLS(), configuration: LocalAPNSConfiguration(acceptsUnknownTokens: false)
        ) { loopback in
            let rotated = try device.rotatePushToStartToken(of: app)
            let t0 = Date(timeIntervalSince1970: 1_760_000_000)
            let start = APNSLiveActivityStartNotification(
                attributesType: "DeliveryAttributes", attributes: DeliveryAttributes(pizzaName: "Margherita"),
                contentState: Delivery(status: "baking", eta: 20), alert: APNSLiveActivityAlert(title: "Order", body: "Baking"),
                timestamp: t0, topic: appID
            )
            let response = try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                try await client.send(start, to: try DeviceToken(pushToStart))
            }
            let discarded = try await event(device) { if case .delivery(_, .discarded(.tokenUnregistered), _) = $0 { true } else { false } }
            #expect(discarded == .delivery(
                apnsID: String(describing: response.apnsID), state: .discarded(.tokenUnregistered),
                reason: "\(app) rotated its push-to-start token; this one is no longer registered on the device (send to the new one)"
            ))
            #expect(device.liveActivities.isEmpty)
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(start, to: try DeviceToken(rotated))
            }
            _ = try await event(device) { if case .liveActivityStarted = $0 { true } else { false } }
        }
    }

    @Test("Several devices: each push goes to the device that owns its token, and only there")
    func severalDevices() async throws {
        let phone = SimulatedDevice(backgroundBudget: nil)
        let tablet = SimulatedDevice(backgroundBudget: nil)
        phone.install(makeApp())
        tablet.install(SimulatedApp(bundleID: app, deviceTokens: [.sandbox: tabletToken], state: .background))
        try await withLoopbackMode(devices: [phone, tablet], tls: loopbackTLS()) { loopback in
            let (toPhone, toTablet) = try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                let bulk = try client.sendBulk(try assigned("T-1"), to: [try DeviceToken(sandboxToken), try DeviceToken(tabletToken)])
                for await _ in bulk {}
                let toPhone = try await client.send(try assigned("T-2"), to: try DeviceToken(sandboxToken))
                let toTablet = try await client.send(try assigned("T-3"), to: try DeviceToken(tabletToken))
                return (toPhone.apnsID, toTablet.apnsID)
            }
            _ = try await event(phone) { if case .addedToNotificationList(_, toPhone, _) = $0 { true } else { false } }
            _ = try await event(tablet) { if case .addedToNotificationList(_, toTablet, _) = $0 { true } else { false } }
            for (device, token) in [(phone, sandboxToken), (tablet, tabletToken)] {
                let received = device.timeline.compactMap { entry -> String? in
                    if case .pushReceived(_, let to, _) = entry.event { return to }
                    return nil
                }
                #expect(received == [token, token], "the bulk's push and the single one, both to this device's token")
                #expect(!device.timeline.contains { if case .droppedUnknownToken = $0.event { true } else { false } })
            }
        }
    }

    @Test("A token no device owns: accepted and not delivered by default; BadDeviceToken when the server rejects unknown tokens")
    func tokenNoDeviceOwns() async throws {
        let stranger = try DeviceToken(String(repeating: "0e", count: 32))
        let device = SimulatedDevice(backgroundBudget: nil)
        device.install(makeApp())
        try await withLoopbackMode(devices: [device], tls: loopbackTLS()) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(try assigned("T-1"), to: stranger)
                _ = try await client.send(try assigned("T-2"), to: try DeviceToken(sandboxToken))
            }
            // Delivered in order of acceptance: once T-2 is shown, T-1 would have been received.
            _ = try await event(device) { if case .addedToNotificationList = $0 { true } else { false } }
            #expect(loopback.server.acceptedCount == 2)
            #expect(device.timeline.filter { if case .pushReceived = $0.event { true } else { false } }.count == 1)
        }
        try await withLoopbackMode(
            devices: [device], tls: loopbackTLS(), configuration: LocalAPNSConfiguration(acceptsUnknownTokens: false)
        ) { loopback in
            _ = try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                await #expect { _ = try await client.send(try assigned("T-3"), to: stranger) } throws: { error in
                    (error as? APNSError)?.reason == .badDeviceToken
                }
            }
            #expect(loopback.server.acceptedCount == 0)
        }
    }

    @Test("A broadcast reaches the Live Activities subscribed to its channel on every device, with the stale-timestamp rule")
    func broadcast() async throws {
        let phone = SimulatedDevice(backgroundBudget: nil)
        let tablet = SimulatedDevice(backgroundBudget: nil)
        phone.install(makeApp())
        tablet.install(makeApp(pushToStartToken: tabletPushToStart, deviceToken: tabletToken))
        try await withLoopbackMode(devices: [phone, tablet], tls: loopbackTLS()) { loopback in
            let t0 = Date(timeIntervalSince1970: 1_760_000_000)
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                let channel = try await client.createChannel(bundleID: appID, storagePolicy: .noMessageStored)
                // The phone's activity subscribes at start (input-push-channel); the tablet's by a call.
                _ = try await client.send(APNSLiveActivityStartNotification(
                    attributesType: "DeliveryAttributes", attributes: DeliveryAttributes(pizzaName: "Margherita"),
                    contentState: Delivery(status: "baking", eta: 20), alert: APNSLiveActivityAlert(title: "Order", body: "Baking"),
                    timestamp: t0, topic: appID, inputPushChannel: channel
                ), to: try DeviceToken(pushToStart))
                _ = try await client.send(APNSLiveActivityStartNotification(
                    attributesType: "DeliveryAttributes", attributes: DeliveryAttributes(pizzaName: "Funghi"),
                    contentState: Delivery(status: "baking", eta: 25), alert: APNSLiveActivityAlert(title: "Order", body: "Baking"),
                    timestamp: t0, topic: appID
                ), to: try DeviceToken(tabletPushToStart))
                let onTablet = try await tablet.awaitEvent { if case .liveActivityStarted = $0 { true } else { false } }
                guard case .liveActivityStarted(let tabletActivity, _, _, _) = onTablet.event else { return }
                try tablet.subscribe(tabletActivity, toChannel: channel.rawValue)
                _ = try await phone.awaitEvent { if case .liveActivitySubscribed = $0 { true } else { false } }
                for (offset, status) in [(60, "on the way"), (30, "stale news")] {
                    _ = try await client.send(APNSBroadcastNotification(
                        channelID: channel, bundleID: appID, event: .update, contentState: Delivery(status: status, eta: 5),
                        timestamp: t0 + TimeInterval(offset)
                    ))
                }
            }
            for device in [phone, tablet] {
                _ = try await event(device) { if case .liveActivityPushIgnored = $0 { true } else { false } }
                let activity = try #require(device.liveActivities.first)
                #expect(activity.history.map { $0.contentState["status"]?.stringValue } == ["baking", "on the way"])
            }
        }
    }

    @Test("The six common mistakes are visible in the timeline")
    func sixMistakes() async throws {
        // 1. No authorization: nothing shown, no error. 5. No mutable-content: the extension does not run.
        // 6. One identifier reused: the later replaces the earlier.
        let device = SimulatedDevice(backgroundBudget: nil)
        device.install(makeApp(authorization: .denied))
        try await withLoopbackMode(devices: [device], tls: loopbackTLS()) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(try assigned("T-1"), to: try DeviceToken(sandboxToken))
            }
            _ = try await event(device) { if case .notShown(_, _, .notAuthorized) = $0 { true } else { false } }
        }

        let device2 = SimulatedDevice(backgroundBudget: nil)
        let seen = Seen()
        let phone = makeApp(state: .notRunning, serviceExtension: ServiceExtension(timeLimit: nil, isRequiredForEveryAlert: true) { _, manager in
            manager.complete(forces: false)
        }, isDelegateSetBeforeLaunch: false)
        phone.visibleRouter.addHandler(TaskTappedHandler(seen: seen))
        phone.silentRouter.addHandler(NeverCompletes())
        device2.install(phone)
        try await withLoopbackMode(devices: [device2], tls: loopbackTLS()) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(try assigned("T-2", mutable: false), to: try DeviceToken(sandboxToken))
                _ = try await client.send(try assigned("T-3", collapseID: "same"), to: try DeviceToken(sandboxToken))
                _ = try await client.send(try assigned("T-4", collapseID: "same"), to: try DeviceToken(sandboxToken))
            }
            _ = try await event(device2) { if case .serviceExtensionNotRun = $0 { true } else { false } }
            _ = try await event(device2) { if case .notificationReplaced(_, "same", _) = $0 { true } else { false } }
            // 2. No delegate set before launch: the response that launches the app is lost.
            _ = try? await device2.tap("same", in: app)
            _ = try await event(device2) { if case .responseLost = $0 { true } else { false } }
            #expect(seen.all.isEmpty)
            // 4. A completion handler never called: the background budget runs out.
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(APNSBackgroundNotification(topic: appID, payload: Custom(type: "hang", task_id: "T-5")),
                                          to: try DeviceToken(sandboxToken))
            }
            _ = try await event(device2) { if case .backgroundDeliveryStarted = $0 { true } else { false } }
            while device2.expireBackgroundBudgets() == 0 { await Task.yield() }
            _ = try await event(device2) { if case .backgroundBudgetExceeded = $0 { true } else { false } }
        }
        // 3. Temporary attachment files: covered where the extension attaches a file that is then deleted.
        let device3 = SimulatedDevice(backgroundBudget: nil)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("forge-attachment-\(UUID().uuidString).png")
        try Data([1, 2, 3]).write(to: file)
        device3.install(makeApp(serviceExtension: ServiceExtension(timeLimit: nil) { _, manager in
            manager.mutableContent.update { $0.attachments = [NotificationAttachment(identifier: "image", url: file)] }
            try? FileManager.default.removeItem(at: file)  // the temporary file is gone before iOS reads it
            manager.complete(forces: false)
        }))
        try await withLoopbackMode(devices: [device3], tls: loopbackTLS()) { loopback in
            try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
                _ = try await client.send(try assigned("T-6", mutable: true), to: try DeviceToken(sandboxToken))
            }
            _ = try await event(device3) { if case .attachmentDropped = $0 { true } else { false } }
        }
    }
}

/// A silent handler that never returns until cancelled: the completion handler is never called.
private struct NeverCompletes: SilentPushHandler {
    let id = "never-completes"
    func matchesPayload(_ payload: JSONValue) -> Bool { payload["type"]?.stringValue == "hang" }
    func handle(_ payload: JSONValue, context: SilentPushContext) async -> SilentPushResult {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
        return .failed
    }
}
