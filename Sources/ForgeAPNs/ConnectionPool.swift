internal import ForgeHTTP2
internal import ForgeSupport
internal import Logging
internal import Metrics

/// A fixed number of connection slots to one endpoint. Connections open lazily, a new one only when
/// the open ones are full; a connection that goes away (GOAWAY, dead PING, error) leaves its slot
/// to be refilled.
///
/// A connection counts as healthy only once it has brought an answer: a connect that fails, and a
/// connection that closes before any answer (a server that drops every connection after the
/// handshake), both add to the slot's failures, and the slot waits `100 ms × 2^(failures-1)` (at most
/// 30 s, less up to half of it at random) before the next connect. A caller that waits out such a
/// backoff sees the outcome of the next connect, so one caller never waits through several.
final class ConnectionPool: APNSTransport {
    private struct Slot {
        var connection: HTTP2Connection?
        var connecting: Task<HTTP2Connection, any Error>?
        /// Connections in a row that failed: connects that failed, and connections that closed before
        /// their first answer. Reset by an answer.
        var failures = 0
        var retryAt: ContinuousClock.Instant?
        /// Why the last connect failed, and how many connects failed so far (callers that waited out
        /// a backoff compare it to see whether a connect was tried meanwhile).
        var lastFailure: (any Error)?
        var failedConnects = 0
        /// Whether the current connection has brought an answer.
        var answered = false
        var lastUsed = ContinuousClock.now
        /// Requests handed to this slot's connection and not finished: counted here when handed
        /// over, so concurrent picks see each other at once (the connection's own count lags).
        var inFlight = 0
    }

    private struct State {
        var slots: [Slot]
        var closed = false
    }

    private enum Step {
        case use(HTTP2Connection)
        case wait(Task<HTTP2Connection, any Error>)
        case sleep(until: ContinuousClock.Instant, slot: Int, failedConnects: Int)
    }

    private let state: LockedBox<State>
    private let configuration: HTTP2ClientConfiguration
    private let maxStreams: Int
    private let idleTimeout: Duration?
    private let logger: Logger
    private let connectionsGauge = Gauge(label: "apns_pool_connections")
    /// The least wait before connecting again after a failure that cannot heal by retrying.
    static let permanentFailureBackoff = Duration.seconds(10)

    init(configuration: HTTP2ClientConfiguration, connections: Int, maxStreams: Int, idleTimeout: Duration?, logger: Logger) {
        self.configuration = configuration
        self.maxStreams = max(1, maxStreams)
        self.idleTimeout = idleTimeout
        self.logger = logger
        self.state = LockedBox(State(slots: Array(repeating: Slot(), count: max(1, connections))))
    }

    var window: Int {
        self.state.withLock { state in
            var total = 0
            for slot in state.slots {
                if let usage = slot.connection?.load, usage.isActive {
                    total += min(Int(usage.peerMaxConcurrentStreams), self.maxStreams)
                } else {
                    // An empty slot offers what a new connection will: enough demand to open it.
                    total += self.maxStreams
                }
            }
            return max(total, 1)
        }
    }

    /// The fewest streams one usable connection offers now (the peer's limit and the local cap);
    /// the local cap while none is open.
    var streamsPerConnection: Int {
        self.state.withLock { state in
            var fewest: Int?
            for slot in state.slots {
                guard let usage = slot.connection?.load, usage.isActive else { continue }
                let streams = max(1, min(Int(usage.peerMaxConcurrentStreams), self.maxStreams))
                fewest = min(fewest ?? streams, streams)
            }
            return fewest ?? self.maxStreams
        }
    }

    /// Open connections (for the pool gauge and tests).
    var openConnections: Int {
        self.state.withLock { state in
            state.slots.filter { slot in
                guard let connection = slot.connection, case .active = connection.state else { return false }
                return true
            }.count
        }
    }

