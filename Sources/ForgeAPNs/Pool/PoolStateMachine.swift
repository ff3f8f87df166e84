internal import ForgeHTTP2

/// The connection pool's decisions, without I/O: a value that takes events (a request waiting, a
/// connection up or failed, its first answer, new SETTINGS, GOAWAY, a close, a timer) and returns
/// the actions to run (connect, close, hand a connection to a waiter, fail a waiter, set a timer).
/// ``ConnectionPool`` runs the actions after leaving its lock. The one owner of connection health:
/// stream limits, requests in flight, first answers, failures in a row and the backoff.
///
/// Growth: a request that finds every stream of every connection busy waits, and the pool opens one
/// more connection if it may: below ``Limits/maximumConnections``, no other connect under way, every
/// open connection already answered once (a new APNs connection offers one stream until then), and
/// no backoff. Connections beyond the first that stay idle for ``Limits/surplusIdleTimeout`` close;
/// the last one after ``Limits/idleTimeout``.
///
/// Time is `MonotonicInstant`, the I/O threads' clock: the client converts a caller's
/// `ContinuousClock.Instant` deadline once, at its public API, and everything below it (sends,
/// waits, timers, this machine) keeps that one type.
struct PoolStateMachine {
    struct ConnectionID: Hashable, Sendable, CustomStringConvertible {
        let raw: Int
        var description: String { "connection \(self.raw)" }
    }

    struct WaiterID: Hashable, Sendable {
        let raw: Int
    }

    struct Limits: Hashable, Sendable {
        /// The most connections open or connecting at once (draining ones not counted).
        var maximumConnections: Int
        /// The most streams this side opens on one connection, whatever the server allows.
        var maximumStreams: Int
        /// A connection beyond the first idle this long closes.
        var surplusIdleTimeout: Duration
        /// The last connection idle this long closes; `nil`: it stays.
        var idleTimeout: Duration?
        /// Failures in a row after which, while no open connection has answered, the endpoint
        /// counts as unreachable until the backoff ends (the retry policy's attempts): connects that
        /// never spoke HTTP/2 (see ``PoolStateMachine/silentFailures``) while the pool has had no
        /// answer yet; any failures in a row once they span ``unreachableWindow``.
        var unreachableAfter: Int = 3
        /// How long failures in a row must last, with no answer, before an endpoint that answered
        /// before (or that speaks HTTP/2 and then drops its connections) counts as unreachable: a
        /// server restarting or a load balancer recycling connections is ridden out, not given up on.
        var unreachableWindow: Duration = .seconds(10)
    }

    /// Why a waiter failed.
    enum Failure: Equatable, Sendable {
        /// Its deadline passed before a connection had room.
        case deadlineExceeded(connecting: Bool)
        /// The pool shut down.
        case shutdown
        /// The connect it waited for failed, or the endpoint is backing off after a failure that
        /// cannot heal now (the error of that connect).
        case connectFailed(HTTP2ClientError)
        /// The endpoint is unreachable (see ``PoolStateMachine/unreachable(now:)``): nothing is tried
        /// before the backoff ends. `failures` in a row over `silence` (the time since the first of
        /// them), the last with `last`.
        case unreachable(failures: Int, silence: Duration, last: HTTP2ClientError)
        /// The waiting task was cancelled.
        case cancelled
    }

    struct Actions: Sendable {
        /// Open a connection under this id and report ``connected(_:maximumStreams:)`` or ``connectFailed(_:_:now:random:)``.
        var connect: ConnectionID?
        /// Hand each waiter its connection (its requests are already counted against it).
        var dispatch: [(waiter: WaiterID, connection: ConnectionID)] = []
        /// Resume each waiter with its failure.
        var fail: [(waiter: WaiterID, failure: Failure)] = []
        /// Close these connections (idle, or surplus at shutdown); their requests are done.
        var close: [ConnectionID] = []
        /// Report ``tick(_:now:random:)`` at this instant.
        var timer: MonotonicInstant?

        var isEmpty: Bool { self.connect == nil && self.dispatch.isEmpty && self.fail.isEmpty && self.close.isEmpty && self.timer == nil }
    }

