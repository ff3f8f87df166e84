import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeLoopback
import ForgeNotificationTypes
import ForgeSimulatedDevice
import Foundation
import Tracing

// Every ```swift block of README.md appears here line for line (ReadmeTests checks it), so the
// README's code compiles in CI; the blocks that need no Apple account also run there, against
// the local server.

/// README, "Using the library": a configuration (compiled only: the key file is an example).
func readmeConfiguration() throws -> APNSClient.Configuration {
    let configuration = APNSClient.Configuration(
        authentication: .jwt(
            key: try APNSSigningKey(contentsOfFile: "AuthKey_ABC123DEFG.p8"),
            keyID: try APNSKeyID("ABC123DEFG"),
            teamID: try APNSTeamID("DEF123GHIJ")
        ),
        environment: .production  // .sandbox for apps built for development
    )
    return configuration
}

/// README: one alert.
func readmeSendOne(configuration: APNSClient.Configuration, deviceToken: DeviceToken) async throws {
    try await withAPNSClient(configuration: configuration) { client in
        let shipped = APNSAlertNotification(
            alert: APNSAlert(title: "Your order shipped", body: "It arrives tomorrow."),
            topic: try APNSBundleID("com.example.shop"),
            sound: .default
        )
        do {
            let result = try await client.send(shipped, to: deviceToken)
            print("accepted, apns-id \(result.apnsID)")
        } catch let error as APNSError where error.reason == .unregistered {
            print("the app is gone since \(error.timestamp!): stop sending to this token")
        }
    }
}

/// README: a Live Activity update.
func readmeLiveActivity(configuration: APNSClient.Configuration, activityToken: DeviceToken) async throws {
    struct DeliveryState: Codable, Sendable {
        var status: String
        var minutesAway: Int
    }

    try await withAPNSClient(configuration: configuration) { client in
        let update = APNSLiveActivityNotification(
            event: .update,
            contentState: DeliveryState(status: "On the way", minutesAway: 10),
            timestamp: Date(),
            topic: try APNSBundleID("com.example.shop"),
            staleDate: Date().addingTimeInterval(15 * 60)
        )
        _ = try await client.send(update, to: activityToken)
    }
}

/// README: a bulk send with its verdicts.
func readmeBulk<Tokens: AsyncSequence & Sendable>(
    configuration: APNSClient.Configuration, tokens: Tokens
) async throws where Tokens.Element == String {
    try await withAPNSClient(configuration: configuration) { client in
        let sale = APNSAlertNotification(
            alert: APNSAlert(title: "Flash sale", body: "Everything half price until midnight."),
            topic: try APNSBundleID("com.example.shop")
        )
        let bulk = try client.sendBulk(sale, to: tokens)  // tokens: an AsyncSequence of hex strings, or [DeviceToken]
        for await verdict in bulk {
            switch verdict.outcome {
            case .accepted:
                break
            case .rejected(let error) where error.reason == .unregistered || error.reason == .badDeviceToken:
                print("forget \(verdict.token)")  // it will never work again
            case .rejected(let error), .failed(let error), .notSent(let error):
                print("\(verdict.token): \(error)")
            }
        }
        print(bulk.summary!)  // 10000 tokens: 9990 accepted, 10 rejected (Unregistered 10), 0 failed, 0 not sent
    }
}

/// README, "Testing your backend without an iPhone".
func readmeLoopback(keys: String, deviceTokenHex: String) async throws -> [String] {
    let device = SimulatedDevice()
    device.install(SimulatedApp(bundleID: "com.example.shop", deviceTokens: [.sandbox: deviceTokenHex]))
    let tls = LoopbackMode.TLS.files(chain: "\(keys)/server.pem", key: "\(keys)/server.key", ca: "\(keys)/ca.pem")
    try await withLoopbackMode(devices: [device], tls: tls) { loopback in
        let result = try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
            try await client.send(
                APNSAlertNotification(alert: APNSAlert(title: "Hi", body: "From the test"), topic: try APNSBundleID("com.example.shop")),
                to: try DeviceToken(deviceTokenHex)
            )
        }
        _ = try await device.awaitEvent { if case .addedToNotificationList = $0 { true } else { false } }
        _ = try await device.tap(result.apnsID, in: "com.example.shop")
    }
    print(device.timelineDescription.joined(separator: "\n"))
    return device.timelineDescription
}

// README: the delegate.
/// The app's scene and notification-centre delegate (seed 004).
struct ShopDelegate: SimulatedAppDelegate {
    func sceneWillConnect(_ options: SceneConnectionOptions) async {
        print("scene connects for", options.notificationResponse?.notification.request.identifier ?? "a plain launch")
    }
    func willPresent(_ notification: DeliveredNotification) async -> PresentationOptions { [.banner, .list] }
}

/// README: several devices, a delegate, the launch route.
func readmeSeveralDevices(
    tls: LoopbackMode.TLS, phoneToken: String, tabletToken: String
) async throws -> (phone: SimulatedDevice, tablet: SimulatedDevice) {
    let phone = SimulatedDevice(), tablet = SimulatedDevice()
    let shop = SimulatedApp(bundleID: "com.example.shop", deviceTokens: [.sandbox: phoneToken], state: .notRunning,
                            delegate: ShopDelegate())
    phone.install(shop)
    tablet.install(SimulatedApp(bundleID: "com.example.shop", deviceTokens: [.sandbox: tabletToken]))
    try await withLoopbackMode(devices: [phone, tablet], tls: tls) { loopback in
        let sent = try await withAPNSClient(configuration: loopback.clientConfiguration) { client in
            let alert = APNSAlertNotification(alert: APNSAlert(title: "Back in stock", body: "Your size"),
                                              topic: try APNSBundleID("com.example.shop"))
            _ = try await client.send(alert, to: try DeviceToken(tabletToken))  // only the tablet gets this one
            return try await client.send(alert, to: try DeviceToken(phoneToken))
        }
        _ = try await phone.awaitEvent { if case .addedToNotificationList = $0 { true } else { false } }
        // Terminated: launched (inactive), the scene connects with the response, then the VisiblePushRouter.
        _ = try await phone.tap(sent.apnsID, in: "com.example.shop")
    }
    return (phone, tablet)
}

/// README, "Operating it": the client's spans under the app's own.
func readmeTracing(configuration: APNSClient.Configuration, tracer: any Tracer, deviceToken: DeviceToken) async throws {
    var traced = configuration
    traced.tracer = tracer  // nil, the default: InstrumentationSystem.tracer (swift-otel's, say)
    try await withAPNSClient(configuration: traced) { client in
        let alert = APNSAlertNotification(alert: APNSAlert(title: "Paid", body: "Thank you"), topic: try APNSBundleID("com.example.shop"))
        try await tracer.withSpan("checkout") { _ in           // the app's span
            _ = try await client.send(alert, to: deviceToken)   // its child: "APNs send"
        }
    }
}
