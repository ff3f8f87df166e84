import ForgeAPNsCore
import Testing

@Suite("APNs environments: Apple's two ports, channel management kept apart")
struct EnvironmentTests {
    @Test("Production and sandbox on 2197: the authority carries the port; channel management keeps Apple's host and port")
    func alternatePort() throws {
        let production = try APNSEnvironment.production.port(APNSEnvironment.alternatePort)
        #expect(production.host == "api.push.apple.com" && production.port == 2197)
        #expect(production.authority == "api.push.apple.com:2197")
        #expect(production.description == "production (port 2197)")
        #expect(production.channelManagement == APNSEnvironment.production.channelManagement)
        #expect(production.channelManagement.authority == "api-manage-broadcast.push.apple.com:2196")
        let sandbox = try APNSEnvironment.sandbox.port(2197)
        #expect(sandbox.channelManagement.authority == "api-manage-broadcast.sandbox.push.apple.com:2195")
        #expect(try APNSEnvironment.sandbox.port(443) == .sandbox)
    }

    @Test("Apple's hosts take 443 or 2197 only; a custom endpoint any port, and its channel management is itself")
    func portRules() throws {
        #expect(throws: APNSValidationError.self) { try APNSEnvironment.production.port(8443) }
        do {
            _ = try APNSEnvironment.sandbox.port(80)
            Issue.record("the sandbox took port 80")
        } catch {
            #expect(error.field == "port")
            #expect(error.rule == "api.sandbox.push.apple.com serves APNs on 443 and 2197 only (got 80)")
        }
        let custom = try APNSEnvironment.custom(host: "127.0.0.1", port: 2197).port(8443)
        #expect(custom.authority == "127.0.0.1:8443")
        #expect(custom.channelManagement == custom)
        #expect(throws: APNSValidationError.self) { try APNSEnvironment.custom(host: "h", port: 1).port(70_000) }
    }
}