    /// What a request gets at once.
    enum Acquisition: Equatable, Sendable {
        /// This connection has room: the request is counted against it.
        case use(ConnectionID)
        /// It waits under this id; the actions (a connect, a timer) bring its turn.
        case wait(WaiterID)
        /// It fails now (shut down, or the endpoint failed in a way that cannot heal yet).
        case fail(Failure)
    }

    struct Connection: Sendable {
        enum Phase: Equatable, Sendable {
            case connecting
            case ready
            /// The server sent GOAWAY: requests already handed over finish, nothing new starts.
            case draining
        }

        let id: ConnectionID
        var phase: Phase
        /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, at most ``Limits/maximumStreams``.
        var limit = 1
        /// Requests handed over and not released.
        var inFlight = 0
        /// Whether a request got an answer on it: only then is it healthy. A copy of the connection's
        /// own record (`HTTP2Connection.hasAnswered`, which owns the fact): the pool hands it in at
        /// every release and at the close, and the machine keeps it to decide under the pool's lock
        /// without reading each connection's atomic. Never set here from anything else.
        var answered = false
        /// Since when it has had nothing in flight.
        var idleSince: MonotonicInstant
    }

    struct Waiter: Sendable {
        let id: WaiterID
        let count: Int
        let deadline: MonotonicInstant
    }

    let limits: Limits
    private(set) var connections: [Connection] = []
    private(set) var waiters: [Waiter] = []
    /// Connects in a row that failed, and connections that closed before any answer; reset by an answer.
    private(set) var failures = 0
    /// Those of ``failures`` that never spoke HTTP/2: the connect, TLS or ALPN failed, or the server
    /// closed the connection before its SETTINGS.
    private(set) var silentFailures = 0
    /// When the first of ``failures`` happened.
    private(set) var failingSince: MonotonicInstant?
    /// Whether any connection of this pool has answered a request: the endpoint is known to work.
    private(set) var hasBeenAnswered = false
    /// No connect before this (the backoff after a failure).
    private(set) var retryAt: MonotonicInstant?
    /// Why the last connect failed.
    private(set) var lastFailure: HTTP2ClientError?
    private(set) var isShutDown = false
    /// Timers set and not yet reported: a new one is asked for only when it is earlier than all.
    private var timers: [MonotonicInstant] = []
    private var nextConnectionID = 0
    private var nextWaiterID = 0
    /// The least wait before connecting again after a failure that cannot heal by retrying.
    static let permanentFailureBackoff = Duration.seconds(10)

    init(limits: Limits) {
        var limits = limits
        limits.maximumConnections = max(1, limits.maximumConnections)
        limits.maximumStreams = max(1, limits.maximumStreams)
        self.limits = limits
    }

    // MARK: Reading

    func connection(_ id: ConnectionID) -> Connection? { self.connections.first { $0.id == id } }

    /// Connections open and taking requests.
    var readyConnections: Int { self.connections.count { $0.phase == .ready } }

    /// How many requests may usefully be in flight now: the streams of the ready connections, plus
    /// one connection's worth while the pool may still grow (so that work waits and growth starts).
    var window: Int {
        var total = 0
        for connection in self.connections where connection.phase == .ready { total += connection.limit }
        if self.countsTowardsMaximum < self.limits.maximumConnections || total == 0 { total += self.limits.maximumStreams }
        return max(1, total)
    }

    /// The most streams one ready connection offers: the most requests worth sending together. The
    /// most, not the fewest: a new connection offers one stream until its first answer, and bulk
    /// batches (and the number of bulk workers) sized by it would shrink to one request for good.
    /// For the same reason, while no ready connection has answered yet, the most this side opens:
    /// their one stream is APNs' opening offer, not its limit (a connection opened ahead of the
    /// first push, by ``APNSClient/connect(deadline:)``, is what a bulk send then meets).
    var streamsPerConnection: Int {
        let ready = self.connections.lazy.filter { $0.phase == .ready }
        guard ready.contains(where: \.answered) else { return self.limits.maximumStreams }
        return ready.map(\.limit).max() ?? self.limits.maximumStreams
    }

    private var countsTowardsMaximum: Int { self.connections.count { $0.phase != .draining } }

