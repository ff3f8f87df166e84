import ForgeAPNsCore
import Foundation

/// A wall clock that moves only when a test says so.
final class ManualWallClock: APNSWallClock, @unchecked Sendable {
    // @unchecked Sendable: `date` is only touched under `lock`.
    private let lock = NSLock()
    private var date: Date

    init(_ date: Date = Date(timeIntervalSince1970: 1_700_000_000)) { self.date = date }

    var now: Date { self.lock.withLock { self.date } }

    func advance(by seconds: TimeInterval) { self.lock.withLock { self.date += seconds } }
}
