import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeSimulatedDevice
import ForgeTestSupport
import Foundation
import InMemoryTracing
import Testing
import Tracing

private let keys = KeysExample.directory.path

/// The lines of `text`, each without the whitespace around it, blank lines dropped.
private func significantLines(_ text: String) -> [String] {
    text.split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.trimmingCharacters(in: .whitespaces) }
        .filter { !$0.isEmpty }
}

/// The ```swift blocks of a Markdown text.
private func swiftBlocks(_ markdown: String) -> [String] {
    var blocks: [String] = []
    var current: [Substring]?
    for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
        if current == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" {
            current = []
        } else if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
            blocks.append(current!.joined(separator: "\n"))
            current = nil
        } else {
            current?.append(line)
        }
    }
    return blocks
}

/// A local server with the test key registered and a client configuration for it.
private func localServer() throws -> (LocalAPNsServer, APNSClient.Configuration) {
    let key = try APNSSigningKey(contentsOfFile: "\(keys)/AuthKey_FORGEKEY01.p8")
    let keyID = try APNSKeyID("FORGEKEY01")
    let teamID = try APNSTeamID("FORGETEAM1")
    let local = LocalAPNsConfiguration()
    let tls = HTTP2ServerTLSConfiguration(certificateChainFile: "\(keys)/server.pem", privateKeyFile: "\(keys)/server.key")
    let server = try LocalAPNsServer.start(
        local, http2: HTTP2ServerConfiguration(tls: tls),
        tokens: [String(format: "%064x", 7): LocalAPNsTokenRecord(bundleID: "com.example.shop", environment: local.environment,
                                                                   state: .unregistered(Date()))],
        authenticator: TokenAuthenticator(
            keys: [LocalAPNsKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: local.environment
        )
    )
    let configuration = APNSClient.Configuration(
        authentication: .jwt(key: key, keyID: keyID, teamID: teamID),
        environment: .custom(host: "localhost", port: server.port),
        tls: APNSClient.TLS(caFile: "\(keys)/ca.pem")
    )
    return (server, configuration)
}

@Suite("README: every Swift snippet compiles, and those that need no Apple account run", .timeLimit(.minutes(1)))
struct ReadmeTests {
    @Test("Every ```swift block of README.md is in ReadmeSnippets.swift, line for line")
    func snippetsAreCompiled() throws {
        let readme = try String(contentsOf: PackageRoot.directory.appendingPathComponent("README.md"), encoding: .utf8)
        let source = significantLines(try String(
            contentsOf: PackageRoot.directory.appendingPathComponent("Tests/ReadmeTests/ReadmeSnippets.swift"), encoding: .utf8
        ))
        let blocks = swiftBlocks(readme)
        #expect(blocks.count >= 5, "README.md has \(blocks.count) swift blocks")
        for block in blocks {
            let lines = significantLines(block)
            let found = lines.isEmpty || source.indices.contains { start in
                start + lines.count <= source.count && Array(source[start..<start + lines.count]) == lines
            }
            #expect(found, "README block not in ReadmeSnippets.swift (so not compiled):\n\(block)")
        }
    }

    @Test("The send, Live Activity and bulk snippets work against the local server")
    func snippetsRun() async throws {
        let (server, configuration) = try localServer()
        let token = try DeviceToken(String(repeating: "ab", count: 32))
        try await readmeSendOne(configuration: configuration, deviceToken: token)
        try await readmeLiveActivity(configuration: configuration, activityToken: token)
        let tokens = (1...50).map { String(format: "%064x", $0) }
        try await readmeBulk(configuration: configuration, tokens: AsyncTokenList(tokens))
        let pushTypes = server.accepted.map(\.pushType.rawValue)
        #expect(pushTypes.prefix(2) == ["alert", "liveactivity"])
        // The bulk's 50 tokens: 49 accepted, the unregistered one not.
        #expect(server.accepted.count == 2 + 49)
        #expect(!server.accepted.contains { $0.token == String(format: "%064x", 7) })
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
        let tls = LoopbackMode.TLS.files(chain: "\(keys)/server.pem", key: "\(keys)/server.key", ca: "\(keys)/ca.pem")
        let (phone, tablet) = try await readmeSeveralDevices(
            tls: tls, phoneToken: String(repeating: "d1", count: 32), tabletToken: String(repeating: "d2", count: 32)
        )
        let received = { (device: SimulatedDevice) in device.timeline.filter { if case .pushReceived = $0.event { true } else { false } }.count }
        #expect(received(phone) == 1 && received(tablet) == 1)
        let events = phone.timeline.map(\.event)
        let scene = try #require(events.firstIndex { if case .sceneConnected = $0 { true } else { false } })
        let routed = try #require(events.firstIndex { if case .responseRouted = $0 { true } else { false } })
        #expect(scene < routed)
    }

    @Test("The loopback snippet: send, shown, tapped")
    func loopbackSnippetRuns() async throws {
        let timeline = try await readmeLoopback(keys: keys, deviceTokenHex: String(repeating: "cd", count: 32))
        #expect(timeline.contains { $0.contains("added to the notification list") || $0.contains("addedToNotificationList") })
        #expect(timeline.contains { $0.contains("tap") || $0.contains("response") })
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
