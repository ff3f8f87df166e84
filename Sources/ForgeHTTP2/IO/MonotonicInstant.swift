/// A point on the I/O threads' clock (`CLOCK_MONOTONIC`), in nanoseconds: the time the send path
/// keeps below its public API.
///
/// `ContinuousClock.Instant` comes from the Concurrency library, which is built for library
/// evolution, so the compiler treats it as a type of unknown size: each one an async function
/// holds costs a task allocation and a metadata lookup, each copy, comparison or subtraction a call.
/// A `send` held eight of them on its way, about 4 % of its CPU. This one is a plain integer; it is
/// converted from and to `ContinuousClock.Instant` at the public API, through one pair of readings
/// of both clocks taken once (they could part only while the machine sleeps, which a server does not).
package struct MonotonicInstant: Comparable, Hashable, Sendable {
    package var nanoseconds: UInt64

    package init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// Now.
    package static var now: MonotonicInstant { MonotonicInstant(nanoseconds: monotonicNanoseconds()) }

    /// `instant` on this clock (before the clock's start: its start).
    package init(_ instant: ContinuousClock.Instant) {
        let base = clockBase
        let offset = Self.nanoseconds(base.instant.duration(to: instant))
        self.nanoseconds = offset < 0
            ? base.nanoseconds - min(base.nanoseconds, offset.magnitude)
            : base.nanoseconds &+ min(UInt64(offset), UInt64.max - base.nanoseconds)
    }

    /// `deadline` on this clock, or `timeout` after `now` without one. Not inlined: in a synchronous
    /// function the `ContinuousClock.Instant` temporaries live on the stack, in an async caller's
    /// frame each would be a task allocation.
    @inline(never)
    package static func deadline(_ deadline: ContinuousClock.Instant?, orAfter timeout: Duration, from now: MonotonicInstant) -> MonotonicInstant {
        guard let deadline else { return now + timeout }
        return MonotonicInstant(deadline)
    }

    /// Sleeps for `duration` (at least a nanosecond less than zero: not at all). A plain number of
    /// nanoseconds: `Task.sleep(for:)` puts its clock and instants in the caller's async frame,
    /// allocated on every call of a caller that only sometimes sleeps.
    package static func sleep(for duration: Duration) async throws {
        let nanoseconds = Self.nanoseconds(duration)
        guard nanoseconds > 0 else { return try Task.checkCancellation() }
        try await Task.sleep(nanoseconds: UInt64(nanoseconds))
    }

    /// This instant on `ContinuousClock`.
    package var continuousInstant: ContinuousClock.Instant {
        let base = clockBase
        return self.nanoseconds >= base.nanoseconds
            ? base.instant + .nanoseconds(self.nanoseconds - base.nanoseconds)
            : base.instant - .nanoseconds(base.nanoseconds - self.nanoseconds)
    }

    /// `duration` later (saturating; a negative duration: earlier, never before the clock's start).
    package static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        let offset = Self.nanoseconds(rhs)
        if offset < 0 { return MonotonicInstant(nanoseconds: lhs.nanoseconds - min(lhs.nanoseconds, offset.magnitude)) }
        return MonotonicInstant(nanoseconds: lhs.nanoseconds &+ min(UInt64(offset), UInt64.max - lhs.nanoseconds))
    }

    /// The time from this instant to `other` (negative when `other` is earlier).
    package func duration(to other: MonotonicInstant) -> Duration {
        other.nanoseconds >= self.nanoseconds
            ? .nanoseconds(Int64(clamping: other.nanoseconds - self.nanoseconds))
            : .nanoseconds(-Int64(clamping: self.nanoseconds - other.nanoseconds))
    }

    package static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// Whole nanoseconds of `duration`, saturating.
    package static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (seconds < 0 ? .min : .max) : product &+ attoseconds / 1_000_000_000
    }
}

/// One reading of both clocks, taken once: the pair every conversion goes through.
private let clockBase = (instant: ContinuousClock.now, nanoseconds: monotonicNanoseconds())
