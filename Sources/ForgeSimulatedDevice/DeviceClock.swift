public import struct Foundation.Date
public import typealias Foundation.TimeInterval
internal import ForgeSupport

/// The device's wall clock: dates of timeline events, Live Activity stale and dismissal dates.
public protocol DeviceClock: Sendable {
    /// The date now.
    var now: Date { get }
}

/// The system clock.
public struct SystemDeviceClock: DeviceClock {
    /// Creates the system clock.
    public init() {}

    public var now: Date { Date() }
}

/// A device clock that can be moved forward, as a person who changes the date in Settings (or a
/// test) does: ``SimulatedDevice/advanceClock(by:)`` moves it.
public protocol AdjustableDeviceClock: DeviceClock {
    /// Moves the clock forward by `seconds`.
    func advance(by seconds: TimeInterval)
}

/// The system clock plus an offset that ``advance(by:)`` grows: time passes as it does for
/// ``SystemDeviceClock``, and a phone of a long-running server (`apnsctl serve`) can still be moved
/// hours ahead, each phone by its own offset.
public final class OffsetSystemDeviceClock: AdjustableDeviceClock {
    private let offset = LockedBox<TimeInterval>(0)

    /// Creates a clock that shows the system time.
    public init() {}

    public var now: Date { Date().addingTimeInterval(self.offset.withLock { $0 }) }

    /// Moves the clock forward by `seconds` from now on.
    public func advance(by seconds: TimeInterval) { self.offset.withLock { $0 += seconds } }
}

/// A clock that only moves when told to, for deterministic tests.
public final class ManualDeviceClock: AdjustableDeviceClock {
    private let date: LockedBox<Date>

    /// Creates a clock showing `now`.
    public init(now: Date) { self.date = LockedBox(now) }

    public var now: Date { self.date.withLock { $0 } }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) { self.date.withLock { $0 = $0.addingTimeInterval(seconds) } }

    /// Sets the clock to `date`.
    public func set(_ date: Date) { self.date.withLock { $0 = date } }
}
