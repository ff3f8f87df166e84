/// `operation`'s result, or `nil` when `timeout` passes first; the loser is cancelled and awaited
/// (structured: nothing outlives the call). An operation that returns `nil` ends the wait at once.
package func withTimeout<Result: Sendable>(
    _ timeout: Duration, _ operation: @escaping @Sendable () async -> Result?
) async -> Result? {
    await withTaskGroup(of: Result?.self) { group in
        group.addTask { await operation() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
