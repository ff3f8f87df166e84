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
    private struct State: WaitingState {
        var issued = 0
        var serving = 0
        var waiters = Waiters()
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

    /// Waits for `ticket`'s turn, cancelled or not: a turn is never skipped, since the holder
    /// ends it once it has begun, and the tickets after it wait for that.
    fileprivate func wait(for ticket: Int) async {
        _ = await self.state.wait(key: ticket, onCancel: nil) { state in state.serving == ticket ? true : nil }
    }

    fileprivate func end(_ ticket: Int) {
        let next = self.state.withLock { state in
            precondition(state.serving == ticket, "turn \(ticket) ended while serving \(state.serving)")
            state.serving += 1
            let serving = state.serving
            return state.waiters.removeAll { $0 == serving }
        }
        for waiter in next { waiter.resume(returning: true) }
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
