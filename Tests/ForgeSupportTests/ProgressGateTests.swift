import Foundation
@testable import ForgeSupport
import Testing

/// The gate a producer waits on for a consumer's progress: every wait returns exactly once, with
/// `true` when its target is reached and `false` when the gate is released or its task cancelled.
@Suite("ProgressGate")
struct ProgressGateTests {
    @Test("A target already reached returns at once; the count and the flags read without waiting")
    func reachedAlready() async {
        let gate = ProgressGate()
        gate.advance(by: 3)
        #expect(await gate.wait(untilReached: 3))
        #expect(await gate.wait(untilReached: 0))
        #expect(gate.reached == 3 && gate.hasReached(3) && !gate.hasReached(4) && !gate.isReleased)
    }

    @Test("A waiter is resumed by an advance made on another thread, once its target is reached")
    func advanceFromAnotherThread() async {
        let gate = ProgressGate()
        async let reached = gate.wait(untilReached: 10)
        let thread = Thread {
            for _ in 0..<10 { gate.advance(by: 1) }
        }
        thread.start()
        #expect(await reached)
        #expect(gate.reached == 10)
    }

    @Test("Many waiters with their own targets: each returns true, none before its target")
    func manyWaiters() async {
        let gate = ProgressGate()
        let seen = LockedBox<[(target: Int, reachedWhenResumed: Int)]>([])
        await withTaskGroup(of: Void.self) { group in
            for target in stride(from: 100, through: 1, by: -1) {
                group.addTask {
                    let reached = await gate.wait(untilReached: target)
                    #expect(reached)
                    seen.withLock { $0.append((target, gate.reached)) }
                }
            }
            group.addTask {
                for _ in 0..<100 {
                    gate.advance(by: 1)
                    await Task.yield()
                }
            }
        }
        let results = seen.withLock { $0 }
        #expect(results.count == 100)
        #expect(results.allSatisfy { $0.reachedWhenResumed >= $0.target })
    }

    @Test("Release: every waiter returns false, later waits for unreached targets too, reached ones still true")
    func release() async {
        let gate = ProgressGate()
        gate.advance(by: 5)
        await withTaskGroup(of: Bool.self) { group in
            for target in 6...25 { group.addTask { await gate.wait(untilReached: target) } }
            // Each waiter registers or has already seen the release: both return false.
            gate.release()
            for await result in group { #expect(!result) }
        }
        #expect(gate.isReleased)
        #expect(!(await gate.wait(untilReached: 6)))
        #expect(await gate.wait(untilReached: 5))
    }

    @Test("A task cancelled before it waits returns false at once")
    func cancelledBefore() async {
        let gate = ProgressGate()
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await gate.wait(untilReached: 1)
        }
        #expect(!(await task.value))
        // Nothing is left waiting: a later advance has no one to resume.
        gate.advance(by: 1)
        #expect(gate.reached == 1)
    }

    @Test("A task cancelled while it waits returns false; the others keep waiting and are resumed later")
    func cancelledWhileWaiting() async {
        let gate = ProgressGate()
        let cancelled = Task { await gate.wait(untilReached: 2) }
        let other = Task { await gate.wait(untilReached: 2) }
        // Let both register (bounded: a few scheduler turns, no sleep for timing).
        while gate.waiting < 2 { await Task.yield() }
        cancelled.cancel()
        #expect(!(await cancelled.value))
        #expect(gate.waiting == 1)
        gate.advance(by: 2)
        #expect(await other.value)
    }

    @Test("Under contention (4 threads advancing, 500 waiters, some cancelled) every wait returns exactly once")
    func contention() async {
        let gate = ProgressGate()
        let total = 2_000
        await withTaskGroup(of: Bool?.self) { group in
            for index in 0..<500 {
                let target = (index * 7) % total + 1
                if index % 5 == 0 {
                    let task = Task { await gate.wait(untilReached: target) }
                    task.cancel()
                    group.addTask { _ = await task.value; return nil }
                } else {
                    group.addTask { await gate.wait(untilReached: target) }
                }
            }
            let threads = (0..<4).map { _ in Thread { for _ in 0..<(total / 4) { gate.advance(by: 1) } } }
            threads.forEach { $0.start() }
            var answered = 0
            for await result in group {
                answered += 1
                if let result { #expect(result) }
            }
            #expect(answered == 500)
        }
        #expect(gate.reached == total && gate.waiting == 0)
    }
}
