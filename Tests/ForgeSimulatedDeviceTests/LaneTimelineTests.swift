import ForgeSupport
import Foundation
@testable import ForgeSimulatedDevice
import Testing

/// The device's two waiting primitives on their own: a ``Lane`` serves turns in ticket order, and
/// a ``Timeline`` wakes each waiter with the first entry its predicate picks.
@Suite("Lane and Timeline")
struct LaneTimelineTests {
    private static func received(_ id: String) -> DeviceEvent {
        .pushReceived(apnsID: id, token: "00", pushType: "alert")
    }

    @Test("Turns go in ticket order whatever order the tasks start in, each ended from any thread")
    func laneOrder() async {
        let lane = Lane()
        let turns = (0..<50).map { _ in lane.ticket() }
        let served = LockedBox<[Int]>([])
        await withTaskGroup(of: Void.self) { group in
            for turn in turns.reversed() {
                group.addTask {
                    await turn.begin()
                    served.withLock { $0.append(turn.ticket) }
                    if turn.ticket % 2 == 0 {
                        let thread = Thread { turn.end() }
                        thread.start()
                    } else {
                        turn.end()
                    }
                }
            }
        }
        #expect(served.withLock { $0 } == Array(0..<50))
    }

    @Test("A cancelled task keeps its place: it waits for its turn, and the later tickets wait for it to end")
    func laneCancelled() async {
        let lane = Lane()
        let (first, second, third) = (lane.ticket(), lane.ticket(), lane.ticket())
        let served = LockedBox<[Int]>([])
        let waiting = Task {
            await second.begin()
            served.withLock { $0.append(second.ticket) }
            second.end()
        }
        let last = Task {
            await third.begin()
            served.withLock { $0.append(third.ticket) }
            third.end()
        }
        waiting.cancel()
        last.cancel()
        await Task.yield()
        #expect(served.withLock { $0 }.isEmpty, "no turn before the first ends")
        await first.begin()
        first.end()
        await waiting.value
        await last.value
        #expect(served.withLock { $0 } == [1, 2])
    }

    @Test("A waiter gets the first matching entry, past or recorded later from another thread; other waiters keep waiting")
    func timelineWaiters() async {
        let timeline = Timeline()
        timeline.record(Self.received("A"), date: Date())
        let past = await timeline.first(from: 0) { if case .pushReceived("A", _, _) = $0 { true } else { false } }
        #expect(past?.sequence == 0)
        let notPast = Task { await timeline.first(from: 1) { if case .pushReceived("A", _, _) = $0 { true } else { false } } }
        let b = Task { await timeline.first(from: 0) { if case .pushReceived("B", _, _) = $0 { true } else { false } } }
        let c = Task { await timeline.first(from: 0) { if case .pushReceived("C", _, _) = $0 { true } else { false } } }
        let thread = Thread {
            timeline.record(Self.received("B"), date: Date())
            timeline.record(Self.received("A"), date: Date())
            timeline.record(Self.received("C"), date: Date())
        }
        thread.start()
        #expect(await b.value?.sequence == 1)
        #expect(await notPast.value?.sequence == 2, "from position 1 on: the second A")
        #expect(await c.value?.sequence == 3)
    }

    @Test("A waiter cancelled before or while it waits gets nil and leaves; a trimmed timeline still answers from what it keeps")
    func timelineCancelled() async {
        let timeline = Timeline(retention: 4)
        let before = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await timeline.first(from: 0) { _ in true }
        }
        #expect(await before.value == nil)
        let during = Task { await timeline.first(from: 0) { _ in false } }
        await Task.yield()
        during.cancel()
        #expect(await during.value == nil)
        for index in 0..<20 { timeline.record(Self.received("R\(index)"), date: Date()) }
        #expect(timeline.entries.count <= 5 && timeline.entries.last?.sequence == 19)
        let kept = await timeline.first(from: 0) { _ in true }
        #expect(kept?.sequence == timeline.entries.first?.sequence, "the oldest entry kept")
    }
}