    /// Whether the endpoint counts as unreachable at `now`: no open connection that has answered, no
    /// connect under way, the backoff not over, and either
    /// - ``Limits/unreachableAfter`` connects in a row never spoke HTTP/2 and the pool has had no
    ///   answer yet (a wrong port or host, a server that is not up: said within a second), or
    /// - ``Limits/unreachableAfter`` failures in a row of any kind have lasted
    ///   ``Limits/unreachableWindow`` without an answer.
    ///
    /// A connection that spoke HTTP/2 and then closed before answering is a failure (it backs the
    /// pool off) but never ends the send by count: its requests retry within their own budgets.
    func unreachable(now: MonotonicInstant) -> Failure? {
        guard self.failures >= self.limits.unreachableAfter, let last = self.lastFailure, let retryAt = self.retryAt, retryAt > now,
            let since = self.failingSince, !self.connections.contains(where: { $0.answered || $0.phase == .connecting })
        else { return nil }
        let silence = since.duration(to: now)
        let atFirstContact = !self.hasBeenAnswered && self.silentFailures >= self.limits.unreachableAfter
        guard atFirstContact || silence >= self.limits.unreachableWindow else { return nil }
        return .unreachable(failures: self.failures, silence: silence, last: last)
    }

    // MARK: Requests

    /// Room for `count` requests on a connection that has a free stream, if one has and nobody waits
    /// before them; `nil` otherwise (then ``acquire(count:deadline:now:)`` queues them). `preferred`
    /// (the connection whose I/O thread asks) is taken when it has room, else the least loaded.
    mutating func acquireIfFree(count: Int, preferring preferred: ConnectionID? = nil) -> ConnectionID? {
        guard !self.isShutDown, self.waiters.isEmpty else { return nil }
        if let preferred, let index = self.connections.firstIndex(where: { $0.id == preferred }), self.connections[index].phase == .ready,
            self.connections[index].inFlight < self.connections[index].limit
        {
            self.connections[index].inFlight += count
            return preferred
        }
        guard let index = self.leastLoadedWithRoom() else { return nil }
        self.connections[index].inFlight += count
        return self.connections[index].id
    }

    /// A request for room for `count` requests.
    mutating func acquire(count: Int, deadline: MonotonicInstant, now: MonotonicInstant) -> (Acquisition, Actions) {
        if self.isShutDown { return (.fail(.shutdown), Actions()) }
        if self.waiters.isEmpty, let index = self.leastLoadedWithRoom() {
            self.connections[index].inFlight += count
            return (.use(self.connections[index].id), Actions())
        }
        if let unreachable = self.unreachable(now: now) { return (.fail(unreachable), Actions()) }
        if self.readyConnections == 0, !self.connections.contains(where: { $0.phase == .connecting }),
            let retryAt = self.retryAt, retryAt > now, let failure = self.lastFailure, failure.isPermanent
        {
            // It cannot heal by trying again now: fail at once until the backoff ends.
            return (.fail(.connectFailed(failure)), Actions())
        }
        if self.readyConnections == 0, !self.connections.contains(where: { $0.phase == .connecting }),
            let retryAt = self.retryAt, retryAt >= deadline, let failure = self.lastFailure
        {
            // The backoff outlasts the request: the last connect's failure is its outcome.
            return (.fail(.connectFailed(failure)), Actions())
        }
        let waiter = Waiter(id: WaiterID(raw: self.nextWaiterID), count: max(1, count), deadline: deadline)
        self.nextWaiterID += 1
        self.waiters.append(waiter)
        var actions = Actions()
        actions.connect = self.grow(now: now)
        self.scheduleWaiting(now: now, into: &actions)
        return (.wait(waiter.id), actions)
    }

    /// `count` requests on `id` are done.
    /// - Parameter answered: the connection's own record of an answer (`HTTP2Connection.hasAnswered`),
    ///   read as the requests are released.
    /// - Parameter clock: read only when the time matters (the connection goes idle, or requests
    ///   wait), at most once: a busy connection's release, once per push, reads no clock.
    mutating func release(_ id: ConnectionID, count: Int, answered: Bool, now clock: @autoclosure () -> MonotonicInstant) -> Actions {
        guard let index = self.index(of: id) else { return Actions() }
        var reading: MonotonicInstant?
        func now() -> MonotonicInstant {
            if let reading { return reading }
            let instant = clock()
            reading = instant
            return instant
        }
        self.connections[index].inFlight = max(0, self.connections[index].inFlight - count)
        if self.connections[index].inFlight == 0 { self.connections[index].idleSince = now() }
        if answered, !self.connections[index].answered {
            self.connections[index].answered = true
            self.recordAnswer()
        }
        var actions = self.dispatchWaiters()
        if !self.waiters.isEmpty {
            actions.connect = self.grow(now: now())
            self.scheduleWaiting(now: now(), into: &actions)
        }
        if self.connections[index].inFlight == 0, self.connections[index].phase == .ready { self.scheduleIdle(from: now(), into: &actions) }
        return actions
    }

