@testable import ForgeAPNs
import ForgeHTTP2
import Testing

/// The pool's decisions, event by event, without sockets or time: each test feeds events and checks
/// the actions (as async-http-client tests its `HTTPConnectionPool.StateMachine`).
@Suite("Pool state machine: events in, actions out")
struct PoolStateMachineTests {
    typealias Machine = PoolStateMachine
    /// A manual "now" on the I/O threads' clock (the machine's time type): an hour after its start.
    let t0 = MonotonicInstant(nanoseconds: 3_600_000_000_000)
    var later: MonotonicInstant { self.t0 + .seconds(30) }

    func machine(connections: Int = 4, streams: Int = 1000, surplusIdle: Duration = .seconds(60), idle: Duration? = .seconds(600)) -> Machine {
        Machine(limits: .init(maximumConnections: connections, maximumStreams: streams, surplusIdleTimeout: surplusIdle, idleTimeout: idle))
    }

    /// Opens one connection through a first request and its answer (or, with `answered: false`,
    /// its end without one); returns its id.
    func open(_ machine: inout Machine, streams: Int = 1000, answered: Bool = true) -> Machine.ConnectionID {
        let (acquisition, actions) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait(let waiter) = acquisition, let id = actions.connect else {
            Issue.record("expected a wait and a connect, got \(acquisition)")
            return Machine.ConnectionID(raw: -1)
        }
        let up = machine.connected(id, maximumStreams: streams, now: self.t0)
        #expect(up.dispatch.map(\.waiter) == [waiter] && up.dispatch.map(\.connection) == [id])
        _ = machine.release(id, count: 1, answered: answered, now: self.t0)
        return id
    }

