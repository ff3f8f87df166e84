import Dispatch
import ForgeSupport
import Foundation
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

/// Stops a send once: on the first SIGINT (a second one exits at once with 130), or when the
/// endpoint turns out to be unreachable. Whoever started sending registers how to stop it.
final class InterruptHandler: Sendable {
    private struct State {
        var reason: StopReason?
        var handlers: [@Sendable () -> Void] = []
    }

    private let state = LockedBox(State())
    private let sources = LockedSources()

    /// Starts listening for SIGINT (instead of the default, which kills the process); returns once
    /// a Ctrl-C would be seen.
    func install() async {
        let sources = await SignalSources.install([(SIGINT, { @Sendable [weak self] in
            guard let self else { return }
            if self.reason == .interrupted { _exit(CLIExit.interrupted) }
            self.stop(.interrupted)
        })])
        self.sources.withLock { $0 = sources }
    }

    /// Stops listening; SIGINT kills the process again.
    func uninstall() {
        self.sources.withLock { sources in
            for source in sources { source.cancel() }
            sources = []
        }
        signal(SIGINT, SIG_DFL)
    }

    var reason: StopReason? { self.state.withLock { $0.reason } }

    /// Runs `handler` when the send stops (at once if it already has).
    func onStop(_ handler: @escaping @Sendable () -> Void) {
        let now = self.state.withLock { state -> Bool in
            if state.reason != nil { return true }
            state.handlers.append(handler)
            return false
        }
        if now { handler() }
    }

    /// Stops the send; the first reason wins.
    func stop(_ reason: StopReason) {
        let handlers = self.state.withLock { state -> [@Sendable () -> Void] in
            guard state.reason == nil else { return [] }
            state.reason = reason
            defer { state.handlers.removeAll() }
            return state.handlers
        }
        if reason == .interrupted, self.reason == .interrupted {
            Output.diagnostic("\ninterrupted: stopping; tokens not sent yet are reported as not sent (Ctrl-C again quits at once)")
        }
        for handler in handlers { handler() }
    }
}

/// The signal sources of a handler: not `Sendable` themselves, so kept behind a lock of their own.
private final class LockedSources: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value: [any DispatchSourceSignal] = []

    func withLock<Result>(_ body: (inout [any DispatchSourceSignal]) -> Result) -> Result {
        self.lock.withLock { body(&self.value) }
    }
}
