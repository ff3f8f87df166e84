import ForgeHTTP2
@testable import ForgeLoopback
import ForgeSupport
import Foundation
import Testing

/// The traffic `apnsctl serve`'s phones froze on: single alerts, a bulk alternating two tokens, Live
/// Activity starts and updates, background pushes and a clear, recorded as fast as the inbox takes them.
private enum Step {
    case push(LocalAPNSInboxEntry)
    case clear
}

private func mix(round: Int) -> [Step] {
    var judge = APNSJudge()
    let now = Int(Date().timeIntervalSince1970)
    let topic = "com.example.shop.push-type.liveactivity"
    func activity(_ token: String, _ event: String, at offset: Int) -> Step {
        let body = #"{"aps":{"timestamp":\#(now + offset),"event":"\#(event)","content-state":{"step":\#(offset)},"#
            + #""attributes-type":"OrderAttributes","attributes":{"order":"\#(round)"}}}"#
        return .push(judged(&judge, token: token, topic: topic, pushType: "liveactivity", body: body))
    }
    let tokenC = String(repeating: "0c", count: 32)
    let tokenD = String(repeating: "0d", count: 32)
    var steps: [Step] = (1...5).map { .push(judged(&judge, token: tokenA, body: #"{"aps":{"alert":"single \#($0)"}}"#)) }
    steps += (1...20).map { .push(judged(&judge, token: $0.isMultiple(of: 2) ? tokenA : tokenB, body: #"{"aps":{"alert":"bulk \#($0)"}}"#)) }
    steps.append(activity(tokenC, "start", at: 0))
    steps += (1...3).map { activity(tokenD, "update", at: $0) }
    steps.append(.push(judged(&judge, token: tokenB, pushType: "background", headers: [("apns-priority", "5")], body: #"{"aps":{"content-available":1}}"#)))
    // A clear part way through in every other round: what follows it must still reach the phones.
    if round.isMultiple(of: 2) { steps.append(.clear) }
    steps += (1...10).map { .push(judged(&judge, token: $0.isMultiple(of: 2) ? tokenA : tokenB, body: #"{"aps":{"alert":"bulk 2/\#($0)"}}"#)) }
    steps.append(activity(tokenD, "end", at: 9))
    steps.append(.push(judged(&judge, token: tokenA, body: #"{"aps":{"alert":"after"}}"#)))
    return steps
}

/// Waits until every accepted entry of `entries` is on its phone, or a phone's update does not come:
/// checked at once, then after every change a phone reports. `false` after `timeout`.
private func allOnTheirPhones(
    _ entries: [LocalAPNSInboxEntry], phones: LocalAPNSPhones, updates: AsyncStream<String>, timeout: Duration,
    skipped: @escaping @Sendable () -> Int = { 0 }
) async -> Bool {
    let accepted = entries.filter(\.isAccepted)
    @Sendable func done() -> Bool { accepted.count { phones.delivery(of: $0) != nil } + skipped() >= accepted.count }
    return await withTimeout(timeout) { () async -> Bool? in
        if done() { return true }
        for await _ in updates where done() { return true }
        return nil
    } ?? false
}

@Suite("The phones follow the inbox for as long as it is open")
struct PhonesFollowTests {
    @Test("200 rounds of singles, a bulk to two tokens, Live Activities and a clear: every accepted push is on its phone within 1 s")
    func neverFreeze() async {
        var frozen: [Int] = []
        for round in 1...200 {
            let inbox = LocalAPNSInbox(capacity: 1_000)
            let phones = LocalAPNSPhones()
            let updates = phones.updates(buffer: 100_000)
            let followed = await withTaskGroup(of: Bool.self) { group -> Bool in
                group.addTask {
                    await phones.run(inbox)
                    return false
                }
                var expected: [LocalAPNSInboxEntry] = []
                for step in mix(round: round) {
                    switch step {
                    case .push(let entry): expected.append(inbox.record(entry))
                    case .clear:
                        inbox.clear()
                        expected.removeAll()
                    }
                    // The phones read while the pushes come, as over a socket: rings meet a busy reader.
                    await Task.yield()
                }
                let arrived = await allOnTheirPhones(expected, phones: phones, updates: updates, timeout: .seconds(1))
                inbox.close()
                phones.finish()
                let ended = await group.next()
                return arrived && ended == false
            }
            if !followed { frozen.append(round) }
        }
        #expect(frozen.isEmpty, "rounds whose pushes did not all reach their phones: \(frozen)")
    }

    @Test("8 tasks record at once while the phones run: each accepted push is delivered or counted as skipped")
    func concurrentRecording() async {
        let inbox = LocalAPNSInbox(capacity: 10_000)
        let phones = LocalAPNSPhones()
        let updates = phones.updates(buffer: 100_000)
        await withDiscardingTaskGroup { group in
            group.addTask { await phones.run(inbox) }
            let recorded = await withTaskGroup(of: [LocalAPNSInboxEntry].self) { writers in
                for writer in 0..<8 {
                    writers.addTask {
                        var judge = APNSJudge()
                        var mine: [LocalAPNSInboxEntry] = []
                        for index in 0..<150 {
                            let token = String(format: "%02x", writer * 4 + index % 4) + String(repeating: "e", count: 62)
                            mine.append(inbox.record(judged(&judge, token: token, body: #"{"aps":{"alert":"\#(writer)/\#(index)"}}"#)))
                            await Task.yield()
                        }
                        return mine
                    }
                }
                return await writers.reduce(into: []) { $0 += $1 }
            }
            #expect(Set(recorded.map(\.sequence)).count == 1_200)
            let arrived = await allOnTheirPhones(
                recorded, phones: phones, updates: updates, timeout: .seconds(10), skipped: { phones.skippedRequests }
            )
            #expect(arrived, "delivered \(recorded.count { phones.delivery(of: $0) != nil }), skipped \(phones.skippedRequests) of 1200")
            inbox.close()
            phones.finish()
        }
    }

    @Test("A delivery that outlasts the limit is reported once, with its apns-id; a quick one never")
    func slowDeliveryReported() {
        let watch = DeliveryWatch(limit: .seconds(5))
        let start = ContinuousClock.now
        watch.begin("QUICK", at: start)
        #expect(watch.overdue(now: start + .seconds(4)) == nil)
        watch.begin("SLOW", at: start + .seconds(4))
        #expect(watch.overdue(now: start + .seconds(9)) == nil)
        let slow = watch.overdue(now: start + .seconds(10))
        #expect(slow?.apnsID == "SLOW" && slow?.elapsed == .seconds(6))
        #expect(watch.overdue(now: start + .seconds(20)) == nil, "reported once")
        watch.end()
        #expect(watch.overdue(now: start + .seconds(30)) == nil)
    }
}
