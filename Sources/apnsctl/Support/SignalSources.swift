import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Signals caught by dispatch sources, in place once ``install(_:)`` returns.
enum SignalSources {
    /// Ignores each signal's default action and gives it a source on the global queue that runs
    /// its handler.
    ///
    /// A source is registered with the system asynchronously, after `resume()`; until then the
    /// signal is ignored and reaches no handler. This returns only once every source is registered,
    /// so a signal sent right after (`apnsctl serve` prints its port) is never lost.
    static func install(_ handlers: [(signal: Int32, handler: @Sendable () -> Void)]) async -> [any DispatchSourceSignal] {
        let registered = DispatchGroup()
        var sources: [any DispatchSourceSignal] = []
        for (number, handler) in handlers {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            registered.enter()
            source.setRegistrationHandler { registered.leave() }
            source.resume()
            sources.append(source)
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            registered.notify(queue: .global()) { continuation.resume() }
        }
        return sources
    }
}
