import ForgeAPNsCore
import ForgeSupport

/// LA007 across a bulk send from a tokens file: a priority-10 Live Activity update to an activity
/// token that got one less than a minute earlier in the same send (the file names the activity
/// twice, as a feed of score changes does). A single push cannot show it; the reader sees each
/// line once, when it hands it on, so the time between two lines is the time between their sends
/// to within the pushes in flight.
///
/// Remembers the tokens of the last minute, at most ``remembered`` of them (the oldest are
/// forgotten first), so a send to millions of distinct activities stays bounded in memory.
final class FrequentUpdates: Sendable {
    static let window: Duration = .seconds(60)
    static let remembered = 1 << 20

    private struct Seen {
        var line: Int
        var at: ContinuousClock.Instant
    }

    private struct State {
        var last: [DeviceToken: Seen] = [:]
        /// The tokens in `last`, oldest first, from `head` on.
        var order: [DeviceToken] = []
        var head = 0
        /// Lines flagged, for their result lines.
        var flagged: Set<Int> = []
        /// The first flagged line, the line it repeats and the time between them, for the warning.
        var first: (line: Int, previous: Int, interval: Duration)?
    }

    private let sharedSpendsBudget: Bool
    private let state = LockedBox(State())

    /// - Parameter shared: the notification every token without its own payload gets.
    init(shared: APNSPreparedNotification?) {
        self.sharedSpendsBudget = shared?.spendsUpdateBudget ?? false
    }

    /// Notes a line as it is handed on to be sent.
    func note(_ entry: TokenEntry, at now: ContinuousClock.Instant = .now) {
        let spends = entry.notification.map(\.spendsUpdateBudget) ?? self.sharedSpendsBudget
        guard spends else { return }
        self.state.withLock { state in
            while state.head < state.order.count {
                let oldest = state.order[state.head]
                guard let seen = state.last[oldest], now - seen.at >= Self.window || state.order.count - state.head >= Self.remembered
                else { break }
                state.last[oldest] = nil
                state.head += 1
            }
            if state.head > 4096, state.head * 2 > state.order.count {
                state.order.removeFirst(state.head)
                state.head = 0
            }
            if let previous = state.last[entry.token] {
                state.flagged.insert(entry.line)
                if state.first == nil { state.first = (entry.line, previous.line, now - previous.at) }
            } else {
                state.order.append(entry.token)
            }
            state.last[entry.token] = Seen(line: entry.line, at: now)
        }
    }

    /// `["LA007"]` for a line flagged, else none.
    func lints(line: Int?) -> [String] {
        guard let line else { return [] }
        return self.state.withLock { $0.flagged.contains(line) } ? ["LA007"] : []
    }

    /// The warning for stderr once the send is over, `nil` when no line was flagged.
    func warning() -> String? {
        self.state.withLock { state in
            guard let first = state.first, let lint = APNSLinter.frequentUpdate(after: first.interval) else { return nil }
            let more = state.flagged.count - 1
            let others = more == 0 ? "" : "; \(more) more line\(more == 1 ? "" : "s") like it (\"lints\":[\"LA007\"] in --json)"
            return "warning: LA007: line \(first.line), after line \(first.previous) to the same token: \(lint.message)\(others)"
        }
    }
}
