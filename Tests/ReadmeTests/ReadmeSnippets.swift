import ForgeCampaign
import ForgeLiveActivities
import ForgeLiveActivitiesGateway
import Hummingbird
import ForgeLoopback
import Foundation
import Tracing

// Every ```swift block of README.md and of the DocC articles (Sources/*/*.docc/*.md) appears here
// line for line, without its imports (ReadmeTests checks it), so that the in-package tests can run
// them against the local server. A block shown in two documents is here once. The oracle that the
// blocks compile as written, with only their own imports, is the outside build in
// ReadmePackageTests.swift.

func makeConfiguration() throws -> APNSClient.Configuration {
    APNSClient.Configuration(
        authentication: .jwt(
            key: try APNSSigningKey(contentsOfFile: "AuthKey_ABC123DEFG.p8"),
            keyID: try APNSKeyID("ABC123DEFG"),
            teamID: try APNSTeamID("DEF123GHIJ")
        ),
        environment: .production  // .sandbox for apps built for development
    )
}

func notifyShipped(_ deviceToken: DeviceToken, configuration: APNSClient.Configuration) async throws {
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

actor OrderNotifier {
    let configuration: APNSClient.Configuration
    private(set) var sentIDs: [String] = []  // the apns-id of every push APNs accepted

    init(configuration: APNSClient.Configuration) {
        self.configuration = configuration
    }

    func notifyShipped(_ tokens: [DeviceToken]) async throws {
        try await withAPNSClient(configuration: self.configuration) { client in
            let shipped = APNSAlertNotification(
                alert: APNSAlert(title: "Your order shipped", body: "It arrives tomorrow."),
                topic: try APNSBundleID("com.example.shop")
            )
            for token in tokens {
                let result = try await client.send(shipped, to: token)
                self.sentIDs.append(result.apnsID)  // on the actor
            }
        }
    }
}

struct DeliveryState: Codable, Sendable {
    var status: String
    var minutesAway: Int
}

func updateDelivery(_ activityToken: DeviceToken, configuration: APNSClient.Configuration) async throws {
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

struct ScoreState: Codable, Sendable {
    var home: Int
    var away: Int
}

func broadcastScore(configuration: APNSClient.Configuration) async throws -> APNSChannelID {
    try await withAPNSClient(configuration: configuration) { client in
        let shop = try APNSBundleID("com.example.shop")
        let channel = try await client.createChannel(bundleID: shop, storagePolicy: .noMessageStored)
        // The app subscribes its activities to `channel` (ActivityKit's channel id); then one push reaches them all.
        let score = APNSBroadcastNotification(
            channelID: channel, bundleID: shop, event: .update, contentState: ScoreState(home: 2, away: 1), timestamp: Date()
        )
        _ = try await client.send(score)
        return channel
    }
}

func announceSale(to tokens: some AsyncSequence<String, Never> & Sendable, configuration: APNSClient.Configuration) async throws {
    try await withAPNSClient(configuration: configuration) { client in
        let sale = APNSAlertNotification(
            alert: APNSAlert(title: "Flash sale", body: "Everything half price until midnight."),
            topic: try APNSBundleID("com.example.shop")
        )
        let bulk = try client.sendBulk(sale, to: tokens)  // tokens: [DeviceToken], or an AsyncSequence of them or of hex strings
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

func remind(_ tokens: [DeviceToken], of reminder: APNSPreparedNotification, client: APNSClient) async -> Int {
    await withTaskGroup(of: Int.self) { group in
        for share in 0..<100 {
            group.addTask(executorPreference: client.executor) {
                var accepted = 0
                for index in stride(from: share, to: tokens.count, by: 100) {
                    if (try? await client.send(reminder, to: tokens[index])) != nil { accepted += 1 }
                }
                return accepted
            }
        }
        return await group.reduce(0, +)
    }
}

func orderNotifierReachesTheApp() async throws -> [String] {
    let deviceTokenHex = String(repeating: "ab", count: 32)
    let device = SimulatedDevice()
    device.install(SimulatedApp(bundleID: "com.example.shop", deviceTokens: [.sandbox: deviceTokenHex]))
    try await withLoopbackMode(devices: [device]) { loopback in
        let notifier = OrderNotifier(configuration: loopback.clientConfiguration)
        try await notifier.notifyShipped([try DeviceToken(deviceTokenHex)])
        _ = try await device.awaitEvent { if case .addedToNotificationList = $0 { true } else { false } }
        _ = try await device.tap(await notifier.sentIDs[0], in: "com.example.shop")
    }
    return device.timelineDescription
}

/// README, "Testing without an iPhone": the README's own send, to a simulated device.
func shippedNoticeReachesTheApp() async throws -> [String] {
    let deviceTokenHex = String(repeating: "cd", count: 32)
    let device = SimulatedDevice()
    device.install(SimulatedApp(bundleID: "com.example.shop", deviceTokens: [.sandbox: deviceTokenHex]))
    try await withLoopbackMode(devices: [device]) { loopback in
        try await notifyShipped(try DeviceToken(deviceTokenHex), configuration: loopback.clientConfiguration)
        _ = try await device.awaitEvent { if case .addedToNotificationList = $0 { true } else { false } }
    }
    return device.timelineDescription  // … added to the notification list: "Your order shipped" …
}

/// The app's scene and notification-centre delegate (iOS's route for each app state).
struct ShopDelegate: SimulatedAppDelegate {
    func sceneWillConnect(_ options: SceneConnectionOptions) async {
        print("scene connects for", options.notificationResponse?.notification.request.identifier ?? "a plain launch")
    }
    func willPresent(_ notification: DeliveredNotification) async -> PresentationOptions { [.banner, .list] }
}

func backInStock(phoneToken: String, tabletToken: String) async throws -> (phone: SimulatedDevice, tablet: SimulatedDevice) {
    let phone = SimulatedDevice(), tablet = SimulatedDevice()
    let shop = SimulatedApp(bundleID: "com.example.shop", deviceTokens: [.sandbox: phoneToken], state: .notRunning,
                            delegate: ShopDelegate())
    phone.install(shop)
    tablet.install(SimulatedApp(bundleID: "com.example.shop", deviceTokens: [.sandbox: tabletToken]))
    try await withLoopbackMode(devices: [phone, tablet]) { loopback in
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

/// README, "Deploying": a proxy and Apple's other port (runs: it only builds a configuration).
func readmeDeployed(configuration: APNSClient.Configuration) throws -> APNSClient.Configuration {
    var deployed = configuration
    deployed.proxy = try APNSClient.Proxy(url: "http://pushes:s3cret@proxy.internal:3128")  // or socks5://…, .socks5(host:port:…)
    deployed.environment = try APNSEnvironment.production.port(APNSEnvironment.alternatePort)  // 2197
    print(deployed.proxy!)  // http://pushes:***@proxy.internal:3128
    return deployed
}

/// README, "Deploying": a key and a certificate from memory (`secrets` stands for a secret store).
func readmeFromSecrets(secrets: [String: String], p12Data: Data) throws -> (APNSClient.Configuration, APNSClient.Configuration) {
    let fromSecrets = APNSClient.Configuration(
        authentication: .jwt(
            key: try APNSSigningKey(pemRepresentation: secrets["apns-key"]!),
            keyID: try APNSKeyID("ABC123DEFG"),
            teamID: try APNSTeamID("DEF123GHIJ")
        ),
        environment: .sandbox
    )
    let withCertificate = APNSClient.Configuration(
        authentication: .certificate(pkcs12: p12Data, password: secrets["apns-p12-password"]!),  // or certificatePEM:privateKeyPEM:
        environment: .sandbox
    )
    return (fromSecrets, withCertificate)
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

func readmeTwoTeams(keyA: APNSSigningKey, keyB: APNSSigningKey) throws -> APNSClient.Configuration {
    APNSClient.Configuration(
        credentials: [
            .init(authentication: .jwt(key: keyA, keyID: try APNSKeyID("ABC123DEFG"), teamID: try APNSTeamID("DEF123GHIJ")),
                  topics: [try APNSBundleID("com.example.shop"), try APNSBundleID("com.example.shop.watchkitapp")]),
            .init(authentication: .jwt(key: keyB, keyID: try APNSKeyID("XYZ987WVUT"), teamID: try APNSTeamID("TSR654QPON")),
                  topics: [try APNSBundleID("com.partner.app")]),
        ],
        environment: .production
    )
}

/// Sends `notification` to `tokens`, resumably: called again after a crash with the same inputs, it
/// sends only what has no final verdict.
func sendCampaign(
    _ notification: APNSPreparedNotification, to tokens: [DeviceToken], journalPath: String,
    inputs: CampaignJournal.Fingerprint, client: APNSClient
) async throws {
    let journal = try CampaignJournal.open(path: journalPath)
    // A new campaign registers its tokens; a resumed one only checks that its inputs are the same.
    try await journal.register(
        tokens.enumerated().map { CampaignJournal.Entry(index: $0.offset, line: $0.offset + 1, token: $0.element.hexString) },
        fingerprint: inputs
    )
    for try await verdict in try journal.send(notification, client: client, window: 4096) {
        // Committed before it arrives here: a crash after this line never sends this token again.
        let duplicate = verdict.mayHaveBeenDelivered ? " (an earlier copy may have been delivered)" : ""
        print("token \(verdict.entry.index): \(verdict.outcome)\(duplicate)")
    }
}

func makeActivityManager(client: APNSClient) -> LiveActivityManager {
    LiveActivityManager(client: client, store: InMemoryLiveActivityStore())
}

/// The handler of `POST /activities/reports`.
func activityReport(_ manager: LiveActivityManager, body: [UInt8]) async -> (status: Int, json: [UInt8]) {
    let answer = await manager.handleReport(body: body)
    return (answer.status, answer.body)
}

struct OrderAttributes: Codable, Sendable {
    var order: String
}

struct OrderState: Codable, Sendable {
    var status: String
    var etaMinutes: Int
}

func followOrder(_ manager: LiveActivityManager, order: String, installation: String) async throws {
    let id = try LiveActivityID("order-\(order)")
    try await manager.start(
        activity: id, installation: try InstallationID(installation), bundleID: try APNSBundleID("com.example.shop"),
        attributesType: "OrderAttributes", attributes: OrderAttributes(order: order),
        contentState: OrderState(status: "Packing", etaMinutes: 45),
        alert: APNSLiveActivityAlert(title: .plain("Order \(order)"), body: "Packing")
    )
    // Before the app reports the activity's update token, the latest update waits for it.
    let outcome = try await manager.update(activity: id, contentState: OrderState(status: "On its way", etaMinutes: 12))
    switch outcome {
    case .sent(let result): print("sent, apns-id \(result.apnsID)")
    case .held: print("held until the app reports the update token")
    }
    do {
        try await manager.end(activity: id, contentState: OrderState(status: "Delivered", etaMinutes: 0))
    } catch {
        guard error.code == .notLive else { throw error }
        print("nothing sent: \(error)")  // dismissed on the phone, or its token is dead
    }
}

struct Score: Codable, Sendable {
    var home: Int
    var away: Int
}

func goal(_ manager: LiveActivityManager, match: [LiveActivityID], score: Score) async throws {
    let outcome = try await manager.update(activities: match, contentState: score)
    print("sent \(outcome.sent), held \(outcome.held), not sent \(outcome.failed)")
}

func followMatch(_ client: APNSClient, store: any LiveActivityStore, goals: AsyncStream<(LiveActivityID, Score)>) async throws {
    let manager = LiveActivityManager(client: client, store: store)
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await manager.run() }
        for await (activity, score) in goals {
            // Returns at once: the latest score goes out, at most one a second, within the budget.
            try await manager.request(
                update: activity, contentState: score, alert: APNSLiveActivityAlert(title: "Goal", body: .plain("\(score.home)-\(score.away)")),
                importance: .alerting
            )
        }
        group.cancelAll()
    }
}

func sweepActivities(_ manager: LiveActivityManager) async throws {
    while !Task.isCancelled {
        let summary = try await manager.sweep()
        print("ended \(summary.ended), stale \(summary.stale), removed \(summary.removed)")
        try await Task.sleep(for: .seconds(300))
    }
}

func serveLiveActivities(manager: LiveActivityManager, apiKey: String) async throws {
    let gateway = LiveActivityGateway(manager: manager, configuration: .init(apiKey: apiKey))
    let application = gateway.makeApplication(host: "127.0.0.1", port: 8080) { port in
        print("Live Activity gateway on http://127.0.0.1:\(port)")
    }
    try await withThrowingTaskGroup(of: Void.self) { group in
        // The routes record updates and ends; the manager's delivery loop sends them, paced.
        group.addTask { try await manager.run() }
        group.addTask { try await application.runService() }
        try await group.next()
        group.cancelAll()
    }
}
