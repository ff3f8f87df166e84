import ForgeHTTP2
import Testing

/// The send path's own clock: conversions to and from `ContinuousClock`, arithmetic at the edges.
@Suite("MonotonicInstant: the send path's clock")
struct MonotonicInstantTests {
    @Test("A ContinuousClock instant converts there and back to within a nanosecond")
    func roundTrip() {
        let now = ContinuousClock.now
        for offset: Duration in [.zero, .milliseconds(30), .seconds(-5), .seconds(3600), .nanoseconds(1)] {
            let back = MonotonicInstant(now + offset).continuousInstant
            let error = (now + offset).duration(to: back)
            #expect(error >= .nanoseconds(-1) && error <= .nanoseconds(1), "offset \(offset): off by \(error)")
        }
    }

    @Test("It reads the same clock as ContinuousClock, a reading apart")
    func sameClock() {
        let before = MonotonicInstant(ContinuousClock.now)
        let reading = MonotonicInstant.now
        let after = MonotonicInstant(ContinuousClock.now)
        // One pair of readings converts between the clocks; allow for the microseconds between them.
        #expect(reading.nanoseconds + 1_000_000 >= before.nanoseconds)
        #expect(reading.nanoseconds <= after.nanoseconds + 1_000_000)
    }

    @Test("Adding durations saturates at both ends of the clock")
    func saturation() {
        let start = MonotonicInstant(nanoseconds: 10)
        #expect((start + .nanoseconds(5)).nanoseconds == 15)
        #expect((start + .nanoseconds(-5)).nanoseconds == 5)
        #expect((start + .seconds(-1)).nanoseconds == 0)
        #expect((MonotonicInstant(nanoseconds: .max - 1) + .seconds(1)).nanoseconds == .max)
        #expect(start.duration(to: MonotonicInstant(nanoseconds: 1_000_000_010)) == .seconds(1))
        #expect(MonotonicInstant(nanoseconds: 1_000_000_010).duration(to: start) == .seconds(-1))
        #expect(MonotonicInstant.nanoseconds(.seconds(Int64.max)) == .max)
        #expect(MonotonicInstant.nanoseconds(.seconds(Int64.min)) == .min)
    }

    @Test("A send's deadline: the caller's, or the timeout after now")
    func deadline() {
        let now = MonotonicInstant(nanoseconds: 1_000)
        #expect(MonotonicInstant.deadline(nil, orAfter: .microseconds(2), from: now).nanoseconds == 3_000)
        let given = ContinuousClock.now + .seconds(7)
        #expect(MonotonicInstant.deadline(given, orAfter: .microseconds(2), from: now) == MonotonicInstant(given))
    }

    @Test("Sleeping: a wait of zero returns at once, a cancelled task throws")
    func sleep() async throws {
        try await MonotonicInstant.sleep(for: .zero)
        try await MonotonicInstant.sleep(for: .nanoseconds(-3))
        let waited = ContinuousClock.now
        try await MonotonicInstant.sleep(for: .milliseconds(1))
        #expect(waited.duration(to: .now) >= .milliseconds(1))
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await MonotonicInstant.sleep(for: .seconds(30))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