    /// Sends on the least loaded connection, without retries or replays: what to do about a
    /// failure is ``SendDecision``'s call.
    func send(_ request: HTTP2Request, deadline: ContinuousClock.Instant) async throws -> HTTP2Response {
        let connection = try await self.acquire(deadline: deadline, count: 1)
        do {
            let response = try await connection.send(request, deadline: deadline)
            self.release(connection, count: 1, answered: true)
            return response
        } catch {
            self.release(connection, count: 1, answered: false)
            if case .closed = connection.state { self.retire(connection) }  // a GOAWAY connection drains; acquire drops it
            throw (error as? HTTP2ClientError).map { Self.neverUsable(connection, $0) } ?? error
        }
    }

    func sendBatch(_ requests: [HTTP2Request], deadline: ContinuousClock.Instant) async -> [Result<HTTP2Response, any Error>] {
        let connection: HTTP2Connection
        do {
            connection = try await self.acquire(deadline: deadline, count: requests.count)
        } catch {
            return Array(repeating: .failure(error), count: requests.count)
        }
        let results = await connection.sendBatch(requests, deadline: deadline)
        self.release(connection, count: requests.count, answered: results.contains { if case .success = $0 { true } else { false } })
        if case .closed = connection.state { self.retire(connection) }
        return results.map { result in result.mapError { Self.neverUsable(connection, $0) } }
    }

    /// A request the server did not process because its connection ended before answering
    /// anything: the endpoint failed as much as a refused connect did, and counts as such
    /// (``SendDecision``'s connect budget, not its replays).
    /// A GOAWAY is the server saying, properly, "not on this connection" (an idle timeout, a
    /// restart): what it did not process is replayed as usual.
    private static func neverUsable(_ connection: HTTP2Connection, _ error: HTTP2ClientError) -> HTTP2ClientError {
        guard !error.mayHaveBeenProcessed, !connection.hasAnswered, error.code == .connectionClosed || error.code == .peerUnresponsive,
            !Self.endedWithGoAway(connection)
        else { return error }
        return HTTP2ClientError(
            .connectFailed, mayHaveBeenProcessed: false, http2ErrorCode: error.http2ErrorCode,
            detail: "\(connection.endpoint) ended the connection before any answer: \(error.detail)"
        )
    }

    /// Ends `count` requests on `connection`; an answer among them proves the connection healthy.
    private func release(_ connection: HTTP2Connection, count: Int, answered: Bool) {
        self.state.withLock { state in
            if let index = state.slots.firstIndex(where: { $0.connection === connection }) {
                state.slots[index].inFlight = max(0, state.slots[index].inFlight - count)
                if answered, !state.slots[index].answered {
                    state.slots[index].answered = true
                    state.slots[index].failures = 0
                }
            }
        }
    }

    /// Empties a slot whose connection went away; one that never brought an answer is a failure.
    private static func vacate(_ slot: inout Slot) {
        if let connection = slot.connection, !slot.answered {
            // Callers waiting out the backoff take a connection that broke off as the outcome of
            // their connect; one the server ended with GOAWAY (IdleTimeout, Shutdown) spoke HTTP/2
            // properly, so they connect again instead.
            if !Self.endedWithGoAway(connection) {
                slot.lastFailure = HTTP2ClientError(
                    .connectFailed, mayHaveBeenProcessed: false, detail: "\(connection.endpoint) closed the connection before any answer"
                )
                slot.failedConnects += 1
            }
            Self.recordFailure(&slot)
        }
        slot.connection = nil
        slot.inFlight = 0
        slot.answered = false
    }

    /// Whether the server sent GOAWAY on `connection`.
    private static func endedWithGoAway(_ connection: HTTP2Connection) -> Bool {
        switch connection.state {
        case .goingAway: return true
        case .closed(let error): return error.code == .goingAway
        case .active: return false
        }
    }

    /// One more failure in a row: the next connect waits the backoff.
    private static func recordFailure(_ slot: inout Slot) {
        slot.failures += 1
        let full = Double(min(100 << min(slot.failures - 1, 9), 30_000))
        slot.retryAt = .now + .milliseconds(Int64(full * Double.random(in: 0.5...1)))
    }

