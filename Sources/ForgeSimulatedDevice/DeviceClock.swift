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

/// A clock that only moves when told to, for deterministic tests.
public final class ManualDeviceClock: DeviceClock {
    private let date: LockedBox<Date>

    /// Creates a clock showing `now`.
    public init(now: Date) { self.date = LockedBox(now) }

    public var now: Date { self.date.withLock { $0 } }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) { self.date.withLock { $0 = $0.addingTimeInterval(seconds) } }

    /// Sets the clock to `date`.
    public func set(_ date: Date) { self.date.withLock { $0 = date } }
}