    /// The waiter's task was cancelled: it leaves the queue.
    mutating func cancel(_ waiter: WaiterID) -> Actions {
        guard let index = self.waiters.firstIndex(where: { $0.id == waiter }) else { return Actions() }
        self.waiters.remove(at: index)
        var actions = Actions()
        actions.fail.append((waiter, .cancelled))
        return actions
    }

    // MARK: Connection events

    /// The connect under `id` succeeded; the server allows `maximumStreams` streams.
    mutating func connected(_ id: ConnectionID, maximumStreams: Int, now: MonotonicInstant) -> Actions {
        guard let index = self.index(of: id) else { return Actions() }
        if self.isShutDown {
            self.connections.remove(at: index)
            var actions = Actions()
            actions.close.append(id)
            return actions
        }
        self.connections[index].phase = .ready
        self.connections[index].limit = self.clamp(maximumStreams)
        self.connections[index].idleSince = now
        self.retryAt = nil
        var actions = self.dispatchWaiters()
        if self.connections[index].inFlight == 0 { self.scheduleIdle(from: now, into: &actions) }
        return actions
    }

    /// The connect under `id` failed. `random` in `0...1` picks the backoff's jitter.
    mutating func connectFailed(_ id: ConnectionID, _ error: HTTP2ClientError, now: MonotonicInstant, random: Double) -> Actions {
        guard let index = self.index(of: id) else { return Actions() }
        self.connections.remove(at: index)
        guard !self.isShutDown else { return Actions() }
        self.recordFailure(error, spoke: false, now: now, random: random)
        return self.afterFailure(error, spoke: false, now: now)
    }

    /// The server announced a new stream limit.
    mutating func settingsChanged(_ id: ConnectionID, maximumStreams: Int, now: MonotonicInstant) -> Actions {
        guard let index = self.index(of: id) else { return Actions() }
        self.connections[index].limit = self.clamp(maximumStreams)
        var actions = self.dispatchWaiters()
        if !self.waiters.isEmpty {
            actions.connect = self.grow(now: now)
            self.scheduleWaiting(now: now, into: &actions)
        }
        return actions
    }

    /// The server sent GOAWAY on `id`: nothing new goes there; a replacement opens if work waits.
    mutating func goAway(_ id: ConnectionID, now: MonotonicInstant) -> Actions {
        guard let index = self.index(of: id), self.connections[index].phase != .draining else { return Actions() }
        self.connections[index].phase = .draining
        var actions = Actions()
        if !self.waiters.isEmpty {
            actions.connect = self.grow(now: now)
            self.scheduleWaiting(now: now, into: &actions)
        }
        return actions
    }

