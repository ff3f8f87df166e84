import ForgeAPNs
import ForgeAPNsCore
import ForgeSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Collects the results of a send from every sender (the bulk's verdicts and per-line sends):
/// counts them, writes their lines to stdout in batches, keeps the progress bar up to date, and
/// notices an endpoint that nothing reaches.
final class ResultSink: Sendable {
    private struct State {
        var counts = SendCounts()
        var buffer: [UInt8] = []
        var lastFlush = ContinuousClock.now
        var progress: ProgressBar?
        var unreachable = false
    }

    private let renderer: ResultRenderer
    private let state: LockedBox<State>
    private let stopper: InterruptHandler
    private let stdoutIsTerminal = isatty(STDOUT_FILENO) == 1

    /// - Parameter progress: the bar to keep up to date, if one is shown.
    init(renderer: ResultRenderer, progress: ProgressBar?, stopper: InterruptHandler) {
        self.renderer = renderer
        self.stopper = stopper
        self.state = LockedBox(State(progress: progress))
    }

    var counts: SendCounts { self.state.withLock { $0.counts } }

    func addBadLine() {
        self.state.withLock { $0.counts.badLines += 1 }
    }

    /// The last line of the tokens file handed to a sender, and whether reading stopped there.
    private let lastLine = LockedBox(0)

    func noteLineRead(_ line: Int) {
        self.lastLine.withLock { $0 = line }
    }

    /// Reading the tokens file stopped early (Ctrl-C): the lines after the last one read are counted as unread.
    func markInputStopped() {
        let line = self.lastLine.withLock { $0 }
        self.state.withLock { $0.counts.unreadAfterLine = line }
    }

    func record(_ result: TokenResult) {
        let unreachable = self.state.withLock { state -> String? in
            state.counts.add(result.outcome)
            self.renderer.append(result, to: &state.buffer)
            state.buffer.append(0x0a)
            let now = ContinuousClock.now
            if state.buffer.count >= 1 << 16 || now - state.lastFlush >= .milliseconds(100) {
                self.flush(&state)
                state.lastFlush = now
            }
            state.progress?.update(done: state.counts.total + state.counts.badLines, errors: state.counts.problems + state.counts.badLines)
            // A transport failure before anything got an answer: the endpoint is unreachable.
            if let error = result.outcome.failure, error.kind == .unreachable,
               state.counts.accepted == 0, state.counts.rejectedCount == 0, !state.unreachable {
                state.unreachable = true
                return error.detail.isEmpty ? error.kind.rawValue : error.detail
            }
            return nil
        }
        if let unreachable { self.stopper.stop(.unreachable(unreachable)) }
    }

    /// Writes what is buffered and redraws the bar (called when results stall).
    func tick() {
        self.state.withLock { state in
            self.flush(&state)
            state.lastFlush = ContinuousClock.now
            state.progress?.update(done: state.counts.total + state.counts.badLines, errors: state.counts.problems + state.counts.badLines, force: true)
        }
    }

    /// Writes what is buffered and the summary, and takes the progress bar down.
    func finish(seconds: Double) -> SendCounts {
        self.state.withLock { state in
            self.flush(&state)
            state.progress?.clear()
            state.progress = nil
            Output.result(self.renderer.summary(state.counts, seconds: seconds))
            return state.counts
        }
    }

    private func flush(_ state: inout State) {
        guard !state.buffer.isEmpty else { return }
        if self.stdoutIsTerminal { state.progress?.clear() }
        var offset = 0
        while offset < state.buffer.count {
            let written = state.buffer.withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                break
            }
            offset += written
        }
        state.buffer.removeAll(keepingCapacity: true)
    }
}
