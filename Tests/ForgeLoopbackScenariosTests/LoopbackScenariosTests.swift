import ForgeLoopback
import ForgeLoopbackScenarios
import ForgeTestSupport
import Testing

@Suite("The demo's end-to-end scenarios, run as a test", .timeLimit(.minutes(1)))
struct LoopbackScenariosTests {
    @Test("Every scenario passes every check, and each section has a timeline")
    func everyCheckPasses() async throws {
        let tls = LoopbackMode.TLS.files(
            chain: KeysExample.path("server.pem"), key: KeysExample.path("server.key"), ca: KeysExample.path("ca.pem")
        )
        var port = 0
        let sections = try await LoopbackScenarios(tls: tls, bulkTokens: 300).run(started: { port = $0.port })

        #expect(port > 0)
        #expect(sections.map { $0.title.prefix(2) } == ["1.", "2.", "3.", "4.", "5.", "6.", "7."])
        for section in sections {
            #expect(!section.lines.isEmpty, "\(section.title)")
            #expect(section.lines.map(\.offset) == section.lines.map(\.offset).sorted(), "\(section.title): lines in date order")
            for check in section.checks {
                #expect(check.passed, "\(section.title): \(check.text): \(check.detail)")
            }
        }
        let launch = try #require(sections.first { $0.title.hasPrefix("5.") })
        let order = launch.lines.map(\.text)
        let scene = try #require(order.firstIndex { $0.contains("scene connected with the response") })
        let routed = try #require(order.firstIndex { $0.contains("routed to com.example.forgepush's VisiblePushRouter") })
        #expect(scene < routed)
    }
}