    /// `id` closed. One that never answered and was not sent away with GOAWAY counts as a failure: a
    /// server that drops every connection after the handshake backs the pool off. When it closed
    /// before the server's SETTINGS (`error` says so: a `connectFailed`, TLS or ALPN error) it never
    /// spoke HTTP/2, as a failed connect; otherwise its waiters wait for the next connection.
    /// - Parameters:
    ///   - answered: the connection's own record of an answer (`HTTP2Connection.hasAnswered`), which
    ///     it writes on its I/O thread before it reports the close: an answer whose request is not
    ///     yet released counts, so a close racing the last releases is not taken for a failed connect.
    ///   - error: why it closed; one that cannot heal (the server speaks another protocol) is the
    ///     failure recorded, else a close before any answer is.
    mutating func closed(
        _ id: ConnectionID, goAway: Bool, answered: Bool = false, error: HTTP2ClientError? = nil, now: MonotonicInstant, random: Double
    ) -> Actions {
        guard let index = self.index(of: id) else { return Actions() }
        let connection = self.connections.remove(at: index)
        guard !self.isShutDown else { return Actions() }
        if answered, !connection.answered { self.recordAnswer() }
        if !connection.answered && !answered {
            if goAway {
                // The server spoke HTTP/2 properly ("not on this connection"): no failure, but no
                // answer either, so the backoff stays as it was.
            } else {
                // Without an error to tell, the close counts as one before the server spoke.
                let spoke = error.map { ![.connectFailed, .tlsFailed, .alpnMismatch].contains($0.code) } ?? false
                // A failure that cannot heal, or the connection's own words for a close before the
                // preface, is the failure recorded; else what happened, in the pool's words.
                let failure = error.flatMap { $0.isPermanent || !spoke ? $0 : nil }
                    ?? HTTP2ClientError(
                        .connectFailed, mayHaveBeenProcessed: false,
                        detail: spoke ? "the server spoke HTTP/2, then closed the connection before any answer"
                            : "the server closed the connection before any answer"
                    )
                self.recordFailure(failure, spoke: spoke, now: now, random: random)
                return self.afterFailure(failure, spoke: spoke, now: now)
            }
        }
        var actions = self.dispatchWaiters()
        if !self.waiters.isEmpty { actions.connect = self.grow(now: now) }
        self.scheduleWaiting(now: now, into: &actions)
        return actions
    }

    /// A timer set by an earlier action fired: expire waiters, connect after a backoff, close idle connections.
    mutating func tick(_ scheduled: MonotonicInstant, now: MonotonicInstant) -> Actions {
        if let index = self.timers.firstIndex(of: scheduled) { self.timers.remove(at: index) }
        var actions = Actions()
        guard !self.isShutDown else { return actions }
        let connecting = self.connections.contains { $0.phase == .connecting }
        self.waiters.removeAll { waiter in
            guard waiter.deadline <= now else { return false }
            actions.fail.append((waiter.id, .deadlineExceeded(connecting: connecting)))
            return true
        }
        if !self.waiters.isEmpty { actions.connect = self.grow(now: now) }
        // Idle connections: surplus ones first, the last one only after the (longer) idle timeout.
        var next: MonotonicInstant?
        for connection in self.connections where connection.phase == .ready && connection.inFlight == 0 {
            let surplus = self.readyConnections > 1
            let timeout = surplus ? self.limits.surplusIdleTimeout : self.limits.idleTimeout
            guard let timeout else { continue }
            let expiry = connection.idleSince + timeout
            if expiry <= now {
                self.connections.removeAll { $0.id == connection.id }
                actions.close.append(connection.id)
            } else {
                next = min(next ?? expiry, expiry)
            }
        }
        if let next { self.schedule(next, into: &actions) }
        self.scheduleWaiting(now: now, into: &actions)
        return actions
    }

    /// Fails every waiter and forgets every connection; returns the open ones to close.
    mutating func shutDown() -> Actions {
        var actions = Actions()
        guard !self.isShutDown else { return actions }
        self.isShutDown = true
        actions.fail = self.waiters.map { ($0.id, .shutdown) }
        self.waiters.removeAll()
        actions.close = self.connections.filter { $0.phase != .connecting }.map(\.id)
        self.connections.removeAll { $0.phase != .connecting }
        return actions
    }

    // MARK: Private

    private func index(of id: ConnectionID) -> Int? { self.connections.firstIndex { $0.id == id } }

    private func clamp(_ streams: Int) -> Int { max(1, min(streams, self.limits.maximumStreams)) }

    /// The ready connection with the lowest share of its streams in use, if one has a free stream.
    private func leastLoadedWithRoom() -> Int? {
        var best: (index: Int, load: Double)?
        for index in self.connections.indices where self.connections[index].phase == .ready {
            let connection = self.connections[index]
            guard connection.inFlight < connection.limit else { continue }
            let load = Double(connection.inFlight) / Double(connection.limit)
            if best == nil || load < best!.load { best = (index, load) }
        }
        return best?.index
    }

    /// Hands waiting requests, in order, to connections with room.
    private mutating func dispatchWaiters() -> Actions {
        var actions = Actions()
        while let waiter = self.waiters.first, let index = self.leastLoadedWithRoom() {
            self.waiters.removeFirst()
            self.connections[index].inFlight += waiter.count
            actions.dispatch.append((waiter.id, self.connections[index].id))
        }
        return actions
    }

