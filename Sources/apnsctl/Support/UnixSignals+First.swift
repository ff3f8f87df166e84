import UnixSignals

extension UnixSignalsSequence {
    /// The first signal caught since the sequence was made (one caught before this call included:
    /// the sequence buffers them), or `nil` when the waiting task is cancelled first.
    ///
    /// `UnixSignalsSequence(trapping:)` returns once every signal is registered, so one sent right
    /// after (`apnsctl serve` prints its port) is never lost.
    func first() async -> UnixSignal? {
        var iterator = self.makeAsyncIterator()
        return await iterator.next()
    }
}
