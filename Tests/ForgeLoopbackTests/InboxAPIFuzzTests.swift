import ForgeLoopback
import ForgeLoopbackUI
import ForgeTestSupport
import Foundation
import Testing

@Suite("The inbox API: requests that fuzzing found")
struct InboxAPIFuzzTests {
    let api = LocalAPNSInboxAPI(inbox: LocalAPNSInbox(), phones: LocalAPNSPhones())

    /// Fixtures/fuzz-inbox-wait-timeout-nan, a FuzzInboxAPI input (`METHOD\nPATH\nQUERY`):
    /// `timeout=nan` reached `Int64(_:)` and trapped, taking `apnsctl serve --ui-port` down.
    @Test("GET /api/v1/wait?topic=a&timeout=nan is a 400 naming the timeout")
    func fuzzedWaitTimeout() async throws {
        let request = try FuzzFixture.inboxRequest("Tests/ForgeLoopbackTests/Fixtures/fuzz-inbox-wait-timeout-nan")
        let response = await self.api.respond(method: request.method, path: request.path, query: request.query)
        #expect(response.status == 400)
        #expect(String(decoding: response.body, as: UTF8.self).contains("timeout: must be a duration above 0 and at most 60s"))
    }

    @Test("A timeout that is a number but no duration is a 400, not a trap", arguments: ["inf", "-inf", "1e300", "-1e300", "3601", "-5"])
    func numbersBeyondAWait(value: String) async {
        let response = await self.api.respond(method: "GET", path: "/api/v1/wait", query: "topic=a&timeout=\(value)")
        #expect(response.status == 400)
        #expect(String(decoding: response.body, as: UTF8.self).contains("timeout: must be a duration above 0 and at most 60s"))
    }

    @Test("Seconds as a plain number still wait that long")
    func plainSeconds() async {
        let response = await self.api.respond(method: "GET", path: "/api/v1/wait", query: "topic=a&timeout=0.05")
        #expect(response.status == 408)
        #expect(String(decoding: response.body, as: UTF8.self).contains("within 50ms"))
    }
}