    /// A connection with room for `count` more requests, opening one if needed; the requests are
    /// counted against it until ``release(_:count:)``.
    private func acquire(deadline: ContinuousClock.Instant, count: Int) async throws -> HTTP2Connection {
        while true {
            if Task.isCancelled { throw HTTP2ClientError(.cancelled, mayHaveBeenProcessed: false, detail: "cancelled before sending") }
            let step = try self.state.withLock { state -> Step in
                guard !state.closed else { throw HTTP2ClientError(.shutdown, mayHaveBeenProcessed: false, detail: "the client is shut down") }
                let now = ContinuousClock.now
                var best: (index: Int, load: Double)?
                var idleToClose: [HTTP2Connection] = []
                for index in state.slots.indices {
                    guard let connection = state.slots[index].connection else { continue }
                    let usage = connection.load
                    guard usage.isActive else {
                        Self.vacate(&state.slots[index])
                        continue
                    }
                    let outstanding = max(usage.outstanding, state.slots[index].inFlight)
                    if let idle = self.idleTimeout, outstanding == 0, now - state.slots[index].lastUsed > idle {
                        idleToClose.append(connection)
                        state.slots[index].answered = true  // closed by us, not a failure
                        Self.vacate(&state.slots[index])
                        continue
                    }
                    let limit = max(1, min(Int(usage.peerMaxConcurrentStreams), self.maxStreams))
                    let load = Double(outstanding) / Double(limit)
                    if best == nil || load < best!.load { best = (index, load) }
                }
                for connection in idleToClose { Task { await connection.close() } }
                // Use the least loaded connection unless it is full and a slot is free to open another.
                if let best, best.load < 1 || !state.slots.contains(where: { $0.connection == nil }) {
                    state.slots[best.index].lastUsed = now
                    state.slots[best.index].inFlight += count
                    return .use(state.slots[best.index].connection!)
                }
                if let connecting = state.slots.first(where: { $0.connecting != nil })?.connecting {
                    return .wait(connecting)
                }
                guard let free = state.slots.firstIndex(where: { $0.connection == nil && $0.connecting == nil }) else {
                    // Every slot is busy connecting or full: queue on the least loaded (the transport queues).
                    if let best {
                        state.slots[best.index].inFlight += count
                        return .use(state.slots[best.index].connection!)
                    }
                    throw HTTP2ClientError(.connectionClosed, mayHaveBeenProcessed: false, detail: "no connection available")
                }
                if let retryAt = state.slots[free].retryAt, retryAt > now {
                    if let best {
                        state.slots[best.index].inFlight += count
                        return .use(state.slots[best.index].connection!)
                    }
                    if let failure = state.slots[free].lastFailure as? HTTP2ClientError, failure.isPermanent { throw failure }
                    return .sleep(until: retryAt, slot: free, failedConnects: state.slots[free].failedConnects)
                }
                let task = Task { try await self.connect(slot: free) }
                state.slots[free].connecting = task
                return .wait(task)
            }
            switch step {
            case .use(let connection):
                return connection
            case .wait(let task):
                try await Self.wait(for: task, deadline: deadline)
            case .sleep(let until, let index, let failedConnects):
                guard until < deadline else {
                    throw self.state.withLock { $0.slots[index].lastFailure }
                        ?? HTTP2ClientError(.deadlineExceeded, mayHaveBeenProcessed: false, detail: "the endpoint is backing off after failed connects")
                }
                do {
                    try await Task.sleep(until: until, clock: .continuous)
                } catch {
                    throw HTTP2ClientError(.cancelled, mayHaveBeenProcessed: false, detail: "cancelled while the endpoint was backing off")
                }
                // A connect that failed while this caller slept is its outcome: no second backoff.
                if let failure = self.state.withLock({ state -> (any Error)? in
                    state.slots[index].failedConnects != failedConnects ? state.slots[index].lastFailure : nil
                }) {
                    throw failure
                }
            }
        }
    }

