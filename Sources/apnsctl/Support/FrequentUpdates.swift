import ForgeAPNsCore
import ForgeSupport
import Synchronization

/// LA007 across a bulk send from a tokens file: a priority-10 Live Activity update to an activity
/// token that got one less than a minute earlier in the same send (the file names the activity
/// twice, as a feed of score changes does). A single push cannot show it; the reader sees each
/// line once, when it hands it on, so the time between two lines is the time between their sends
/// to within the pushes in flight.
///
/// Tokens are remembered by a 64-bit hash of their hex text with the time they were read, in two
/// generations of a minute each (the older one is dropped whole when a new one starts), at most
/// ``remembered`` tokens a generation (a full one starts the next early, forgetting sooner). Two
/// tokens with the same hash would be taken for one: one chance in about 10^7 for a million tokens.
/// Only a send of priority-10 Live Activity updates pays for this; any other send notes nothing.
final class FrequentUpdates: Sendable {
    static let window: Duration = .seconds(60)
    static let remembered = 1 << 20

    private struct Seen {
        /// When it was read, in milliseconds since the send started.
        var milliseconds: Int64
        var line: Int32
    }

    private struct State {
        let start = ContinuousClock.now
        /// Token hash → when and on which line it was read last.
        var current: [UInt64: Seen] = [:]
        var previous: [UInt64: Seen] = [:]
        var currentStarted: Int64 = 0
        /// Lines flagged, for their result lines.
        var flagged: Set<Int> = []
        /// The first flagged line, the line it repeats and the time between them, for the warning.
        var first: (line: Int, previous: Int, interval: Duration)?
    }

    private let sharedSpendsBudget: Bool
    private let state = LockedBox(State())
    private let anyFlagged = Atomic<Bool>(false)

    /// - Parameter shared: the notification every token without its own payload gets.
    init(shared: APNSPreparedNotification?) {
        self.sharedSpendsBudget = shared?.spendsUpdateBudget ?? false
    }

    /// Notes a line as it is handed on to be sent.
    func note(_ entry: TokenEntry) {
        let spends = entry.notification.map(\.spendsUpdateBudget) ?? self.sharedSpendsBudget
        guard spends else { return }
        let key = Self.hash(entry.token.hexString)
        let now = ContinuousClock.now
        self.state.withLock { state in
            let milliseconds = Self.milliseconds(now - state.start)
            let window = Self.milliseconds(Self.window)
            if milliseconds - state.currentStarted >= window || state.current.count >= Self.remembered {
                state.previous = state.current
                state.current = [:]
                state.currentStarted = milliseconds
            }
            if let earlier = state.current[key] ?? state.previous[key], milliseconds - earlier.milliseconds < window {
                state.flagged.insert(entry.line)
                if state.first == nil {
                    state.first = (entry.line, Int(earlier.line), .milliseconds(milliseconds - earlier.milliseconds))
                }
                self.anyFlagged.store(true, ordering: .releasing)
            }
            state.current[key] = Seen(milliseconds: milliseconds, line: Int32(truncatingIfNeeded: entry.line))
        }
    }

    /// `["LA007"]` for a line flagged, else none; no lock while no line is.
    func lints(line: Int?) -> [String] {
        guard let line, self.anyFlagged.load(ordering: .acquiring) else { return [] }
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

    /// FNV-1a over the text's bytes, eight at a time.
    private static func hash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var word: UInt64 = 0
        var count = 0
        for byte in text.utf8 {
            word = word << 8 | UInt64(byte)
            count += 1
            if count == 8 {
                hash = (hash ^ word) &* 0x0000_0100_0000_01b3
                word = 0
                count = 0
            }
        }
        if count > 0 { hash = (hash ^ word) &* 0x0000_0100_0000_01b3 }
        return hash ^ (hash >> 29)
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}
