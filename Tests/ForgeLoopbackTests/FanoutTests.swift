import ForgeSupport
import Testing

@Suite("Fanout: one bounded fan-out of AsyncStreams, as the inbox and the phones use it")
struct FanoutTests {
    @Test("Every subscriber gets the elements yielded after it subscribed, in order; a filter selects")
    func order() async {
        let fanout = Fanout<Int>()
        fanout.yield(0)
        let all = fanout.subscribe(buffer: 100)
        let even = fanout.subscribe(buffer: 100) { $0 % 2 == 0 }
        for value in 1...6 { fanout.yield(value) }
        fanout.finish()
        var seen: [Int] = []
        for await value in all { seen.append(value) }
        var evens: [Int] = []
        for await value in even { evens.append(value) }
        #expect(seen == [1, 2, 3, 4, 5, 6] && evens == [2, 4, 6])
    }

    @Test("A subscriber that falls a buffer behind is dropped: its stream ends after what it buffered; the others go on")
    func overflow() async {
        let fanout = Fanout<Int>()
        let slow = fanout.subscribe(buffer: 3)
        let fast = fanout.subscribe(buffer: 100)
        for value in 1...10 { fanout.yield(value) }
        var slowSeen: [Int] = []
        for await value in slow { slowSeen.append(value) }
        #expect(slowSeen == [1, 2, 3])
        fanout.finish()
        var fastSeen: [Int] = []
        for await value in fast { fastSeen.append(value) }
        #expect(fastSeen == Array(1...10))
    }

    @Test("A doorbell keeps its newest unread ring and is never dropped: rings faster than its reader reads lose nothing that matters")
    func doorbell() async {
        let fanout = Fanout<Int>()
        let bell = fanout.subscribeNewest()
        // Three rings before any read: the stream holds the newest, and stays subscribed.
        for value in 1...3 { fanout.yield(value) }
        #expect(!fanout.isEmpty)
        var iterator = bell.makeAsyncIterator()
        #expect(await iterator.next() == 3)
        for value in 4...10 { fanout.yield(value) }
        #expect(await iterator.next() == 10)
        fanout.yield(11)
        fanout.finish()
        #expect(await iterator.next() == 11)
        #expect(await iterator.next() == nil)
    }

    @Test("After finish, a new subscription ends at once; a reader that goes away unsubscribes")
    func lifecycle() async {
        let fanout = Fanout<Int>()
        do {
            let stream = fanout.subscribe(buffer: 1)
            #expect(!fanout.isEmpty)
            _ = stream
        }
        // The stream and its continuation are gone: the termination handler removed the subscriber.
        #expect(fanout.isEmpty)
        let reader = Task {
            var count = 0
            for await _ in fanout.subscribe(buffer: 10) { count += 1 }
            return count
        }
        reader.cancel()
        _ = await reader.value
        fanout.finish()
        #expect(fanout.isFinished)
        var late = 0
        for await _ in fanout.subscribe(buffer: 10) { late += 1 }
        #expect(late == 0 && fanout.isEmpty)
    }
}

@Suite("withTimeout: the operation's result, or nil when the time passes first")
struct TimeoutTests {
    @Test("A result in time, nil after the timeout (the operation cancelled), nil at once from an operation that gives up")
    func timeout() async {
        #expect(await withTimeout(.seconds(30)) { 42 } == 42)
        let cancelled = await withTimeout(.milliseconds(10)) { () async -> Int? in
            // Sleeps until cancelled: only the timeout ends this call.
            try? await Task.sleep(for: .seconds(3600))
            return Task.isCancelled ? nil : 1
        }
        #expect(cancelled == nil)
        let started = ContinuousClock.now
        #expect(await withTimeout(.seconds(3600)) { () async -> Int? in nil } == nil)
        #expect(ContinuousClock.now - started < .seconds(60))
    }
}