    /// Waits for a connect that others may share, giving up at the caller's deadline or
    /// cancellation (the connect itself goes on for the other waiters). Its failure is rethrown.
    private static func wait(for task: Task<HTTP2Connection, any Error>, deadline: ContinuousClock.Instant) async throws {
        let outcome = LockedBox<(continuation: CheckedContinuation<Void, any Error>?, result: Result<Void, any Error>?)>((nil, nil))
        @Sendable func finish(_ result: Result<Void, any Error>) {
            let continuation = outcome.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard state.result == nil else { return nil }
                state.result = result
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(with: result)
        }
        let connected = Task {
            do {
                _ = try await task.value
                finish(.success(()))
            } catch {
                finish(.failure(error))
            }
        }
        let timer = Task {
            try await Task.sleep(until: deadline, clock: .continuous)
            finish(.failure(HTTP2ClientError(.deadlineExceeded, mayHaveBeenProcessed: false, detail: "still connecting at the deadline")))
        }
        defer {
            timer.cancel()
            connected.cancel()
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = outcome.withLock { state -> Result<Void, any Error>? in
                    if let result = state.result { return result }
                    state.continuation = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            finish(.failure(HTTP2ClientError(.cancelled, mayHaveBeenProcessed: false, detail: "cancelled while connecting")))
        }
    }

    private func connect(slot index: Int) async throws -> HTTP2Connection {
        do {
            let connection = try await HTTP2Connection.connect(self.configuration)
            let closed = self.state.withLock { state -> Bool in
                state.slots[index].connecting = nil
                if state.closed { return true }
                // Not healthy yet: its first answer resets the failures.
                state.slots[index].connection = connection
                state.slots[index].inFlight = 0
                state.slots[index].answered = false
                state.slots[index].retryAt = nil
                state.slots[index].lastUsed = .now
                return false
            }
            if closed {
                await connection.close()
                throw HTTP2ClientError(.shutdown, mayHaveBeenProcessed: false, detail: "the client is shut down")
            }
            self.connectionsGauge.record(self.openConnections)
            self.logger.debug("connected", metadata: ["apns.endpoint": "\(connection.endpoint)"])
            return connection
        } catch {
            let failures = self.state.withLock { state -> Int in
                state.slots[index].connecting = nil
                state.slots[index].lastFailure = error
                state.slots[index].failedConnects += 1
                Self.recordFailure(&state.slots[index])
                if (error as? HTTP2ClientError)?.isPermanent == true {
                    // It cannot heal by trying again now (name not found, certificate rejected):
                    // sends fail at once with it until the next connect, at least 10 s away.
                    state.slots[index].retryAt = max(state.slots[index].retryAt ?? .now, .now + Self.permanentFailureBackoff)
                }
                return state.slots[index].failures
            }
            self.logger.warning("connect failed", metadata: ["apns.error": "\(error)", "apns.failures": "\(failures)"])
            throw error
        }
    }

    private func retire(_ connection: HTTP2Connection) {
        let removed = self.state.withLock { state -> Bool in
            guard let index = state.slots.firstIndex(where: { $0.connection === connection }) else { return false }
            Self.vacate(&state.slots[index])
            return true
        }
        if removed {
            self.connectionsGauge.record(self.openConnections)
            self.logger.debug("connection retired", metadata: ["apns.connection_state": "\(connection.state)"])
            Task { await connection.close() }
        }
    }

    func shutdown(gracePeriod: Duration) async {
        let (connections, tasks) = self.state.withLock { state -> ([HTTP2Connection], [Task<HTTP2Connection, any Error>]) in
            state.closed = true
            let connections = state.slots.compactMap(\.connection)
            let tasks = state.slots.compactMap(\.connecting)
            for index in state.slots.indices {
                state.slots[index].connection = nil
                state.slots[index].inFlight = 0
            }
            return (connections, tasks)
        }
        for task in tasks { task.cancel() }
        await withTaskGroup(of: Void.self) { group in
            for connection in connections { group.addTask { await connection.shutdown(gracePeriod: gracePeriod) } }
        }
        self.connectionsGauge.record(0)
    }
}
