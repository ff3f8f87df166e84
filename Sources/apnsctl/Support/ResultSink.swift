import ForgeAPNs
import ForgeAPNsCore
import ForgeSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Collects the results of a send from every sender (the bulk's verdicts and per-line sends):
/// writes their lines to stdout in batches, keeps the progress bar up to date, remembers where a
/// stopped run can resume, and notices an endpoint that nothing reaches.
///
/// A verdict is counted once: a bulk or campaign send counts its own (``follow(_:)`` reads those
/// counts), and the sink counts only the pushes sent one by one, plus what only the command knows.
final class ResultSink: Sendable {
    private struct State {
        /// The pushes sent one by one, and what only the command knows (bad lines, in flight at a stop).
        var counts = SendCounts()
        /// The counts of the bulk and campaign sends whose verdicts come here, each as its sender keeps them.
        var followed: [@Sendable () -> APNSBulkSummary] = []
        var buffer: [UInt8] = []
        var lastFlush = ContinuousClock.now
        var progress: ProgressBar?
        var unreachable = false
        /// Lines of the tokens file whose push has a final verdict (accepted or rejected).
        var settled = LineSet()
        /// The first line whose push was not sent, or whose fate is unknown.
        var firstUnsettled: Int?
        /// Rejection reasons seen, for the hints at the end.
        var reasons: Set<APNSErrorReason> = []
        /// A transport failure's detail, for the hint at the end.
        var transportDetail: String?
    }

    private let renderer: ResultRenderer
    /// LA007 across the lines of a tokens file, when a send can meet it.
    let frequentUpdates: FrequentUpdates?
    private let state: LockedBox<State>
    private let stopper: InterruptHandler
    private let stdoutIsTerminal = isatty(STDOUT_FILENO) == 1

    /// - Parameter progress: the bar to keep up to date, if one is shown.
    init(renderer: ResultRenderer, progress: ProgressBar?, stopper: InterruptHandler, frequentUpdates: FrequentUpdates? = nil) {
        self.renderer = renderer
        self.frequentUpdates = frequentUpdates
        self.stopper = stopper
        self.state = LockedBox(State(progress: progress))
    }

    /// Counts `sender`'s verdicts as it counts them itself: their ``record(_:countedBySender:)`` does not count them again.
    func follow(_ sender: @escaping @Sendable () -> APNSBulkSummary) {
        self.state.withLock { $0.followed.append(sender) }
    }

    /// Every verdict: the followed senders' counts merged into the sink's own.
    private static func merged(_ own: SendCounts, _ followed: [@Sendable () -> APNSBulkSummary]) -> SendCounts {
        var counts = own
        for sender in followed { counts.verdicts.addCounts(of: sender()) }
        return counts
    }

    /// Redraws the bar when it is due (or `force`), the counts merged only then: a bulk's counts are
    /// read under its lock ten times a second, not once a verdict.
    private static func updateProgress(_ state: inout State, force: Bool = false) {
        guard let bar = state.progress, force || bar.isDue else { return }
        let counts = Self.merged(state.counts, state.followed)
        state.progress?.update(done: counts.verdicts.total + counts.badLines, errors: counts.problems + counts.badLines)
    }

    /// Counts a line of the tokens file that is no token (its problem went to stderr); with JSON
    /// output it also gets a record, `{"line":21,"outcome":"bad_line","error":"…"}`, so a program
    /// reading stdout knows which line it was. The summary's counts are the same either way.
    func addBadLine(line: Int, problem: String) {
        self.state.withLock { state in
            state.counts.badLines += 1
            guard self.renderer.json else { return }
            var record: [UInt8] = []
            record.append(contentsOf: "{\"line\":\(line),\"outcome\":\"bad_line\",\"error\":".utf8)
            JSONString.append(problem, to: &record)
            record.append(contentsOf: "}\n".utf8)
            state.buffer.append(contentsOf: record)
        }
    }

    /// The last line of the tokens file handed to a sender, and whether reading stopped there.
    private let lastLine = Atomic<Int>(0)

    /// Called once per line the reader hands on: an atomic store, no lock.
    func noteLineRead(_ line: Int) {
        self.lastLine.store(line, ordering: .releasing)
    }

    /// Reading the tokens file stopped early (Ctrl-C): the lines after the last one read are counted as unread.
    func markInputStopped() {
        let line = self.lastLine.load(ordering: .acquiring)
        self.state.withLock { $0.counts.unreadAfterLine = line }
    }

    /// Prints and remembers one token's result. `countedBySender`: its verdict is in the counts of
    /// a sender this sink follows (``follow(_:)``), so only what the command alone knows is counted.
    func record(_ result: TokenResult, countedBySender: Bool = false) {
        let extraLints = self.frequentUpdates?.lints(line: result.line) ?? []
        let unreachable = self.state.withLock { state -> String? in
            if countedBySender { state.counts.noteInFlight(result) } else { state.counts.add(result) }
            if let line = result.line {
                switch result.outcome {
                case .accepted, .rejected: state.settled.insert(line)
                case .failed, .notSent: state.firstUnsettled = min(state.firstUnsettled ?? line, line)
                }
            }
            switch result.outcome {
            case .rejected(let error): if let reason = error.reason { state.reasons.insert(reason) }
            case .failed(let error), .notSent(let error): if state.transportDetail == nil, !error.detail.isEmpty { state.transportDetail = error.detail }
            case .accepted: break
            }
            if self.renderer.prints(result) {
                self.renderer.append(result, adding: extraLints, to: &state.buffer)
                state.buffer.append(0x0a)
            }
            let now = ContinuousClock.now
            if state.buffer.count >= 1 << 16 || (!state.buffer.isEmpty && now - state.lastFlush >= .milliseconds(100)) {
                self.flush(&state)
                state.lastFlush = now
            }
            Self.updateProgress(&state)
            // A push that failed as unreachable: the client found no connection for as many
            // connects in a row as a push may try (or the pool already counts the endpoint as
            // unreachable), whether or not earlier pushes got answers. Sending more only adds
            // tokens that wait for the same failure.
            if let error = result.outcome.failure, error.kind == .unreachable, !state.unreachable {
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
            Self.updateProgress(&state, force: true)
        }
    }

    /// Writes what is buffered and the summary, and takes the progress bar down. When stdout goes
    /// to a file and stderr is a terminal, the summary is also left on the terminal, where the bar was.
    func finish(seconds: Double) -> SendCounts {
        self.state.withLock { state in
            self.flush(&state)
            let barShown = state.progress != nil
            state.progress?.clear()
            state.progress = nil
            let counts = Self.merged(state.counts, state.followed)
            Output.result(self.renderer.summary(counts, seconds: seconds))
            if barShown, !self.stdoutIsTerminal {
                Output.diagnostic(ResultRenderer(format: .human).summary(counts, seconds: seconds))
            }
            return counts
        }
    }

    /// Where a stopped run resumes: the first line whose push was not sent or whose fate is unknown,
    /// else the first line not read; and how many lines after it already have a final verdict (they
    /// would be sent again). `nil` when every line read has a final verdict and reading finished.
    func resumePoint() -> (line: Int, settledAfter: Int)? {
        self.state.withLock { state in
            let unread = state.counts.unreadAfterLine.map { $0 + 1 }
            let candidates = [state.firstUnsettled, unread].compactMap { $0 }
            guard let line = candidates.min() else { return nil }
            return (line, state.settled.count(after: line))
        }
    }

    /// One hint per likely cause seen in this send's rejections and failures.
    func hints() -> [String] {
        self.state.withLock { state in
            RejectionHints.hints(reasons: state.reasons, transportDetail: state.transportDetail)
        }
    }

    private func flush(_ state: inout State) {
        guard !state.buffer.isEmpty else { return }
        if self.stdoutIsTerminal { state.progress?.clear() }
        Output.results(state.buffer)
        state.buffer.removeAll(keepingCapacity: true)
    }
}

/// A set of line numbers as bits: a million lines take 125 KiB.
struct LineSet {
    private var words: [UInt64] = []

    mutating func insert(_ line: Int) {
        guard line >= 0 else { return }
        let word = line >> 6
        if word >= self.words.count { self.words.append(contentsOf: repeatElement(0, count: word - self.words.count + 1)) }
        self.words[word] |= 1 << UInt64(line & 63)
    }

    func contains(_ line: Int) -> Bool {
        let word = line >> 6
        return line >= 0 && word < self.words.count && self.words[word] & (1 << UInt64(line & 63)) != 0
    }

    /// Members greater than `line`.
    func count(after line: Int) -> Int {
        let first = line + 1
        var total = 0
        for (index, word) in self.words.enumerated() where (index + 1) << 6 > first {
            let masked = index << 6 >= first ? word : word & ~((1 << UInt64(first & 63)) &- 1)
            total += masked.nonzeroBitCount
        }
        return total
    }
}
