import ForgeAPNsCore
import ForgeHTTP2
import ForgeLoopback
import ForgeTestSupport
import Foundation
import Testing


@Suite("Local APNs server over TLS", .timeLimit(.minutes(1)))
struct LocalAPNSServerTests {
    @Test("A prepared notification is accepted and recorded; an unregistered token gets 410 with its timestamp")
    func endToEnd() async throws {
        let tls = HTTP2ServerTLSConfiguration(
            certificateChainFile: KeysExample.path("server.pem"),
            privateKeyFile: KeysExample.path("server.key")
        )
        let gone = String(repeating: "0f", count: 32)
        let when = Date(timeIntervalSince1970: 1_760_000_000.5)
        let server = try LocalAPNSServer.start(http2: HTTP2ServerConfiguration(tls: tls), tokens: [
            gone: LocalAPNSTokenRecord(bundleID: "com.example.forgepush", environment: .sandbox, state: .unregistered(when)),
        ])
        let connection = try await HTTP2Connection.connect(HTTP2ClientConfiguration(
            host: "localhost", port: server.port,
            tls: HTTP2TLSConfiguration(trustRoots: .file(KeysExample.path("ca.pem")))
        ))
        let prepared = try APNSAlertNotification(
            alert: APNSAlert(title: "Hello", body: "From ForgePush"), topic: try APNSBundleID("com.example.forgepush")
        ).prepared()
        func send(_ request: APNSHTTPRequest) async throws -> HTTP2Response {
            try await connection.send(HTTP2Request(
                authority: "localhost", path: request.path,
                headers: request.headers.map { HTTP2HeaderField($0.name, $0.value) }, body: request.body
            ))
        }
        let token = try DeviceToken(String(repeating: "ab", count: 32))
        var pushes = server.acceptedPushes().makeAsyncIterator()
        let ok = try await send(prepared.request(to: token))
        #expect(ok.status == 200)
        let apnsID = try #require(ok[header: "apns-id"])
        #expect(ok[header: "apns-unique-id"] != nil)
        let push = try #require(await pushes.next())
        #expect(push.token == token.hexString && push.apnsID == apnsID && push.payload == prepared.body && push.pushType == .alert)

        let rejected = try await send(prepared.request(to: try DeviceToken(gone)))
        let error = APNSErrorResponse(
            status: rejected.status, headers: rejected.headers.map { (name: $0.name, value: $0.value) }, body: rejected.body
        )
        #expect(error.status == 410 && error.reason == .unregistered && error.disposition == .dropToken)
        #expect(error.timestamp == when)
        #expect(rejected[header: "content-type"] == "application/json")
        #expect(server.accepted.count == 1)
        await connection.close()
        await server.shutdown()
    }
}
