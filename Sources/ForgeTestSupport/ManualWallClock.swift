public import ForgeAPNsCore
public import Foundation
internal import ForgeSupport

/// A wall clock that moves only when a test says so: token lifetimes, issue dates and
/// expiration are tested without sleeping.
public final class ManualWallClock: APNSWallClock {
    private let date: LockedBox<Date>

    /// A clock showing `date` (by default 2023-11-14 22:13:20 UTC, a fixed instant).
    public init(_ date: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        self.date = LockedBox(date)
    }

    public var now: Date { self.date.withLock { $0 } }

    /// Moves the clock by `seconds`, backwards when negative.
    public func advance(by seconds: TimeInterval) {
        self.date.withLock { $0 += seconds }
    }
}
