import Foundation
@testable import ForgeSupport
import Testing

/// At most `count` holders; waiters served in order; a cancelled waiter takes no slot.
@Suite("AsyncSemaphore")
struct AsyncSemaphoreTests {
    @Test("Free slots are taken at once; the next acquire waits for a release, from another thread")
    func waitsForRelease() async {
        let semaphore = AsyncSemaphore(2)
        #expect(await semaphore.acquire())
        #expect(await semaphore.acquire())
        #expect(semaphore.available == 0)
        let third = Task { await semaphore.acquire() }
        while semaphore.waiting < 1 { await Task.yield() }
        Thread { semaphore.release() }.start()
        #expect(await third.value)
        #expect(semaphore.available == 0 && semaphore.waiting == 0)
    }

    @Test("Waiters get released slots in the order they came")
    func order() async {
        let semaphore = AsyncSemaphore(0)
        let served = LockedBox<[Int]>([])
        var tasks: [Task<Void, Never>] = []
        for index in 0..<5 {
            tasks.append(Task {
                if await semaphore.acquire() { served.withLock { $0.append(index) } }
            })
            while semaphore.waiting < index + 1 { await Task.yield() }
        }
        // One release at a time, each waiting for the one it woke: the order is the semaphore's.
        for count in 1...5 {
            semaphore.release()
            while served.withLock({ $0.count }) < count { await Task.yield() }
        }
        for task in tasks { await task.value }
        #expect(served.withLock { $0 } == [0, 1, 2, 3, 4])
    }

    @Test("A task cancelled before it acquires gets false and takes no slot")
    func cancelledBefore() async {
        let semaphore = AsyncSemaphore(1)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await semaphore.acquire()
        }
        #expect(!(await task.value))
        #expect(semaphore.available == 1)
    }

    @Test("A task cancelled while it waits gets false; the slot released later goes to the next waiter")
    func cancelledWhileWaiting() async {
        let semaphore = AsyncSemaphore(0)
        let cancelled = Task { await semaphore.acquire() }
        while semaphore.waiting < 1 { await Task.yield() }
        let next = Task { await semaphore.acquire() }
        while semaphore.waiting < 2 { await Task.yield() }
        cancelled.cancel()
        #expect(!(await cancelled.value))
        semaphore.release()
        #expect(await next.value)
        #expect(semaphore.available == 0 && semaphore.waiting == 0)
    }

    @Test("Under contention (200 tasks, 8 slots, some cancelled) no more than 8 hold it at once and every slot comes back")
    func contention() async {
        let semaphore = AsyncSemaphore(8)
        let holders = LockedBox((now: 0, most: 0))
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    if index % 7 == 0 { withUnsafeCurrentTask { $0?.cancel() } }
                    guard await semaphore.acquire() else { return }
                    holders.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                    await Task.yield()
                    holders.withLock { $0.now -= 1 }
                    semaphore.release()
                }
            }
        }
        #expect(holders.withLock { $0.most } <= 8)
        #expect(semaphore.available == 8 && semaphore.waiting == 0)
    }
}
