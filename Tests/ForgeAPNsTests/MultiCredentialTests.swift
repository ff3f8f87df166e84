import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeTestSupport
import InMemoryLogging
import Foundation
import Logging
import Testing

/// Two teams' apps through one client, against a local server that knows both teams' keys, each
/// key only for its own team's bundle ids: a push carrying the wrong team's token is refused (the
/// key does not cover the topic), and a connection that saw one team refuses the other's token
/// (`InvalidProviderToken`), so any mix-up of credentials fails these tests (see `swappedCredentialsFail`).
@Suite("APNSClient: several credentials (teams) in one client", .timeLimit(.minutes(1)))
struct MultiCredentialTests {
    static let appA = try! APNSBundleID("com.teama.app")
    static let otherA = try! APNSBundleID("com.teama.other")
    static let appB = try! APNSBundleID("com.teamb.app")
    static let keyB = try! APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY02.p8"))
    static let keyIDB = try! APNSKeyID("FORGEKEY02")
    static let teamB = try! APNSTeamID("FORGETEAM2")

    /// The local server with team A's key (FORGEKEY01) for A's apps and team B's (FORGEKEY02) for B's.
    static func server() throws -> LocalAPNSServer {
        let local = LocalAPNSConfiguration()
        let tls = HTTP2ServerTLSConfiguration(certificateChainFile: KeysExample.path("server.pem"), privateKeyFile: KeysExample.path("server.key"))
        return try LocalAPNSServer.start(
            local, http2: HTTP2ServerConfiguration(tls: tls),
            authenticator: TokenAuthenticator(
                keys: [
                    LocalAPNSKey(keyID: keyID, teamID: teamID, verificationKey: signingKey.publicKey,
                                 bundleIDs: [appA.rawValue, otherA.rawValue]),
                    LocalAPNSKey(keyID: keyIDB, teamID: teamB, verificationKey: keyB.publicKey, bundleIDs: [appB.rawValue]),
                ],
                environment: local.environment
            )
        )
    }

    static func configuration(_ server: LocalAPNSServer, credentials: [APNSClient.Credential]) -> APNSClient.Configuration {
        APNSClient.Configuration(
            credentials: credentials, environment: .custom(host: "localhost", port: server.port),
            tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem")),
            retry: APNSClient.RetryPolicy(attempts: 1)
        )
    }