    /// One more connection, if the pool may open one now (see the type's comment); during a backoff
    /// none (``scheduleWaiting(now:into:)`` sets the timer for its end).
    private mutating func grow(now: MonotonicInstant) -> ConnectionID? {
        guard !self.isShutDown, self.countsTowardsMaximum < self.limits.maximumConnections,
            !self.connections.contains(where: { $0.phase == .connecting }),
            !self.connections.contains(where: { $0.phase == .ready && !$0.answered })
        else { return nil }
        if let retryAt = self.retryAt, retryAt > now { return nil }
        let id = ConnectionID(raw: self.nextConnectionID)
        self.nextConnectionID += 1
        self.connections.append(Connection(id: id, phase: .connecting, idleSince: now))
        return id
    }

    /// An answer: the endpoint works; the failures in a row and the backoff are over.
    private mutating func recordAnswer() {
        self.hasBeenAnswered = true
        self.failures = 0
        self.silentFailures = 0
        self.failingSince = nil
        self.retryAt = nil
        self.lastFailure = nil
    }

    /// One more failure in a row (`spoke`: the connection spoke HTTP/2 first): the next connect waits
    /// `100 ms × 2^(failures-1)`, at most 30 s, less up to half of it; at least 10 s after a failure
    /// that cannot heal by retrying.
    private mutating func recordFailure(_ error: HTTP2ClientError, spoke: Bool, now: MonotonicInstant, random: Double) {
        self.failures += 1
        if !spoke { self.silentFailures += 1 }
        if self.failingSince == nil { self.failingSince = now }
        self.lastFailure = error
        let full = Double(min(100 << min(self.failures - 1, 9), 30_000))
        var retryAt = now + .milliseconds(Int64(full * (0.5 + 0.5 * min(max(random, 0), 1))))
        if error.isPermanent { retryAt = max(retryAt, now + Self.permanentFailureBackoff) }
        self.retryAt = retryAt
    }

    /// After a failed connect or a connection closed before any answer: at first contact (no answer
    /// yet) waiters that have no connection to go to take a silent failure (they waited for that
    /// connect, and spend their own connect budget); otherwise they wait for room, on a connection
    /// open now or on the next one the backoff allows.
    private mutating func afterFailure(_ error: HTTP2ClientError, spoke: Bool, now: MonotonicInstant) -> Actions {
        var actions = Actions()
        if let unreachable = self.unreachable(now: now) {
            // Every waiter, even one that a ready but silent connection could still take: that
            // connection is as likely to be dropped as the ones before it.
            actions.fail = self.waiters.map { ($0.id, unreachable) }
            self.waiters.removeAll()
        } else if self.readyConnections == 0, !spoke, !self.hasBeenAnswered || error.isPermanent {
            actions.fail = self.waiters.map { ($0.id, .connectFailed(error)) }
            self.waiters.removeAll()
        } else {
            actions = self.dispatchWaiters()
            self.scheduleWaiting(now: now, into: &actions)
        }
        return actions
    }

    /// A timer for the earliest waiter deadline, and for the end of the backoff while work waits.
    private mutating func scheduleWaiting(now: MonotonicInstant, into actions: inout Actions) {
        guard !self.waiters.isEmpty else { return }
        if let earliest = self.waiters.lazy.map(\.deadline).min() { self.schedule(earliest, into: &actions) }
        if let retryAt = self.retryAt, retryAt > now { self.schedule(retryAt, into: &actions) }
    }

    private mutating func scheduleIdle(from now: MonotonicInstant, into actions: inout Actions) {
        let timeout = self.readyConnections > 1 ? self.limits.surplusIdleTimeout : self.limits.idleTimeout
        guard let timeout else { return }
        self.schedule(now + timeout, into: &actions)
    }

    /// Asks for a timer at `instant` unless one at or before it is already set.
    private mutating func schedule(_ instant: MonotonicInstant, into actions: inout Actions) {
        if let earliest = self.timers.min(), earliest <= instant { return }
        if let current = actions.timer, current <= instant { return }
        if let current = actions.timer, let index = self.timers.firstIndex(of: current) { self.timers.remove(at: index) }
        self.timers.append(instant)
        actions.timer = instant
    }
}
