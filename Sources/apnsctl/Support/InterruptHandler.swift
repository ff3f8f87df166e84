import ForgeSupport
import Foundation
import Synchronization
import UnixSignals
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a send stopped before its input ended.
enum StopReason: Sendable, Equatable {
    /// SIGINT (Ctrl-C): exit 130.
    case interrupted
    /// Nothing reached the endpoint: exit 69.
    case unreachable(String)
}

/// Stops a send in two steps. The first SIGINT (or an unreachable endpoint) stops sending: no new
/// push leaves, and the ones on their way still get their answers. A second SIGINT stops waiting
/// for those answers (their pushes are reported as in flight at the stop); a third exits at once
/// with 130. Whoever started sending registers how to do each.
final class InterruptHandler: Sendable {
    private struct State {
        var reason: StopReason?
        var abandoned = false
        var stopHandlers: [@Sendable () -> Void] = []
        var abandonHandlers: [@Sendable () -> Void] = []
    }

    private let state = LockedBox(State())
    /// Set with ``State/reason``: read once per line of a tokens file, without the lock.
    private let stopped = Atomic<Bool>(false)

    /// Runs `body` with SIGINT caught by this handler instead of the default (which kills the
    /// process): from before `body` starts (the signal is registered first) until it returns;
    /// then SIGINT kills the process again.
    func catchingInterrupts<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        let signals = await UnixSignalsSequence(trapping: .sigint)
        defer { signal(SIGINT, SIG_DFL) }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            // Ends when the group is cancelled: the signals' iterator then returns nil.
            group.addTask { for await _ in signals { self.interrupted() } }
            defer { group.cancelAll() }
            return try await body()
        }
    }

    /// One SIGINT: the first stops sending, the second stops waiting, the third quits.
    private func interrupted() {
        switch (self.reason, self.abandoned) {
        case (nil, _): self.stop(.interrupted)
        case (_, false): self.abandon()
        case (_, true): _exit(CLIExit.interrupted)
        }
    }

    var reason: StopReason? { self.state.withLock { $0.reason } }

    /// Whether the send was stopped (for any reason): an atomic load, for the token reader's loop.
    var isStopped: Bool { self.stopped.load(ordering: .acquiring) }

    /// Whether a second Ctrl-C gave up on the answers of pushes in flight.
    var abandoned: Bool { self.state.withLock { $0.abandoned } }

    /// Runs `stop` when the send stops (at once if it already has) and `abandon` when the answers
    /// in flight are given up on.
    func onStop(_ stop: @escaping @Sendable () -> Void, abandon: @escaping @Sendable () -> Void = {}) {
        let (stopNow, abandonNow) = self.state.withLock { state -> (Bool, Bool) in
            if state.reason == nil { state.stopHandlers.append(stop) }
            if !state.abandoned { state.abandonHandlers.append(abandon) }
            return (state.reason != nil, state.abandoned)
        }
        if stopNow { stop() }
        if abandonNow { abandon() }
    }

    /// Stops the send; the first reason wins.
    func stop(_ reason: StopReason) {
        let handlers = self.state.withLock { state -> [@Sendable () -> Void] in
            guard state.reason == nil else { return [] }
            state.reason = reason
            self.stopped.store(true, ordering: .releasing)
            defer { state.stopHandlers.removeAll() }
            return state.stopHandlers
        }
        if reason == .interrupted, !handlers.isEmpty || self.reason == .interrupted {
            Output.diagnostic("\ninterrupted: sending no more; waiting for the answers of the pushes in flight "
                + "(Ctrl-C again stops waiting; a third time quits at once)")
        }
        for handler in handlers { handler() }
    }

    /// Gives up on the answers of the pushes in flight.
    func abandon() {
        let handlers = self.state.withLock { state -> [@Sendable () -> Void] in
            guard !state.abandoned else { return [] }
            state.abandoned = true
            defer { state.abandonHandlers.removeAll() }
            return state.abandonHandlers
        }
        Output.diagnostic("\ninterrupted again: not waiting for answers; pushes in flight are reported as such (they may have been delivered)")
        for handler in handlers { handler() }
    }
}
