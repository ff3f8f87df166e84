@testable import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import Logging
import Testing

/// Requests cross the client's transport seam prepared: the pool's form is made once per
/// notification and provider token, where the request is prepared, and the pool keeps none of it.
@Suite("Prepared requests: header preparation happens where a request is prepared")
struct PreparedRequestTests {
    let pool = ConnectionPool(
        configuration: HTTP2ClientConfiguration(host: "push.example"), authority: "push.example",
        limits: .init(maximumConnections: 1, maximumStreams: 10, surplusIdleTimeout: .seconds(60), idleTimeout: nil),
        logger: Logger(label: "test")
    )

    func notification() throws -> APNSPreparedNotification {
        try APNSPreparedNotification(
            pushType: .alert, topic: APNSTopic(bundleID: try APNSBundleID("com.example.app"), pushType: .alert), body: Array(#"{"aps":{}}"#.utf8)
        )
    }

    @Test("One notification's requests share one form per provider token; another token or notification needs its own")
    func serves() throws {
        let prepared = try self.notification()
        let token = try DeviceToken(String(repeating: "ab", count: 32))
        let first = prepared.request(to: token)
        let form = RouteTransport.pool(self.pool).prepare(first, authorization: "bearer a")
        #expect(form.serves(prepared.request(to: token), authorization: "bearer a"))
        #expect(!form.serves(prepared.request(to: token), authorization: "bearer b"))
        // The same notification prepared again: matched by value, not by the object it came in.
        #expect(form.serves(try self.notification().request(to: token), authorization: "bearer a"))
        let other = APNSHTTPRequest(path: "/3/device/ab", headers: [APNSHeaderField("apns-topic", "other")], body: [])
        #expect(!form.serves(other, authorization: "bearer a"))
        guard case .http2(.success(let parts)) = form.form else {
            Issue.record("the pool's form is HTTP/2 parts")
            return
        }
        #expect(parts.authority == "push.example")
        #expect(parts.headers.first == HTTP2HeaderField("authorization", "bearer a"))
        #expect(parts.headers.map(\.name) == ["authorization"] + prepared.headers.map(\.name))
    }

    @Test("A header HTTP/2 cannot carry fails the push as an invalid request, before any connection is asked for")
    func invalidHeader() async {
        let request = APNSHTTPRequest(path: "/3/device/ab", headers: [APNSHeaderField("apns-topic", "a\r\nb")], body: [])
        let transport = RouteTransport.pool(self.pool)
        let form = transport.prepare(request, authorization: nil)
        let result = await transport.send(request, prepared: form, deadline: .now + .seconds(5))
        #expect(result.failure?.kind == .invalidRequest)
        let batch = await transport.send([request, request], prepared: [form, form], deadline: .now + .seconds(5))
        #expect(batch.allSatisfy { $0.failure?.kind == .invalidRequest })
        #expect(self.pool.openConnections == 0)
    }
}