    static let refused = HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "connection refused")

    @Test("The first request waits for one connect; requests meanwhile wait for the same connect; the connection serves them in order")
    func firstConnect() {
        var machine = self.machine()
        let (first, connect) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait(let a) = first, let id = connect.connect else {
            Issue.record("\(first)")
            return
        }
        #expect(connect.timer == self.later, "the waiter's deadline is timed")
        let (second, none) = machine.acquire(count: 5, deadline: self.later, now: self.t0)
        guard case .wait(let b) = second else {
            Issue.record("\(second)")
            return
        }
        #expect(none.connect == nil, "one connect at a time")
        let up = machine.connected(id, maximumStreams: 10, now: self.t0)
        #expect(up.dispatch.map(\.waiter) == [a, b])
        #expect(machine.connection(id)?.inFlight == 6)
        #expect(machine.acquireIfFree(count: 1) == id)
    }

    @Test("A full connection grows the pool only after its first answer (APNs offers one stream until then)")
    func growthWaitsForFirstAnswer() {
        var machine = self.machine()
        let (first, connect) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait = first, let id = connect.connect else {
            Issue.record("\(first)")
            return
        }
        _ = machine.connected(id, maximumStreams: 1, now: self.t0)
        // The one stream is busy: the next request waits, and no second connect starts yet.
        let (second, actions) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait(let waiter) = second else {
            Issue.record("\(second)")
            return
        }
        #expect(actions.connect == nil)
        // The answer comes with a higher limit: the waiter goes on the same connection.
        _ = machine.settingsChanged(id, maximumStreams: 1000, now: self.t0)
        #expect(machine.waiters.isEmpty)
        let released = machine.release(id, count: 1, answered: true, now: self.t0)
        #expect(released.connect == nil && released.dispatch.isEmpty)
        _ = waiter
    }

    @Test("Every stream busy and work waiting: one more connection at a time, up to the maximum")
    func growsOneAtATimeToTheMaximum() {
        var machine = self.machine(connections: 3, streams: 2)
        let first = self.open(&machine, streams: 2)
        #expect(machine.acquireIfFree(count: 2) == first)
        var ids = [first]
        for round in 1...2 {
            let (waiting, actions) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
            guard case .wait(let waiter) = waiting, let id = actions.connect else {
            Issue.record("round \(round): \(waiting)")
            return
        }
            // While it connects, more work waits without a second connect.
            let (_, more) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
            #expect(more.connect == nil)
            let up = machine.connected(id, maximumStreams: 2, now: self.t0)
            #expect(up.dispatch.first?.waiter == waiter && up.dispatch.count == 2)
            // Not healthy until it answers: no third connect before that.
            let (_, early) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
            #expect(early.connect == nil)
            _ = machine.release(id, count: 1, answered: true, now: self.t0)
            ids.append(id)
        }
        #expect(machine.readyConnections == 3)
        // At the maximum, a request with no free stream waits for one; a release hands it over.
        while machine.acquireIfFree(count: 1) != nil {}
        let (full, none) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait(let waiter) = full else {
            Issue.record("\(full)")
            return
        }
        #expect(none.connect == nil)
        let freed = machine.release(ids[1], count: 1, answered: true, now: self.t0)
        #expect(freed.dispatch.map(\.waiter) == [waiter] && freed.dispatch.map(\.connection) == [ids[1]])
    }

    /// Two connections of 10 streams: `a` filled, then `b` opened for one more request (which it
    /// holds), then `freed` of a's requests answered.
    func twoConnections(_ machine: inout Machine, freed: Int) -> (a: Machine.ConnectionID, b: Machine.ConnectionID)? {
        let a = self.open(&machine, streams: 10)
        for _ in 0..<10 { #expect(machine.acquireIfFree(count: 1) == a) }
        let (_, grow) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard let b = grow.connect else {
            Issue.record("no growth")
            return nil
        }
        _ = machine.connected(b, maximumStreams: 10, now: self.t0)
        _ = machine.release(a, count: freed, answered: true, now: self.t0)
        return (a, b)
    }

    @Test("Requests go to the connection with the lowest share of its streams in use")
    func leastLoaded() {
        var machine = self.machine(connections: 2, streams: 10)
        guard let (_, b) = self.twoConnections(&machine, freed: 5) else { return }
        // a: 5 of 10, b: 1 of 10 (the waiter) -> b until it holds as many.
        #expect(machine.acquireIfFree(count: 1) == b)
        #expect(machine.connection(b)?.inFlight == 2)
    }

    @Test("A preferred connection (the caller's I/O thread's) is taken while it has room, else the least loaded")
    func preferredConnection() {
        var machine = self.machine(connections: 2, streams: 10)
        guard let (a, b) = self.twoConnections(&machine, freed: 2) else { return }
        // a: 8 of 10, b: 1 of 10. Preferring a: a, though b has more room, until a is full.
        #expect(machine.acquireIfFree(count: 1, preferring: a) == a)
        #expect(machine.acquireIfFree(count: 1, preferring: a) == a)
        #expect(machine.connection(a)?.inFlight == 10)
        // a is full: the least loaded, b.
        #expect(machine.acquireIfFree(count: 1, preferring: a) == b)
        // A connection the machine does not know (closed meanwhile): the least loaded.
        #expect(machine.acquireIfFree(count: 1, preferring: Machine.ConnectionID(raw: 99)) == b)
        #expect(machine.connection(b)?.inFlight == 3)
    }

    @Test("The window: open streams, plus one connection's worth while the pool may grow; the batch is one connection's streams")
    func window() {
        var machine = self.machine(connections: 2, streams: 1000)
        #expect(machine.window == 1000 && machine.streamsPerConnection == 1000)
        let a = self.open(&machine, streams: 500)
        #expect(machine.window == 1500 && machine.streamsPerConnection == 500)
        while machine.acquireIfFree(count: 1) != nil {}
        let (_, grow) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        // A new connection offers one stream until its first answer: the batch stays what the first offers.
        _ = machine.connected(grow.connect!, maximumStreams: 1, now: self.t0)
        #expect(machine.streamsPerConnection == 500)
        _ = machine.settingsChanged(grow.connect!, maximumStreams: 2000, now: self.t0)
        #expect(machine.window == 1500, "at the maximum: the streams of both, the second capped at 1000")
        #expect(machine.streamsPerConnection == 1000)
        _ = a
    }

    @Test("A connection opened ahead, with APNs' one stream and no answer yet: batches are sized for the streams to come")
    func connectionOpenedAhead() {
        var machine = self.machine(connections: 4, streams: 1000)
        let id = self.open(&machine, streams: 1, answered: false)
        #expect(machine.readyConnections == 1)
        #expect(machine.streamsPerConnection == 1000, "one stream is the opening offer, not the limit")
        #expect(machine.window == 1001, "its one stream, plus one connection's worth while the pool may grow")
        // Answered, and still at one stream: that is the server's limit now.
        _ = machine.acquireIfFree(count: 1)
        _ = machine.release(id, count: 1, answered: true, now: self.t0)
        #expect(machine.streamsPerConnection == 1)
    }

    @Test("A failed connect fails the requests that waited for it, and the next connect waits out a growing backoff")
    func connectFailureBacksOff() {
        var machine = self.machine()
        let (first, connect) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait(let waiter) = first, let id = connect.connect else {
            Issue.record("\(first)")
            return
        }
        let failed = machine.connectFailed(id, Self.refused, now: self.t0, random: 1)
        #expect(failed.fail.map(\.waiter) == [waiter])
        #expect(machine.retryAt == self.t0 + .milliseconds(100) && machine.failures == 1)
        // During the backoff a request waits, with a timer for the backoff's end and no connect.
        let (second, actions) = machine.acquire(count: 1, deadline: self.later, now: self.t0 + .milliseconds(10))
        guard case .wait = second else {
            Issue.record("\(second)")
            return
        }
        #expect(actions.connect == nil)
        #expect(actions.timer == self.t0 + .milliseconds(100) || machine.retryAt! >= self.t0 + .milliseconds(100))
        // The backoff's timer fires: the connect starts.
        let tick = machine.tick(self.t0 + .milliseconds(100), now: self.t0 + .milliseconds(100))
        guard let again = tick.connect else {
            Issue.record("no connect after the backoff")
            return
        }
        _ = machine.connectFailed(again, Self.refused, now: self.t0 + .milliseconds(100), random: 1)
        #expect(machine.retryAt == self.t0 + .milliseconds(300), "100 ms, then 200 ms")
        // An answer on a later connection resets the count.
        let (_, third) = machine.acquire(count: 1, deadline: self.later, now: self.t0 + .seconds(1))
        guard let id3 = third.connect else {
            Issue.record("no connect after the second backoff")
            return
        }
        _ = machine.connected(id3, maximumStreams: 100, now: self.t0 + .seconds(1))
        _ = machine.release(id3, count: 1, answered: true, now: self.t0 + .seconds(1))
        #expect(machine.failures == 0 && machine.retryAt == nil)
    }

    @Test("The backoff doubles to 30 s at most, less up to half of it at random")
    func backoffBounds() {
        var machine = self.machine()
        var now = self.t0
        for failure in 1...14 {
            let (_, actions) = machine.acquire(count: 1, deadline: now + .seconds(3600), now: now)
            guard let id = actions.connect else {
            Issue.record("failure \(failure): no connect")
            return
        }
            _ = machine.connectFailed(id, Self.refused, now: now, random: 0)
            let full = Duration.milliseconds(min(100 << (failure - 1), 30_000))
            #expect(machine.retryAt == now + full / 2, "failure \(failure)")
            now = machine.retryAt!
            _ = machine.tick(now, now: now)
        }
    }

    @Test("A failure that cannot heal (unknown name, untrusted certificate) fails requests at once for 10 s")
    func permanentFailure() {
        var machine = self.machine()
        let (_, actions) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        let permanent = HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "no such host", permanent: true)
        _ = machine.connectFailed(actions.connect!, permanent, now: self.t0, random: 1)
        let (now, none) = machine.acquire(count: 1, deadline: self.later, now: self.t0 + .seconds(9))
        #expect(now == .fail(.connectFailed(permanent)) && none.isEmpty)
        let (after, retry) = machine.acquire(count: 1, deadline: self.later, now: self.t0 + .seconds(10))
        guard case .wait = after else {
            Issue.record("\(after)")
            return
        }
        #expect(retry.connect != nil)
    }

    @Test("A backoff that outlasts the request's deadline fails it at once with the last connect's error")
    func backoffPastDeadline() {
        var machine = self.machine()
        let (_, actions) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        _ = machine.connectFailed(actions.connect!, Self.refused, now: self.t0, random: 1)
        let (result, _) = machine.acquire(count: 1, deadline: self.t0 + .milliseconds(50), now: self.t0)
        #expect(result == .fail(.connectFailed(Self.refused)))
    }

    @Test("A connection closed before any answer counts as a failed connect, unless the server sent GOAWAY")
    func closedBeforeAnswer() {
        var machine = self.machine()
        let (first, connect) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait = first, let id = connect.connect else {
            Issue.record("\(first)")
            return
        }
        _ = machine.connected(id, maximumStreams: 1000, now: self.t0)
        _ = machine.release(id, count: 1, answered: false, now: self.t0)
        let (waiting, _) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        #expect(waiting == .use(id))
        let closed = machine.closed(id, goAway: false, now: self.t0, random: 1)
        #expect(machine.failures == 1 && machine.retryAt != nil && closed.connect == nil)

        var polite = self.machine()
        let (_, c2) = polite.acquire(count: 1, deadline: self.later, now: self.t0)
        _ = polite.connected(c2.connect!, maximumStreams: 1000, now: self.t0)
        _ = polite.goAway(c2.connect!, now: self.t0)
        _ = polite.closed(c2.connect!, goAway: true, now: self.t0, random: 1)
        #expect(polite.failures == 0 && polite.retryAt == nil)
    }

    /// One connection that completes its handshake, takes a request and closes before any answer,
    /// as a server that drops each connection after TLS does. A second request waits meanwhile
    /// (the new connection offers one stream); returns how that waiter ends.
    /// With `spoke`, the server sent its SETTINGS before it closed (the close's error says so).
    @discardableResult
    func dropAfterHandshake(_ machine: inout Machine, now: MonotonicInstant, spoke: Bool = false) -> Machine.Failure? {
        let (_, actions) = machine.acquire(count: 1, deadline: now + .seconds(30), now: now)
        guard let id = actions.connect else {
            Issue.record("no connect at \(now)")
            return nil
        }
        _ = machine.connected(id, maximumStreams: 1, now: now)
        let (second, _) = machine.acquire(count: 1, deadline: now + .seconds(30), now: now)
        guard case .wait(let waiter) = second else {
            Issue.record("the second request: \(second)")
            return nil
        }
        let error = spoke
            ? HTTP2ClientError(.connectionClosed, mayHaveBeenProcessed: true, detail: "the server closed the connection")
            : HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "the server closed the connection before its HTTP/2 preface")
        let closed = machine.closed(id, goAway: false, error: error, now: now, random: 0)
        return closed.fail.first { $0.waiter == waiter }?.failure
    }

    @Test("Connections dropped after the handshake, as many in a row as a push may try: unreachable, failing at once until the backoff ends")
    func unreachableAfterDrops() {
        var machine = Machine(limits: .init(maximumConnections: 4, maximumStreams: 1000, surplusIdleTimeout: .seconds(60),
                                            idleTimeout: nil, unreachableAfter: 3))
        var now = self.t0
        for drop in 1...2 {
            let failure = self.dropAfterHandshake(&machine, now: now)
            guard case .connectFailed? = failure else {
                Issue.record("drop \(drop): the waiter takes the connect's failure, got \(String(describing: failure))")
                return
            }
            #expect(machine.unreachable(now: now) == nil, "\(drop) failure(s) are not yet the rule")
            now = machine.retryAt!
        }
        guard case .unreachable(let failures, _, _)? = self.dropAfterHandshake(&machine, now: now) else {
            Issue.record("the third drop fails its waiter as unreachable")
            return
        }
        #expect(failures == 3)
        let retryAt = machine.retryAt!
        let (during, none) = machine.acquire(count: 1, deadline: now + .seconds(30), now: now)
        #expect(during == .fail(.unreachable(failures: 3, silence: self.t0.duration(to: now), last: machine.lastFailure!)), "a new send fails at once: \(during)")
        #expect(none.connect == nil, "and opens nothing")
        let (after, retry) = machine.acquire(count: 1, deadline: retryAt + .seconds(30), now: retryAt)
        guard case .wait = after, retry.connect != nil else {
            Issue.record("after the backoff a send waits for a new connect: \(after)")
            return
        }
    }

    @Test("A server that answered and then drops is ridden out: waiters wait, and only failures in a row lasting the window are the rule")
    func answeredThenDrops() {
        var machine = Machine(limits: .init(maximumConnections: 4, maximumStreams: 1000, surplusIdleTimeout: .seconds(60),
                                            idleTimeout: nil, unreachableAfter: 3))
        let served = self.open(&machine)
        _ = machine.closed(served, goAway: false, now: self.t0, random: 0)
        #expect(machine.failures == 0, "a connection that answered and then closed is no failure")
        var now = self.t0
        var drops = 0
        while self.t0.duration(to: now) < .seconds(10) {
            let failure = self.dropAfterHandshake(&machine, now: now)
            drops += 1
            #expect(failure == nil, "drop \(drops) at +\(self.t0.duration(to: now)): the waiter waits for the next connection, got \(String(describing: failure))")
            #expect(machine.unreachable(now: now) == nil, "drop \(drops) at +\(self.t0.duration(to: now)) is within the window")
            now = machine.retryAt!
        }
        #expect(drops >= 3, "more drops in a row than the count rule's \(drops)")
        guard case .unreachable(let failures, let silence, _)? = self.dropAfterHandshake(&machine, now: now) else {
            Issue.record("the first drop past the window fails its waiter as unreachable")
            return
        }
        #expect(failures == drops + 1 && silence >= .seconds(10))

        // With a connection open that has answered, failing connects for growth are not the rule.
        var growing = Machine(limits: .init(maximumConnections: 4, maximumStreams: 1, surplusIdleTimeout: .seconds(60),
                                            idleTimeout: nil, unreachableAfter: 1))
        let healthy = self.open(&growing, streams: 1)
        _ = growing.acquireIfFree(count: 1)
        let (_, grow) = growing.acquire(count: 1, deadline: self.later, now: self.t0)
        _ = growing.connectFailed(grow.connect!, Self.refused, now: self.t0, random: 0)
        #expect(growing.failures == 1 && growing.unreachable(now: self.t0) == nil, "\(healthy) still answers")
    }

    @Test("Connections that spoke HTTP/2 and then closed before answering: never the count rule, waiters wait, the window ends it")
    func spokeThenClosed() {
        var machine = Machine(limits: .init(maximumConnections: 4, maximumStreams: 1000, surplusIdleTimeout: .seconds(60),
                                            idleTimeout: nil, unreachableAfter: 3))
        var now = self.t0
        for drop in 1...6 {
            let failure = self.dropAfterHandshake(&machine, now: now, spoke: true)
            #expect(failure == nil, "drop \(drop): the waiter waits, got \(String(describing: failure))")
            #expect(machine.unreachable(now: now) == nil && machine.silentFailures == 0)
            now = machine.retryAt!
        }
        #expect(machine.failures == 6 && self.t0.duration(to: now) < .seconds(10), "backed off: \(self.t0.duration(to: now))")
        while self.t0.duration(to: now) < .seconds(10) {
            _ = self.dropAfterHandshake(&machine, now: now, spoke: true)
            now = machine.retryAt!
        }
        let last = self.dropAfterHandshake(&machine, now: now, spoke: true)
        guard case .unreachable? = last else {
            Issue.record("no answer for the window: unreachable, got \(String(describing: last))")
            return
        }
        // One answer ends it: the failures, the window and the backoff start again.
        let retryAt = machine.retryAt!
        let (_, actions) = machine.acquire(count: 1, deadline: retryAt + .seconds(30), now: retryAt)
        _ = machine.connected(actions.connect!, maximumStreams: 100, now: retryAt)
        _ = machine.release(actions.connect!, count: 1, answered: true, now: retryAt)
        #expect(machine.failures == 0 && machine.failingSince == nil && machine.hasBeenAnswered)
    }

    @Test("A connection closed for a failure that cannot heal (the wrong protocol) records that failure")
    func closedCannotHeal() {
        var machine = self.machine()
        let (_, connect) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        _ = machine.connected(connect.connect!, maximumStreams: 1000, now: self.t0)
        let mismatch = HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "the server answered with TLS", permanent: true)
        _ = machine.closed(connect.connect!, goAway: false, error: mismatch, now: self.t0, random: 0)
        #expect(machine.lastFailure == mismatch)
        let (again, actions) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        #expect(again == .fail(.connectFailed(mismatch)) && actions.connect == nil)
    }

    @Test("GOAWAY: nothing new goes to the connection; waiting work opens a replacement")
    func goAwayDrains() {
        var machine = self.machine(connections: 1)
        let id = self.open(&machine)
        _ = machine.acquireIfFree(count: 1)
        let away = machine.goAway(id, now: self.t0)
        #expect(away.connect == nil, "nothing waits yet")
        #expect(machine.acquireIfFree(count: 1) == nil)
        let (waiting, actions) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait(let waiter) = waiting, let replacement = actions.connect else {
            Issue.record("\(waiting)")
            return
        }
        #expect(replacement != id, "a draining connection does not count towards the maximum")
        let up = machine.connected(replacement, maximumStreams: 1000, now: self.t0)
        #expect(up.dispatch.map(\.waiter) == [waiter])
    }

    @Test("A waiter whose deadline passes fails with deadlineExceeded; a cancelled one leaves the queue")
    func deadlinesAndCancellation() {
        var machine = self.machine()
        let soon = self.t0 + .milliseconds(200)
        let (a, connect) = machine.acquire(count: 1, deadline: soon, now: self.t0)
        let (b, _) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait(let first) = a, case .wait(let second) = b else {
            Issue.record("\(a) \(b)")
            return
        }
        #expect(connect.timer == soon)
        let tick = machine.tick(soon, now: soon)
        #expect(tick.fail.count == 1 && tick.fail[0].waiter == first && tick.fail[0].failure == .deadlineExceeded(connecting: true))
        let cancelled = machine.cancel(second)
        #expect(cancelled.fail.map(\.waiter) == [second] && machine.waiters.isEmpty)
        #expect(machine.cancel(second).isEmpty, "cancelling twice does nothing")
    }

    @Test("Idle: connections beyond the first close after the surplus timeout, the last one after the idle timeout")
    func idleShrinks() {
        var machine = self.machine(connections: 2, streams: 1, surplusIdle: .seconds(60), idle: .seconds(600))
        let a = self.open(&machine, streams: 1)
        _ = machine.acquireIfFree(count: 1)
        let (_, grow) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        let b = grow.connect!
        _ = machine.connected(b, maximumStreams: 1, now: self.t0)
        _ = machine.release(a, count: 1, answered: true, now: self.t0)
        _ = machine.release(b, count: 1, answered: true, now: self.t0)
        // An earlier timer is outstanding (the waiter's deadline); its tick schedules the idle one.
        #expect(machine.tick(self.later, now: self.t0 + .seconds(30)).timer == self.t0 + .seconds(60))
        #expect(machine.tick(self.t0 + .seconds(59), now: self.t0 + .seconds(59)).close.isEmpty)
        let surplus = machine.tick(self.t0 + .seconds(60), now: self.t0 + .seconds(60))
        #expect(surplus.close.count == 1 && machine.readyConnections == 1)
        #expect(machine.tick(self.t0 + .seconds(120), now: self.t0 + .seconds(120)).close.isEmpty, "the last one stays longer")
        let last = machine.tick(self.t0 + .seconds(600), now: self.t0 + .seconds(600))
        #expect(last.close.count == 1 && machine.readyConnections == 0)
        // With no idle timeout the last connection stays for good.
        var keep = self.machine(connections: 1, idle: nil)
        _ = self.open(&keep)
        #expect(keep.tick(self.t0 + .seconds(86_400), now: self.t0 + .seconds(86_400)).close.isEmpty)
    }

    @Test("Shutdown fails every waiter, closes every open connection, and refuses later requests; a connect that lands after it closes")
    func shutdown() {
        var machine = self.machine()
        let id = self.open(&machine, streams: 1)
        _ = machine.acquireIfFree(count: 1)
        let (waiting, grow) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        guard case .wait(let waiter) = waiting, let connecting = grow.connect else {
            Issue.record("\(waiting)")
            return
        }
        let down = machine.shutDown()
        #expect(down.fail.map(\.waiter) == [waiter] && down.fail.first?.failure == .shutdown && down.close == [id])
        #expect(machine.acquire(count: 1, deadline: self.later, now: self.t0).0 == .fail(.shutdown))
        #expect(machine.connected(connecting, maximumStreams: 10, now: self.t0).close == [connecting])
    }

    @Test("Timers: one per earliest instant, never in the past, so a backoff never spins")
    func timersDoNotSpin() {
        var machine = self.machine()
        let (_, actions) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        _ = machine.connectFailed(actions.connect!, Self.refused, now: self.t0, random: 1)
        let (_, waiting) = machine.acquire(count: 1, deadline: self.later, now: self.t0)
        let backoffEnd = machine.retryAt!
        #expect(waiting.timer == backoffEnd)
        // The tick at the backoff's end connects; it asks for no timer at or before now.
        let tick = machine.tick(backoffEnd, now: backoffEnd)
        #expect(tick.connect != nil)
        if let timer = tick.timer { #expect(timer > backoffEnd) }
    }
}
