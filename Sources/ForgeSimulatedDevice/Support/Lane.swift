internal import ForgeSupport

/// A line of pushes that iOS handles one after another, in order of arrival: each push takes a
/// ticket when it arrives (synchronously, so arrival order is the order of the tickets), waits for
/// its turn, and ends its turn so that the next one goes.
///
/// The device keeps one lane per app for alerts (shown in arrival order, a slow service extension
/// holds the app's later alerts), one per app for background pushes (the delegate is called in
/// arrival order; the handlers then run concurrently), and one for Live Activities. Pushes in
/// different lanes do not wait for each other.
final class Lane: Sendable {
    private struct State {
        var issued = 0
        var serving = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = LockedBox(State())

    init() {}

    /// A place in the line; its holder must ``Turn/begin()`` and ``Turn/end()`` it exactly once.
    func ticket() -> Turn {
        let ticket = self.state.withLock { state in
            defer { state.issued += 1 }
            return state.issued
        }
        return Turn(lane: self, ticket: ticket)
    }

    fileprivate func wait(for ticket: Int) async {
        await withCheckedContinuation { continuation in
            let now = self.state.withLock { state -> Bool in
                if state.serving == ticket { return true }
                state.waiters[ticket] = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    fileprivate func end(_ ticket: Int) {
        let next = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            precondition(state.serving == ticket, "turn \(ticket) ended while serving \(state.serving)")
            state.serving += 1
            return state.waiters.removeValue(forKey: state.serving)
        }
        next?.resume()
    }
}

/// One push's place in a ``Lane``.
struct Turn: Sendable {
    let lane: Lane
    let ticket: Int

    /// Waits until every earlier ticket has ended its turn.
    func begin() async { await self.lane.wait(for: self.ticket) }

    /// Lets the next ticket go.
    func end() { self.lane.end(self.ticket) }
}
