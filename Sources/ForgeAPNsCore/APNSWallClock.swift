public import struct Foundation.Date

/// The source of wall-clock time for everything that is stamped with a date on the wire: the JWT
/// `iat` claim, the Live Activity `timestamp`, token refresh decisions.
///
/// Inject a manual implementation in tests so that nothing ever sleeps to make time pass.
public protocol APNSWallClock: Sendable {
    /// The current date.
    var now: Date { get }
}

/// The system's real-time clock.
public struct APNSSystemWallClock: APNSWallClock {
    /// Creates the system clock.
    public init() {}

    public var now: Date { Date() }
}

extension APNSWallClock where Self == APNSSystemWallClock {
    /// The system's real-time clock.
    public static var system: APNSSystemWallClock { APNSSystemWallClock() }
}
