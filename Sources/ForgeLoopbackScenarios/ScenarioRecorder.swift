internal import ForgeAPNsCore
internal import ForgeLoopback
internal import ForgeSupport
internal import Foundation

/// What the scenarios saw besides the device's own timeline: the local server's verdicts and the
/// notes the app's handlers leave when they run. Written from the server's I/O threads and the
/// routers' tasks, read by the scenarios between steps.
final class ScenarioRecorder: Sendable {
    /// A decision or a handler's note, with when it happened.
    struct Entry: Sendable {
        enum Kind: Sendable {
            /// The server judged a request.
            case decision(APNSDecision)
            /// A handler of the app (or its service extension) ran.
            case note(handler: String, text: String)
        }

        var date: Date
        var kind: Kind
    }

    /// The server's verdicts during a bulk send, counted rather than kept.
    struct BulkTally: Sendable {
        /// Requests judged, by `status reason` (`200`, `410 Unregistered`).
        var judged: [String: Int] = [:]
        /// The first rejection, to show one.
        var firstRejection: Entry?
    }

    private struct State {
        var entries: [Entry] = []
        var counting = false
        var bulk = BulkTally()
    }

    private let state = LockedBox(State())

    init() {}

    /// The server's observer: keeps the decision, or only counts it during a bulk send.
    func judged(_ judgement: LocalAPNSJudgement) {
        let entry = Entry(date: judgement.date, kind: .decision(judgement.decision))
        self.state.withLock { state in
            guard state.counting else {
                state.entries.append(entry)
                return
            }
            let decision = judgement.decision
            state.bulk.judged[decision.reason.map { "\(decision.status) \($0.rawValue)" } ?? "\(decision.status)", default: 0] += 1
            if decision.reason != nil, state.bulk.firstRejection == nil { state.bulk.firstRejection = entry }
        }
    }

    /// A handler of the app ran and did `text`.
    func note(handler: String, _ text: String) {
        let entry = Entry(date: Date(), kind: .note(handler: handler, text: text))
        self.state.withLock { $0.entries.append(entry) }
    }

    /// How many entries are kept so far (a mark for ``entries(since:)``).
    var count: Int { self.state.withLock { $0.entries.count } }

    /// The entries kept after `mark`, oldest first.
    func entries(since mark: Int) -> [Entry] { self.state.withLock { Array($0.entries[mark...]) } }

    /// From now on verdicts are counted, not kept (the bulk send's thousands of requests).
    func startCounting() { self.state.withLock { $0.counting = true } }

    /// The verdicts counted since ``startCounting()``.
    var bulkTally: BulkTally { self.state.withLock { $0.bulk } }
}