    static let twoTeams: [APNSClient.Credential] = [
        .init(authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), topics: [appA, otherA]),
        .init(authentication: .jwt(key: keyB, keyID: keyIDB, teamID: teamB), topics: [appB]),
    ]

    /// A VoIP push: topic `<bundle id>.voip`.
    static func voip(_ bundleID: APNSBundleID) -> APNSPayloadNotification {
        APNSPayloadNotification(pushType: .voip, topic: APNSTopic(bundleID: bundleID, pushType: .voip), json: Array(#"{"call":1}"#.utf8))
    }

    static func alert(_ bundleID: APNSBundleID) -> APNSAlertNotification<APNSNoCustomKeys> {
        APNSAlertNotification(alert: APNSAlert(title: "Hi", body: bundleID.rawValue), topic: bundleID)
    }

    /// The `kid` of a JWT's header, decoded with Foundation (not the library's code).
    static func kid(ofAuthorization value: String?) -> String? {
        guard let value, value.hasPrefix("bearer ") else { return nil }
        var header = String(value.dropFirst(7).prefix { $0 != "." })
        header = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while header.count % 4 != 0 { header += "=" }
        guard let data = Data(base64Encoded: header),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["kid"] as? String
    }

    @Test("Pushes to team A's and team B's apps through one client: each with its own key, on its own connections")
    func twoTeamsOneClient() async throws {
        let server = try Self.server()
        try await withAPNSClient(configuration: Self.configuration(server, credentials: Self.twoTeams)) { client in
            // Interleaved, so a shared connection or a swapped token would show.
            for round in 0..<3 {
                _ = try await client.send(Self.alert(Self.appA), to: token(round))
                _ = try await client.send(Self.alert(Self.appB), to: token(round))
                _ = try await client.send(Self.alert(Self.otherA), to: token(round))
            }
            // A push type with a topic suffix goes with its base bundle id's credential.
            let voip = Self.voip(Self.appB)
            _ = try await client.send(voip, to: token(9))
            #expect(client.openConnections(forBundleID: Self.appA) == 1)
            #expect(client.openConnections(forBundleID: Self.appB) == 1)
            #expect(client.openConnections == 2, "one connection per credential, summed")
            #expect(client.providerTokenSignings == 2, "one provider token per key")
        }
        let accepted = server.accepted
        #expect(accepted.count == 10)
        let teamBTopics: Set<String> = [Self.appB.rawValue, Self.appB.rawValue + ".voip"]
        var keysByConnection: [UInt64: Set<String>] = [:]
        for push in accepted {
            let kid = Self.kid(ofAuthorization: push[header: "authorization"])
            #expect(kid == (teamBTopics.contains(push.topic) ? "FORGEKEY02" : "FORGEKEY01"), "topic \(push.topic) went with \(kid ?? "no key")")
            keysByConnection[push.connectionID, default: []].insert(kid ?? "-")
        }
        #expect(keysByConnection.count == 2 && keysByConnection.values.allSatisfy { $0.count == 1 },
                "each connection carries one team's token: \(keysByConnection)")
        await server.shutdown()
    }

    @Test("A topic no credential serves fails before anything is sent, naming the topic and the served ones")
    func unservedTopic() async throws {
        let server = try Self.server()
        let unknown = try APNSBundleID("com.teamc.app")
        try await withAPNSClient(configuration: Self.configuration(server, credentials: Self.twoTeams)) { client in
            do {
                _ = try await client.send(Self.alert(unknown), to: token(1))
                Issue.record("a push to a topic no credential serves was sent")
            } catch let error as APNSError {
                #expect(error.kind == .invalidNotification)
                #expect(error.detail.contains("'com.teamc.app'") && error.detail.contains("com.teama.app, com.teama.other, com.teamb.app"),
                        "\(error.detail)")
                #expect(error.attempts == 0 && !error.mayHaveBeenDelivered)
            }
            // A bulk send to it: every token rejected, none sent.
            let bulk = try client.sendBulk(Self.alert(unknown), to: (0..<5).map(token))
            let (verdicts, summary) = await collect(bulk, expected: 5)
            #expect(summary.rejectedCount == 5 && summary.accepted == 0)
            for verdict in verdicts {
                guard case .rejected(let error) = verdict.outcome else {
                    Issue.record("token \(verdict.index): \(verdict.outcome)")
                    continue
                }
                #expect(error.kind == .invalidNotification && error.detail.contains("com.teamc.app"))
            }
            // The channel API routes by bundle id too.
            do {
                _ = try await client.createChannel(bundleID: unknown, storagePolicy: .noMessageStored)
                Issue.record("a channel was created for a bundle id no credential serves")
            } catch let error as APNSError {
                #expect(error.kind == .invalidNotification && error.detail.contains("com.teamc.app"))
            }
            #expect(client.openConnections == 0, "nothing connected")
        }
        #expect(server.accepted.isEmpty)
        await server.shutdown()
    }

    @Test("A bulk send to each team's app, and a channel and broadcast for team B, through one client")
    func bulkAndChannelsPerTeam() async throws {
        let server = try Self.server()
        try await withAPNSClient(configuration: Self.configuration(server, credentials: Self.twoTeams)) { client in
            let tokens = (0..<200).map(token)
            let bulkA = try client.sendBulk(Self.alert(Self.appA), to: tokens)
            let bulkB = try client.sendBulk(Self.alert(Self.appB), to: tokens)
            async let a = collect(bulkA, expected: tokens.count)
            async let b = collect(bulkB, expected: tokens.count)
            let (summaryA, summaryB) = await (a.summary, b.summary)
            #expect(summaryA.accepted == tokens.count, "\(summaryA)")
            #expect(summaryB.accepted == tokens.count, "\(summaryB)")
            let channel = try await client.createChannel(bundleID: Self.appB, storagePolicy: .noMessageStored)
            #expect(try await client.channels(bundleID: Self.appB).map(\.rawValue) == [channel.rawValue])
            let update = APNSBroadcastNotification(channelID: channel, bundleID: Self.appB, event: .update,
                                                   contentState: ["score": 1], timestamp: Date())
            _ = try await client.send(update)
        }
        let accepted = server.accepted
        #expect(accepted.count == 401)
        for push in accepted {
            let kid = Self.kid(ofAuthorization: push[header: "authorization"])
            #expect(kid == (push.topic == Self.appB.rawValue ? "FORGEKEY02" : "FORGEKEY01"))
        }
        await server.shutdown()
    }

    @Test("A credential for every other topic serves what the listed ones do not")
    func fallbackCredential() async throws {
        let server = try Self.server()
        let credentials: [APNSClient.Credential] = [
            .init(authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID)),
            .init(authentication: .jwt(key: Self.keyB, keyID: Self.keyIDB, teamID: Self.teamB), topics: [Self.appB]),
        ]
        try await withAPNSClient(configuration: Self.configuration(server, credentials: credentials)) { client in
            _ = try await client.send(Self.alert(Self.otherA), to: token(1))
            _ = try await client.send(Self.alert(Self.appB), to: token(2))
            // Team A's key is not registered for com.teamc.app on the server: refused there, so it was sent with A's key.
            do {
                _ = try await client.send(Self.alert(try APNSBundleID("com.teamc.app")), to: token(3))
                Issue.record("the server accepted a topic team A's key does not cover")
            } catch let error as APNSError {
                #expect(error.kind == .rejected && [.invalidProviderToken, .topicDisallowed].contains(error.reason), "\(error)")
            }
        }
        #expect(server.accepted.map(\.topic).sorted() == [Self.otherA.rawValue, Self.appB.rawValue])
        await server.shutdown()
    }

    @Test("A swapped credential really fails: team B's key for team A's app is refused by the server")
    func swappedCredentialsFail() async throws {
        let server = try Self.server()
        let swapped: [APNSClient.Credential] = [
            .init(authentication: .jwt(key: Self.keyB, keyID: Self.keyIDB, teamID: Self.teamB), topics: [Self.appA]),
            .init(authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), topics: [Self.appB]),
        ]
        try await withAPNSClient(configuration: Self.configuration(server, credentials: swapped)) { client in
            for bundleID in [Self.appA, Self.appB] {
                do {
                    _ = try await client.send(Self.alert(bundleID), to: token(1))
                    Issue.record("\(bundleID) was accepted with the other team's key")
                } catch let error as APNSError {
                    #expect(error.kind == .rejected && [.invalidProviderToken, .topicDisallowed].contains(error.reason), "\(error)")
                }
            }
        }
        #expect(server.accepted.isEmpty)
        await server.shutdown()
    }

    @Test("Logs name each credential as TEAMID/KEYID, never the key or a token")
    func logsNameTheCredential() async throws {
        let server = try Self.server()
        let capture = LogCapture()
        var configuration = Self.configuration(server, credentials: Self.twoTeams)
        configuration.logger = capture.logger(label: "test.teams")
        try await withAPNSClient(configuration: configuration) { client in
            _ = try await client.sendBulk(Self.alert(Self.appA), to: [token(1)]).summary()
            _ = try await client.sendBulk(Self.alert(Self.appB), to: [token(2)]).summary()
        }
        let finished = capture.entries.filter { "\($0.message)" == "bulk send finished" }
        #expect(finished.map { $0.metadata["apns.credential"].map { "\($0)" } } == ["FORGETEAM1/FORGEKEY01", "FORGETEAM2/FORGEKEY02"],
                "\(capture.lines)")
        let text = capture.lines.joined(separator: "\n")
        #expect(!text.contains("PRIVATE KEY") && !text.contains("bearer ") && !text.contains("eyJ"))
        await server.shutdown()
    }

    @Test("Bad credential lists are refused when the client is made, naming the rule")
    func badCredentialLists() throws {
        let environment = APNSEnvironment.custom(host: "127.0.0.1", port: 1)
        let jwtA = APNSClient.Authentication.jwt(key: signingKey, keyID: keyID, teamID: teamID)
        let jwtB = APNSClient.Authentication.jwt(key: Self.keyB, keyID: Self.keyIDB, teamID: Self.teamB)
        let cases: [([APNSClient.Credential], String)] = [
            ([], "credentials: give at least one credential"),
            ([.init(authentication: jwtA), .init(authentication: jwtB)], "credentials[1].topics: only one credential may serve every topic"),
            ([.init(authentication: jwtA, topics: [])], "credentials[0].topics: must name at least one bundle id"),
            ([.init(authentication: jwtA, topics: [Self.appA]), .init(authentication: jwtB, topics: [try APNSBundleID("com.teama.app.voip")])],
             "credentials[1].topics: 'com.teama.app' is already served by credentials[0]"),
        ]
        for (credentials, expected) in cases {
            #expect {
                _ = try APNSClient(configuration: APNSClient.Configuration(credentials: credentials, environment: environment))
            } throws: { error in
                guard let error = error as? APNSError else { return false }
                return error.kind == .invalidNotification && error.detail.hasPrefix(expected)
            }
        }
        // The single-credential configuration is one credential for every topic.
        var single = APNSClient.Configuration(authentication: jwtA, environment: environment)
        #expect(single.credentials.count == 1 && single.credentials[0].topics == nil)
        single.authentication = jwtB
        #expect("\(single.credentials[0].authentication)" == "jwt(keyID: FORGEKEY02, teamID: FORGETEAM2)")
    }
}
