internal import ForgeAPNs
internal import ForgeAPNsCore
package import ForgeLoopback
internal import ForgeNotificationTypes
internal import ForgeSilentPush
internal import ForgeSimulatedDevice
internal import ForgeVisiblePush
internal import Foundation
internal import Logging

/// The whole push path in one process, as a list of end-to-end scenarios: the real client, the
/// local APNs server over TLS on loopback, and a simulated device with a chat app (``ChatApp``:
/// silent and visible handlers, a scene delegate, a service extension, a Live Activity type).
///
/// 1. An alert, shown, tapped: the visible-push handler.
/// 2. A background push: both silent-push handlers, one merged result.
/// 3. A mutable-content alert the service extension rewrites.
/// 4. A Live Activity: push-to-start, an update, a stale update, the end.
/// 5. The app terminated, an alert tapped: launched, the scene connects first, then the router.
/// 6. A broadcast to a Live Activity subscribed to a channel (`input-push-channel`), and a stale one.
/// 7. A bulk send where every 100th token is unregistered on the server.
///
/// Each scenario checks what it expects and reports a ``ScenarioSection``: the server's verdicts,
/// the app's notes and the device's events merged by date. `apnsctl demo` runs them and prints the
/// sections; tests run them and assert that every check passed. Read the source as a template for
/// your own end-to-end tests.
package struct LoopbackScenarios: Sendable {
    /// What the run started with, before the first scenario.
    package struct Setup: Sendable {
        /// The local server's port on localhost.
        package var port: Int
        /// `sandbox`.
        package var environment: String
        /// One line per installed app: its state, token, handlers, extension and Live Activity token.
        package var apps: [String]
    }

    /// Every 100th bulk token is unregistered on the server.
    static let unregisteredEvery = 100

    /// The server's certificate and the CA the client trusts.
    package var tls: LoopbackMode.TLS
    /// How many tokens the bulk send addresses.
    package var bulkTokens: Int
    /// Where the server records every request it judges, if anywhere (``LocalAPNSInbox``).
    package var inbox: LocalAPNSInbox?

    /// Creates the scenarios.
    /// - Parameters:
    ///   - tls: the server's certificate and CA: by default made in memory for the run.
    ///   - bulkTokens: how many tokens the bulk send addresses (every 100th is unregistered).
    ///   - inbox: where the server records every request it judges; none by default.
    package init(tls: LoopbackMode.TLS = .ephemeral, bulkTokens: Int = 10_000, inbox: LocalAPNSInbox? = nil) {
        self.tls = tls
        self.bulkTokens = bulkTokens
        self.inbox = inbox
    }

    /// Runs every scenario in order.
    /// - Parameters:
    ///   - started: called once the server and the device are up, before the first scenario.
    ///   - finished: called with each scenario's section as it finishes.
    /// - Returns: every section, in order.
    /// - Throws: when the server cannot start.
    package func run(
        started: (Setup) -> Void = { _ in },
        finished: @escaping (ScenarioSection) -> Void = { _ in }
    ) async throws -> [ScenarioSection] {
        let recorder = ScenarioRecorder()
        // Limits only as a safety net: the app's handlers and extension complete at once.
        let device = SimulatedDevice(backgroundBudget: .seconds(10))
        let tokens = try ScenarioTokens()
        device.install(
            ChatApp.make(deviceToken: tokens.device.hexString, pushToStartToken: tokens.pushToStart.hexString, recorder: recorder)
        )
        let start = Date()
        // No history: the bulk send's pushes only pass through.
        let loopback = try LoopbackMode(
            devices: [device], tls: self.tls, environment: .sandbox, configuration: LocalAPNSConfiguration(keepsHistory: false),
            inbox: self.inbox, observer: { recorder.judged($0) }
        )
        started(Setup(port: loopback.server.port, environment: "sandbox", apps: device.apps.map(Self.describe)))
        let sections = SectionBuilder(start: start, recorder: recorder, device: device, onSection: finished)
        let steps = ScenarioSteps(tokens: tokens, bulkTokens: self.bulkTokens, sections: sections, loopback: loopback)
        var bulk: ScenarioSteps.BulkOutcome?
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await loopback.run() }
            do {
                var configuration = loopback.clientConfiguration
                // The timeline reports what the client did; its own log lines would only repeat it.
                configuration.logger = Logger(label: "forge.loopback.scenarios", factory: { _ in SwiftLogNoOpLogHandler() })
                try await withAPNSClient(configuration: configuration) { client in
                    await steps.alertAndTap(client)
                    await steps.background(client)
                    await steps.serviceExtension(client)
                    await steps.liveActivity(client)
                    await steps.launchFromTerminated(client)
                    await steps.broadcast(client)
                    await steps.deviceRules(client)
                    bulk = await steps.bulk(client)
                }
            } catch {
                let mark = sections.begin("The client")
                sections.check(false, "the client ran", expected: "a client", got: "\(error)")
                sections.finish(mark)
            }
            // Every accepted push reaches the device before run() returns.
            await loopback.shutdown()
        }
        if let bulk { steps.finishBulk(bulk) }
        return sections.sections
    }

    private static func describe(_ app: SimulatedApp) -> String {
        let state = app.state == .notRunning ? "app not running" : "app in \(app.state)"
        return "\(app.bundleID) (\(state)), token \(app.deviceTokens[.sandbox]?.prefix(8) ?? "none")…; "
            + "visible: \(app.visibleRouter.handlerIDs.joined(separator: ", ")); "
            + "silent: \(app.silentRouter.handlerIDs.joined(separator: ", ")); "
            + "service extension: \(app.serviceExtension == nil ? "none" : "yes"); "
            + "Live Activity push-to-start token \(app.pushToStartToken?.prefix(8) ?? "none")…"
    }
}

/// The scenarios' tokens: the same on every run.
struct ScenarioTokens: Sendable {
    let device: DeviceToken
    let pushToStart: DeviceToken

    init() throws {
        self.device = try DeviceToken(DeviceTokenGenerator.token(seed: 0xD3_71CE, index: 0))
        self.pushToStart = try DeviceToken(DeviceTokenGenerator.token(seed: 0x57A2_7000, index: 0))
    }

    /// The bulk send's token at `index` (no device owns it).
    static func bulk(_ index: Int) throws -> DeviceToken { try DeviceToken(DeviceTokenGenerator.token(seed: 0xB0_1C, index: index)) }
}
