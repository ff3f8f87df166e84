import Foundation

/// Runs `body` on a thread of its own: starting a cluster and psql block, and must not hold one of
/// the cooperative pool's threads (other suites' pushes run there).
public func offPool<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Swift.Result { try body() }) }.start()
    }
}
