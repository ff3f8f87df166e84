import Foundation
@testable import ForgeSupport
import Testing

/// A value set once and awaited by many: each waiter gets the first value set, exactly once.
@Suite("OneShot")
struct OneShotTests {
    @Test("The first value set wins, whoever sets it; later ones change nothing")
    func firstWins() async {
        let once = OneShot<Int>()
        #expect(!once.isResolved)
        #expect(once.resolve(1))
        #expect(!once.resolve(2))
        #expect(once.isResolved)
        #expect(await once.value == 1)
    }

    @Test("Every waiter is woken by a value set on another thread")
    func manyWaitersAnotherThread() async {
        let once = OneShot<String>()
        await withTaskGroup(of: String.self) { group in
            for _ in 0..<50 { group.addTask { await once.value } }
            Thread { once.resolve("set") }.start()
            var count = 0
            for await value in group {
                #expect(value == "set")
                count += 1
            }
            #expect(count == 50)
        }
    }

    @Test("value keeps waiting in a cancelled task until the value is set")
    func valueIgnoresCancellation() async {
        let once = OneShot<Int>()
        let task = Task { await once.value }
        task.cancel()
        once.resolve(7)
        #expect(await task.value == 7)
    }

    @Test("value(resolvingOnCancel:) sets its value when its task is cancelled before it waits")
    func cancelledBefore() async {
        let once = OneShot<Bool>()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await once.value(resolvingOnCancel: false)
        }
        #expect(await task.value == false)
        #expect(once.isResolved && !once.resolve(true))
    }

    @Test("value(resolvingOnCancel:) sets its value when its task is cancelled while waiting; other waiters get it too")
    func cancelledWhileWaiting() async {
        let once = OneShot<Int>()
        let other = Task { await once.value }
        let task = Task { await once.value(resolvingOnCancel: -1) }
        task.cancel()
        #expect(await task.value == -1)
        #expect(await other.value == -1)
    }

    @Test("value(resolvingOnCancel:) returns the value set first, not its own, when cancelled after")
    func resolvedThenCancelled() async {
        let once = OneShot<Int>()
        once.resolve(3)
        let task = Task { await once.value(resolvingOnCancel: -1) }
        task.cancel()
        #expect(await task.value == 3)
    }

    @Test("Under contention (4 threads resolving, 200 waiters) every waiter gets the one value set")
    func contention() async {
        let once = OneShot<Int>()
        let tally = LockedBox((winners: 0, done: 0))
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<200 { group.addTask { await once.value } }
            let threads = (0..<4).map { index in
                Thread {
                    let won = once.resolve(index)
                    tally.withLock { tally in
                        if won { tally.winners += 1 }
                        tally.done += 1
                    }
                }
            }
            threads.forEach { $0.start() }
            var values = Set<Int>()
            for await value in group { values.insert(value) }
            #expect(values.count == 1)
        }
        while tally.withLock({ $0.done }) < 4 { await Task.yield() }
        #expect(tally.withLock { $0.winners } == 1)
    }
}
