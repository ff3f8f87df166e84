internal import ForgeSupport

extension OneShot {
    /// Awaits the value; calls `expire` if the value is not set when `limit` (if any) runs out, or
    /// when the waiting task is cancelled (the real-time and the shutdown paths of the expiry that
    /// tests trigger by hand). `expire` must set the value.
    func value(limit: Duration?, expire: @escaping @Sendable () -> Void) async -> Value {
        await withTaskCancellationHandler {
            guard let limit else { return await self.value }
            return await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        try await Task.sleep(for: limit)
                        expire()
                    } catch {
                        // Cancelled: the value came first.
                    }
                }
                let value = await self.value
                group.cancelAll()
                return value
            }
        } onCancel: {
            expire()
        }
    }
}
