import ForgeAPNs
import ForgeAPNsCore
import ForgeCampaign
import ForgeCrypto
import ForgeLoopback
import ForgeSimulatedDevice
import ForgeTestSupport
import Foundation
import InMemoryTracing
import Testing
import Tracing

private let keys = KeysExample.directory.path

/// The lines of `text`, each without the whitespace around it, blank lines and imports dropped.
private func significantLines(_ text: String) -> [String] {
    text.split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.trimmingCharacters(in: .whitespaces) }
        .filter { !$0.isEmpty && !$0.hasPrefix("import ") }
}

/// A local server with the test key registered and a client configuration for it.
private func localServer() throws -> (LocalAPNSServer, APNSClient.Configuration) {
    let key = try APNSSigningKey(contentsOfFile: "\(keys)/AuthKey_FORGEKEY01.p8")
    let keyID = try APNSKeyID("FORGEKEY01")
    let teamID = try APNSTeamID("FORGETEAM1")
    let local = LocalAPNSConfiguration()
    let tls = LocalAPNSServer.TLS(certificateChainFile: "\(keys)/server.pem", privateKeyFile: "\(keys)/server.key")
    let server = try LocalAPNSServer.start(
        local, listener: LocalAPNSServer.Listener(tls: tls),
        tokens: [String(format: "%064x", 7): LocalAPNSTokenRecord(bundleID: "com.example.shop", environment: local.environment,
                                                                   state: .unregistered(Date()))],
        authenticator: TokenAuthenticator(
            keys: [LocalAPNSKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: local.environment
        )
    )
    let configuration = APNSClient.Configuration(
        authentication: .jwt(key: key, keyID: keyID, teamID: teamID),
        environment: .custom(host: "localhost", port: server.port),
        tls: APNSClient.TLS(caFile: "\(keys)/ca.pem")
    )
    return (server, configuration)
}

@Suite("README and DocC articles: every Swift snippet is in-package too, and those that need no Apple account run", .timeLimit(.minutes(1)))
struct ReadmeTests {
    /// The fewest ```swift blocks each place holds now, so that a path or a fence the reader stops
    /// finding (a moved catalog, a block tagged `Swift`) fails here instead of checking nothing.
    static let minimumBlocks = [
        "README.md": 2, "Sources/ForgeAPNs/ForgeAPNs.docc": 11, "Sources/ForgeLoopback/ForgeLoopback.docc": 3,
        "Sources/ForgeCampaign/ForgeCampaign.docc": 1, "Sources/ForgeLiveActivities/ForgeLiveActivities.docc": 5,
        "Sources/ForgeLiveActivitiesGateway/ForgeLiveActivitiesGateway.docc": 1,
    ]

    @Test("Every ```swift block of README.md and of the DocC articles is in ReadmeSnippets.swift, line for line but for its imports")
    func snippetsAreCopied() throws {
        let source = significantLines(try String(
            contentsOf: PackageRoot.directory.appendingPathComponent("Tests/ReadmeTests/ReadmeSnippets.swift"), encoding: .utf8
        ))
        let blocks = try ReadmeBlocks.all()
        for (place, minimum) in Self.minimumBlocks {
            let count = blocks.filter { $0.document == place || $0.document.hasPrefix(place + "/") }.count
            #expect(count >= minimum, "\(place) has \(count) swift blocks, expected at least \(minimum)")
        }
        for (document, block) in blocks {
            let lines = significantLines(block)
            let found = lines.isEmpty || source.indices.contains { start in
                start + lines.count <= source.count && Array(source[start..<start + lines.count]) == lines
            }
            #expect(found, "a block of \(document) is not in ReadmeSnippets.swift (so not run in-package):\n\(block)")
        }
    }

    @Test("The campaign snippet sends each token once; called again with the same inputs, it sends nothing")
    func campaignSnippetRuns() async throws {
        let (server, configuration) = try localServer()
        let folder = try TemporaryFolder("readme-campaign")
        defer { folder.remove() }
        let path = folder.url.appendingPathComponent("campaign.db").path
        let tokens = try (1...3).map { try DeviceToken(String(format: "%064x", 100 + $0)) }
        let notification = try APNSAlertNotification<APNSNoCustomKeys>(
            alert: APNSAlert(title: "Sale", body: "Today only"), topic: APNSBundleID("com.example.shop")
        ).prepared()
        let inputs = CampaignJournal.Fingerprint(
            payloadSHA256: try #require(SHA256Digest.hex(notification.body)), topic: "com.example.shop", pushType: "alert",
            environment: "local", tokensPath: "-", tokensSize: tokens.count, tokensSHA256: "-"
        )
        try await withAPNSClient(configuration: configuration) { client in
            try await sendCampaign(notification, to: tokens, journalPath: path, inputs: inputs, client: client)
            try await sendCampaign(notification, to: tokens, journalPath: path, inputs: inputs, client: client)
        }
        #expect(server.accepted.map(\.token).sorted() == tokens.map(\.hexString).sorted())
        await server.shutdown()
    }

    @Test("The send, actor, Live Activity and bulk snippets work against the local server")
    func snippetsRun() async throws {
        let (server, configuration) = try localServer()
        let token = try DeviceToken(String(repeating: "ab", count: 32))
        try await notifyShipped(token, configuration: configuration)
        let notifier = OrderNotifier(configuration: configuration)
        try await notifier.notifyShipped([token, token])
        #expect(await notifier.sentIDs.count == 2)
        try await updateDelivery(token, configuration: configuration)
        let tokens = (1...50).map { String(format: "%064x", $0) }
        try await announceSale(to: AsyncTokenList(tokens), configuration: configuration)
        let pushTypes = server.accepted.map(\.pushType.rawValue)
        #expect(pushTypes.prefix(4) == ["alert", "alert", "alert", "liveactivity"])
        #expect(Set(server.accepted.prefix(3).map(\.apnsID)).isSuperset(of: await notifier.sentIDs))
        // The bulk's 50 tokens: 49 accepted, the unregistered one not.
        #expect(server.accepted.count == 4 + 49)
        #expect(!server.accepted.contains { $0.token == String(format: "%064x", 7) })
        // The executor snippet: 100 tasks on client.executor, 250 tokens (token 7 is unregistered).
        let reminder = try APNSAlertNotification(alert: APNSAlert(title: "Reminder"), topic: APNSBundleID("com.example.shop")).prepared()
        let reminded = try await withAPNSClient(configuration: configuration) { client in
            await remind((1...250).map { try! DeviceToken(String(format: "%064x", $0)) }, of: reminder, client: client)
        }
        #expect(reminded == 249)
        #expect(server.accepted.count == 4 + 49 + 249)
        await server.shutdown()
    }

    @Test("The tracing snippet: one 'APNs send' span, a child of the app's 'checkout' span")
    func tracingSnippetRuns() async throws {
        let (server, configuration) = try localServer()
        let tracer = InMemoryTracer()
        try await readmeTracing(configuration: configuration, tracer: tracer, deviceToken: try DeviceToken(String(repeating: "ab", count: 32)))
        await server.shutdown()
        let spans = tracer.finishedSpans
        let send = try #require(spans.first { $0.operationName == "APNs send" })
        let checkout = try #require(spans.first { $0.operationName == "checkout" })
        #expect(spans.count == 2)
        #expect(send.parentSpanID == checkout.spanID)
        #expect(send.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
    }

    @Test("The several-devices snippet: each device gets its own push; the scene connects before the router")
    func severalDevicesSnippetRuns() async throws {
        let (phone, tablet) = try await backInStock(
            phoneToken: String(repeating: "d1", count: 32), tabletToken: String(repeating: "d2", count: 32)
        )
        let received = { (device: SimulatedDevice) in device.timeline.filter { if case .pushReceived = $0.event { true } else { false } }.count }
        #expect(received(phone) == 1 && received(tablet) == 1)
        let events = phone.timeline.map(\.event)
        let scene = try #require(events.firstIndex { if case .sceneConnected = $0 { true } else { false } })
        let routed = try #require(events.firstIndex { if case .responseRouted = $0 { true } else { false } })
        #expect(scene < routed)
    }

    @Test("The loopback snippet: the actor sends, the alert is shown and tapped")
    func loopbackSnippetRuns() async throws {
        let timeline = try await orderNotifierReachesTheApp()
        #expect(timeline.contains { $0.contains(ReadmeBlocks.shownMark) }, "\(timeline)")
        #expect(timeline.contains { $0.contains(ReadmeBlocks.tappedMark) }, "\(timeline)")
    }

    @Test("The README's loopback snippet: its own send reaches the simulated device's notification list")
    func readmeLoopbackSnippetRuns() async throws {
        let timeline = try await shippedNoticeReachesTheApp()
        #expect(timeline.contains { $0.contains(ReadmeBlocks.shownMark) }, "\(timeline)")
    }

    @Test("The broadcast snippet: a channel is created, and the local server accepts one broadcast to it")
    func broadcastSnippetRuns() async throws {
        let (server, configuration) = try localServer()
        let channel = try await broadcastScore(configuration: configuration)
        let broadcasts = server.accepted.filter { $0.channelID != nil }
        await server.shutdown()
        #expect(broadcasts.map(\.channelID) == [channel.rawValue])
        #expect(broadcasts.first?.topic == "com.example.shop")
        let payload = String(decoding: try #require(broadcasts.first).payload, as: UTF8.self)
        #expect(payload.contains(#""home":2"#) && payload.contains(#""away":1"#), "\(payload)")
    }

    @Test("The deployment snippets build what they say: the proxy, port 2197, a key and a PKCS#12 from memory")
    func deploymentSnippetsRun() async throws {
        let (server, configuration) = try localServer()
        let deployed = try readmeDeployed(configuration: configuration)
        #expect("\(deployed.proxy!)" == "http://pushes:***@proxy.internal:3128")
        #expect(deployed.environment.authority == "api.push.apple.com:2197")
        let secrets = ["apns-key": try String(contentsOfFile: "\(keys)/AuthKey_FORGEKEY01.p8", encoding: .utf8),
                       "apns-p12-password": "forgepush-test"]
        let p12 = try Data(contentsOf: URL(fileURLWithPath: "\(keys)/client.p12"))
        let (fromSecrets, withCertificate) = try readmeFromSecrets(secrets: secrets, p12Data: p12)
        _ = try APNSClient(configuration: fromSecrets)
        _ = try APNSClient(configuration: withCertificate)  // the PKCS#12 and its password load
        await server.shutdown()
    }

    @Test("The two-teams snippet makes a client; a bundle id it does not name fails unsent, naming the served ones")
    func twoTeamsSnippet() async throws {
        let keyA = try APNSSigningKey(contentsOfFile: "\(keys)/AuthKey_FORGEKEY01.p8")
        let keyB = try APNSSigningKey(contentsOfFile: "\(keys)/AuthKey_FORGEKEY02.p8")
        let teams = try readmeTwoTeams(keyA: keyA, keyB: keyB)
        #expect(teams.credentials.map { $0.topics?.count } == [2, 1])
        try await withAPNSClient(configuration: teams) { client in
            let alert = APNSAlertNotification(alert: APNSAlert(title: "Hi"), topic: try APNSBundleID("com.example.other"))
            do {
                _ = try await client.send(alert, to: try DeviceToken(String(repeating: "ab", count: 32)))
                Issue.record("a push for a bundle id no credential serves was sent")
            } catch let error as APNSError {
                #expect(error.detail.contains("com.example.shop, com.example.shop.watchkitapp, com.partner.app"), "\(error.detail)")
            }
        }
    }
}

/// An array of strings as an async sequence.
private struct AsyncTokenList: AsyncSequence, Sendable {
    typealias Element = String
    let values: [String]
    init(_ values: [String]) { self.values = values }
    struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[String]>
        mutating func next() async -> String? { self.base.next() }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: self.values.makeIterator()) }
}
