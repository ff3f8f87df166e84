internal import Synchronization

/// Turned off by ``APNSBulkSend/stop()``: the bulk reads no further token.
final class ReadingSwitch: Sendable {
    private let stopped = Atomic<Bool>(false)

    func stop() { self.stopped.store(true, ordering: .relaxed) }

    /// Read once per token: an atomic load, no lock.
    var isStopped: Bool { self.stopped.load(ordering: .relaxed) }
}
