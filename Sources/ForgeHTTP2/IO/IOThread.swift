import Foundation
internal import CForgeNGHTTP2

/// Starts a thread that runs `body`, named `name` where `top -H`, `perf` and /proc show it.
///
/// Foundation's `Thread.name` does not reach the kernel on Linux, and the kernel keeps at most 15
/// bytes of a name: keep `name` short (`forge-h2c:PORT`).
func startIOThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread {
        name.withCString { CForgeNGHTTP2_nameThread($0) }
        body()
    }
    thread.name = name
    thread.start()
}
