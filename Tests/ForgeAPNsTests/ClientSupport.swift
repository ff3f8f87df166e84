import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Logging
import Testing

let bundle = "com.example.forgepush"
let bundleID = try! APNSBundleID(bundle)
let signingKey = try! APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
let keyID = try! APNSKeyID("FORGEKEY01")
let teamID = try! APNSTeamID("FORGETEAM1")

func token(_ index: Int) -> DeviceToken {
    try! DeviceToken(String(format: "%064x", index + 1))
}

/// A local APNs server over TLS with token authentication, and a client configuration for it.
struct Loopback {
    let server: LocalAPNSServer
    let configuration: APNSClient.Configuration

    static func start(
        _ local: LocalAPNSConfiguration = LocalAPNSConfiguration(),
        tokens: [String: LocalAPNSTokenRecord] = [:],
        serverClock: any APNSWallClock = .system,
        clientClock: any APNSWallClock = .system,
        answersPings: Bool = true,
        retry: APNSClient.RetryPolicy = APNSClient.RetryPolicy(backoffBase: .milliseconds(5), backoffCap: .milliseconds(50)),
        pool: APNSClient.Pool = APNSClient.Pool(),
        timeouts: APNSClient.Timeouts = APNSClient.Timeouts(),
        logger: Logger = Logger(label: "test.apns")
    ) throws -> Loopback {
        let tls = HTTP2ServerTLSConfiguration(certificateChainFile: KeysExample.path("server.pem"), privateKeyFile: KeysExample.path("server.key"))
        let server = try LocalAPNSServer.start(
            local, http2: HTTP2ServerConfiguration(tls: tls, answersPings: answersPings), tokens: tokens,
            authenticator: TokenAuthenticator(
                keys: [LocalAPNSKey(keyID: keyID, teamID: teamID, verificationKey: signingKey.publicKey)],
                environment: local.environment, clock: serverClock
            ),
            clock: serverClock
        )
        let configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID),
            environment: .custom(host: "localhost", port: server.port),
            tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem")),
            timeouts: timeouts, pool: pool, retry: retry, logger: logger, clock: clientClock
        )
        return Loopback(server: server, configuration: configuration)
    }
}

func alert(_ title: String = "Hello") -> APNSAlertNotification<APNSNoCustomKeys> {
    APNSAlertNotification(alert: APNSAlert(title: title, body: "From ForgePush"), topic: bundleID)
}

/// Collects every verdict of a bulk send, checking each index appears exactly once.
func collect(_ bulk: APNSBulkSend, expected: Int) async -> (verdicts: [APNSBulkVerdict], summary: APNSBulkSummary) {
    var verdicts: [APNSBulkVerdict] = []
    for await verdict in bulk { verdicts.append(verdict) }
    let indices = verdicts.map(\.index).sorted()
    #expect(indices == Array(0..<expected), "every token gets exactly one verdict")
    let summary = bulk.summary ?? APNSBulkSummary()
    #expect(summary.total == expected)
    #expect(summary.accepted + summary.rejectedCount + summary.failed + summary.notSent == expected)
    return (verdicts, summary)
}
