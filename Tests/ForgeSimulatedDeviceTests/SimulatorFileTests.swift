import ForgeNotificationTypes
import ForgeSimulatedDevice
import Foundation
import Testing

/// `.apns` files delivered as the Simulator's drag and drop delivers them.
@Suite("A .apns file delivered to the simulated device")
struct SimulatorFileTests {
    @Test("The app its \"Simulator Target Bundle\" names shows the alert; without the key, the bundle id given beside it")
    func delivered() async throws {
        let device = Fixture.device()
        device.install(Fixture.app(state: .background))
        let named = #"{"Simulator Target Bundle":"\#(Fixture.bundleID)","aps":{"alert":{"title":"From a fixture","body":"Hi"}}}"#
        try await device.deliver(apnsFile: Array(named.utf8))
        let shown = try #require(device.notificationList(for: Fixture.bundleID).first)
        #expect(shown.request.content.title == "From a fixture")
        #expect(shown.request.content.userInfo["Simulator Target Bundle"] == nil, "the simulator's key is not part of the payload")

        try await device.deliver(apnsFile: Array(#"{"aps":{"alert":"Second"}}"#.utf8), bundleID: Fixture.bundleID)
        #expect(device.notificationList(for: Fixture.bundleID).count == 2)
    }

    @Test("A file simctl refuses, or for an app not installed, throws with the rule and delivers nothing")
    func refused() async {
        let device = Fixture.device()
        device.install(Fixture.app())
        let cases: [(String, String?, SimulatedDeviceError, String)] = [
            ("[1]", Fixture.bundleID, .badSimulatorFile, "must be one JSON object"),
            (#"{"x":1}"#, Fixture.bundleID, .badSimulatorFile, "top-level \"aps\" object"),
            (#"{"aps":{"alert":"\#(String(repeating: "x", count: 4100))"}}"#, Fixture.bundleID, .badSimulatorFile, "at most 4096 bytes"),
            (#"{"aps":{"alert":"x"}}"#, nil, .badSimulatorFile, "needs \"Simulator Target Bundle\""),
            (#"{"Simulator Target Bundle":"com.example.absent","aps":{"alert":"x"}}"#, nil, .unknownApp, "no app com.example.absent"),
        ]
        for (text, bundleID, expected, message) in cases {
            do {
                try await device.deliver(apnsFile: Array(text.utf8), bundleID: bundleID)
                Issue.record("delivered \(text.prefix(40))")
            } catch {
                #expect(error == expected && error.message.contains(message), "\(error.message)")
            }
        }
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
    }
}
