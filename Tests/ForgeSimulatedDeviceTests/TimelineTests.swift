import ForgeNotificationTypes
import ForgeSimulatedDevice
import Foundation
import Testing

@Suite("Timeline")
struct TimelineTests {
    @Test("entries carry the device clock's date, a sequence, and a one-line description")
    func entries() async {
        let clock = ManualDeviceClock(now: Fixture.start)
        let device = Fixture.device(clock: clock)
        device.install(Fixture.app())
        await device.deliver(Fixture.push(#"{"aps":{"alert":"one"}}"#, apnsID: "T-1"))
        clock.advance(by: 5)
        await device.deliver(Fixture.push(#"{"aps":{"alert":"two"}}"#, apnsID: "T-2"))

        let timeline = device.timeline
        #expect(timeline.map(\.sequence) == Array(0..<timeline.count))
        #expect(timeline.first?.date == Fixture.start)
        #expect(timeline.last?.date == Fixture.start.addingTimeInterval(5))
        #expect(device.timelineDescription.allSatisfy { !$0.isEmpty && !$0.contains("\n") })
        #expect(timeline.last?.event.description == "\(Fixture.bundleID)/T-2 added to the notification list: \"\" \"two\"")
    }

    @Test("events() streams what happens next")
    func stream() async {
        let device = Fixture.device()
        device.install(Fixture.app())
        let events = device.events()
        await device.deliver(Fixture.push(#"{"aps":{"alert":"hi"}}"#, apnsID: "T-3"))

        var iterator = events.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.event == .pushReceived(apnsID: "T-3", token: Fixture.sandboxToken, pushType: "alert"))
    }

    @Test("awaitEvent finds a past event and gives up on one that never comes")
    func awaitEvent() async throws {
        let device = Fixture.device()
        device.install(Fixture.app())
        await device.deliver(Fixture.push(#"{"aps":{"alert":"hi"}}"#, apnsID: "T-4"))

        let found = try await device.awaitEvent { $0 == .pushReceived(apnsID: "T-4", token: Fixture.sandboxToken, pushType: "alert") }
        #expect(found.sequence == 0)
        await #expect(throws: SimulatedDeviceError.timedOut) {
            try await device.awaitEvent(timeout: .milliseconds(10)) { $0 == .appForegrounded(bundleID: "nobody") }
        }
    }
}
