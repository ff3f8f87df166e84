internal import ForgeHTTP2
internal import ForgeSupport
internal import Logging
internal import Metrics

/// Connections to one endpoint, as ``PoolStateMachine`` decides: this type only runs its actions.
///
/// Requests take a connection with a free stream at once (one lock); when none has room they wait
/// in the machine's queue, and a connect, a released stream or a timer brings their turn. Connects,
/// closes and timers are child tasks of ``run()``, which the client's `run()` awaits: nothing the
/// pool starts outlives it.
final class ConnectionPool: Sendable {
    private struct State {
        var machine: PoolStateMachine
        var connections: [PoolStateMachine.ConnectionID: HTTP2Connection] = [:]
        var waiters: [PoolStateMachine.WaiterID: CheckedContinuation<(PoolStateMachine.ConnectionID, HTTP2Connection), any Error>] = [:]
    }

    /// Background work ``run()`` does as child tasks.
    private enum Job: Sendable {
        case connect(PoolStateMachine.ConnectionID)
        case close(HTTP2Connection)
        case timer(MonotonicInstant)
    }

    private let state: LockedBox<State>
    private let configuration: HTTP2ClientConfiguration
    private let logger: Logger
    private let connectionsGauge: Gauge
    private let jobs: AsyncStream<Job>
    private let jobsInput: AsyncStream<Job>.Continuation
    /// The authority of every request (the endpoint's host): what ``PreparedRequest``s for this
    /// pool are made with.
    let authority: String

    /// - Parameter dimensions: the `apns_pool_connections` gauge's, naming the credential (and the
    ///   channel endpoint) when a client has several pools.
    init(
        configuration: HTTP2ClientConfiguration, authority: String, limits: PoolStateMachine.Limits, logger: Logger,
        dimensions: [(String, String)] = []
    ) {
        self.connectionsGauge = Gauge(label: "apns_pool_connections", dimensions: dimensions)
        self.configuration = configuration
        self.authority = authority
        self.logger = logger
        self.state = LockedBox(State(machine: PoolStateMachine(limits: limits)))
        (self.jobs, self.jobsInput) = AsyncStream.makeStream(of: Job.self)
    }

    // MARK: What RouteTransport calls

    var capacity: APNSTransportCapacity {
        self.state.withLock { APNSTransportCapacity(window: $0.machine.window, batch: $0.machine.streamsPerConnection) }
    }

    /// Connections open and taking requests.
    var openConnections: Int { self.state.withLock { $0.machine.readyConnections } }

    // MARK: Sending with the I/O threads' clock

    /// HTTP/2 requests made by ``RouteTransport`` from prepared parts (``PreparedRequest``): the
    /// pool only finds them a connection.
    func send(_ requests: [HTTP2Request], deadline: MonotonicInstant) async -> [Result<APNSTransportResponse, APNSTransportError>] {
        let id: PoolStateMachine.ConnectionID
        let connection: HTTP2Connection
        do {
            if let ready = self.acquireIfFree(count: requests.count) {
                (id, connection) = ready
            } else {
                (id, connection) = try await self.acquire(count: requests.count, deadline: deadline)
            }
        } catch {
            return Array(repeating: .failure(Self.transportError(error)), count: requests.count)
        }
        let results = await connection.sendBatch(requests, monotonicDeadline: deadline)
        self.release(id, count: requests.count, on: connection)
        return results.map { result in
            result.map(APNSTransportResponse.init).mapError { Self.transportError($0) }
        }
    }

    /// One request (a `send`): as the batch, with no array on the way.
    nonisolated(nonsending) func send(
        _ request: consuming HTTP2Request, deadline: MonotonicInstant
    ) async -> Result<APNSTransportResponse, APNSTransportError> {
        let id: PoolStateMachine.ConnectionID
        let connection: HTTP2Connection
        if let ready = self.acquireIfFree(count: 1) {
            (id, connection) = ready
        } else {
            do {
                (id, connection) = try await self.acquire(count: 1, deadline: deadline)
            } catch {
                return .failure(Self.transportError(error))
            }
        }
        let result: Result<APNSTransportResponse, APNSTransportError>
        do {
            // Consumed: the connection moves it into its pending request, with no copy of its fields.
            result = .success(APNSTransportResponse(try await connection.send(request, monotonicDeadline: deadline)))
        } catch {
            result = .failure(Self.transportError(error))
        }
        self.release(id, count: 1, on: connection)
        return result
    }

    /// Gives back `count` streams of `connection` (`id`), and does what the machine says then.
    ///
    /// Whether the connection has answered is the connection's to know (`hasAnswered`, written on
    /// its I/O thread as the first response arrives, so before it can report its close): the
    /// machine's copy is fed from it here and at the close, never from a request's own result, so
    /// the two cannot disagree. Not inlined into the async senders: one frame fewer for them.
    @inline(never)
    private func release(_ id: PoolStateMachine.ConnectionID, count: Int, on connection: HTTP2Connection) {
        let answered = connection.hasAnswered
        self.perform(self.state.withLock { $0.machine.release(id, count: count, answered: answered, now: .now) })
    }

    /// One connection ready, opening one if none is open: the machine's own connect and wait, as for a
    /// request (its backoff and failures included), holding a stream only until the connection is there.
    func connect(deadline: MonotonicInstant) async -> APNSTransportError? {
        guard self.openConnections == 0 else { return nil }
        do {
            let (id, connection) = try await self.acquire(count: 1, deadline: deadline)
            self.release(id, count: 1, on: connection)
            return nil
        } catch {
            return Self.transportError(error)
        }
    }

    /// The one place an HTTP/2 failure becomes an APNs transport error. A connection that ended
    /// before the server spoke HTTP/2 fails its requests as a failed connect (`connectFailed`: the
    /// send's connect budget); one that spoke and then ended fails those that never left as not
    /// processed (their replay budget) and those that left as lost (their attempts).
    static func transportError(_ error: any Error) -> APNSTransportError {
        guard let error = error as? HTTP2ClientError else {
            return APNSTransportError(.lost, detail: "\(error)")
        }
        let detail = error.description
        switch error.code {
        case .deadlineExceeded: return APNSTransportError(.deadlineExceeded, mayHaveBeenProcessed: error.mayHaveBeenProcessed, detail: detail)
        case .cancelled: return APNSTransportError(.cancelled, mayHaveBeenProcessed: error.mayHaveBeenProcessed, detail: detail)
        case .shutdown: return APNSTransportError(.shutdown, mayHaveBeenProcessed: error.mayHaveBeenProcessed, detail: detail)
        case .invalidRequest: return APNSTransportError(.invalidRequest, detail: detail)
        case _ where error.mayHaveBeenProcessed: return APNSTransportError(.lost, detail: detail)
        case .connectFailed, .tlsFailed, .alpnMismatch: return APNSTransportError(.unreachable, isPermanent: error.isPermanent, detail: detail)
        default: return APNSTransportError(.notProcessed, detail: detail)
        }
    }

    // MARK: Acquiring a connection

    /// The fast path: a connection with room for `count` requests, if one has it now (one lock, no
    /// suspension, no async frame); counted against it until released. A task on a connection's I/O
    /// thread (the client's executor) takes that connection when it has room: no thread hop.
    private func acquireIfFree(count: Int) -> (PoolStateMachine.ConnectionID, HTTP2Connection)? {
        self.state.withLock { Self.acquireIfFree(count: count, in: &$0) }
    }

    /// ``acquireIfFree(count:)`` inside a critical section the caller holds.
    private static func acquireIfFree(count: Int, in state: inout State) -> (PoolStateMachine.ConnectionID, HTTP2Connection)? {
        state.machine.acquireIfFree(count: count, preferring: Self.connectionOnCurrentThread(state.connections)).map { ($0, state.connections[$0]!) }
    }

    /// The slow path, after ``acquireIfFree(count:)`` found no room: a connection with room for
    /// `count` requests once the machine dispatches this request (a connect, a released stream),
    /// counted against it until released. (The machine still takes a stream freed meanwhile.)
    private func acquire(count: Int, deadline: MonotonicInstant) async throws -> (PoolStateMachine.ConnectionID, HTTP2Connection) {
        let waiterBox = LockedBox<PoolStateMachine.WaiterID?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(PoolStateMachine.ConnectionID, HTTP2Connection), any Error>) in
                var resumeWith: Result<(PoolStateMachine.ConnectionID, HTTP2Connection), any Error>?
                let actions = self.state.withLock { state -> PoolStateMachine.Actions in
                    if Task.isCancelled {
                        resumeWith = .failure(HTTP2ClientError(.cancelled, mayHaveBeenProcessed: false, detail: "cancelled before sending"))
                        return PoolStateMachine.Actions()
                    }
                    let (acquisition, actions) = state.machine.acquire(count: count, deadline: deadline, now: .now)
                    switch acquisition {
                    case .use(let id):
                        resumeWith = .success((id, state.connections[id]!))
                    case .wait(let waiter):
                        state.waiters[waiter] = continuation
                        waiterBox.withLock { $0 = waiter }
                    case .fail(let failure):
                        resumeWith = .failure(Self.error(for: failure))
                    }
                    return actions
                }
                if let resumeWith { continuation.resume(with: resumeWith) }
                self.perform(actions)
            }
        } onCancel: {
            // Under the pool's lock, as the registration: either the waiter is registered and leaves
            // the queue here, or it is not yet and its registration sees the cancellation.
            self.perform(self.state.withLock { state in
                waiterBox.withLock { $0 }.map { state.machine.cancel($0) } ?? PoolStateMachine.Actions()
            })
        }
    }

    /// The connection whose I/O thread the caller runs on, if any: off the I/O threads (tasks on
    /// the global executor) one thread-local read, without visiting (and retaining) each connection.
    private static func connectionOnCurrentThread(
        _ connections: [PoolStateMachine.ConnectionID: HTTP2Connection]
    ) -> PoolStateMachine.ConnectionID? {
        guard HTTP2Connection.callerIsOnAConnectionThread else { return nil }
        return connections.first { $0.value.ownsCurrentThread }?.key
    }

    // MARK: The client's executor

    /// Queues `job` to run as `executor` on the I/O thread of the connection whose turn it is
    /// (`turn` modulo the open connections); `false` when none is open.
    func enqueue(_ job: UnownedJob, as executor: UnownedTaskExecutor, turn: Int) -> Bool {
        let connection = self.state.withLock { state -> HTTP2Connection? in
            let open = state.connections.values
            guard !open.isEmpty else { return nil }
            return open[open.index(open.startIndex, offsetBy: turn % open.count)]
        }
        return connection?.enqueue(job, as: executor) ?? false
    }

    private static func error(for failure: PoolStateMachine.Failure) -> HTTP2ClientError {
        switch failure {
        case .deadlineExceeded(let connecting):
            return HTTP2ClientError(.deadlineExceeded, mayHaveBeenProcessed: false,
                                    detail: connecting ? "still connecting at the deadline" : "no free stream before the deadline")
        case .shutdown:
            return HTTP2ClientError(.shutdown, mayHaveBeenProcessed: false, detail: "the client is shut down")
        case .connectFailed(let error):
            return error
        case .unreachable(let failures, let silence, let last):
            // Permanent for this push: nothing is tried before the backoff ends, so waiting on it
            // would only hold the push while the endpoint stays down.
            let seconds = (silence / .milliseconds(100)).rounded(.down) / 10
            return HTTP2ClientError(
                [.tlsFailed, .alpnMismatch].contains(last.code) ? last.code : .connectFailed, mayHaveBeenProcessed: false,
                detail: "unreachable: \(failures) connections in a row failed before any answer, over \(seconds) s (the last: \(last.detail))",
                permanent: true
            )
        case .cancelled:
            return HTTP2ClientError(.cancelled, mayHaveBeenProcessed: false, detail: "cancelled while waiting for a connection")
        }
    }

    // MARK: Running actions

    /// Runs the machine's actions: resumes waiters, hands connects, closes and timers to ``run()``.
    /// Called after the lock is released.
    private func perform(_ actions: PoolStateMachine.Actions) {
        guard !actions.isEmpty else { return }
        var resumes: [(CheckedContinuation<(PoolStateMachine.ConnectionID, HTTP2Connection), any Error>, Result<(PoolStateMachine.ConnectionID, HTTP2Connection), any Error>)] = []
        var closing: [HTTP2Connection] = []
        self.state.withLock { state in
            for (waiter, id) in actions.dispatch {
                guard let continuation = state.waiters.removeValue(forKey: waiter) else { continue }
                if let connection = state.connections[id] {
                    resumes.append((continuation, .success((id, connection))))
                } else {
                    // It closed between the decision and now: nothing left, so the send replays it.
                    resumes.append((continuation, .failure(HTTP2ClientError(
                        .connectionClosed, mayHaveBeenProcessed: false, detail: "the connection closed before the request left"
                    ))))
                }
            }
            for (waiter, failure) in actions.fail {
                guard let continuation = state.waiters.removeValue(forKey: waiter) else { continue }
                resumes.append((continuation, .failure(Self.error(for: failure))))
            }
            for id in actions.close {
                if let connection = state.connections.removeValue(forKey: id) { closing.append(connection) }
            }
        }
        for (continuation, result) in resumes { continuation.resume(with: result) }
        if let id = actions.connect { self.jobsInput.yield(.connect(id)) }
        for connection in closing { self.jobsInput.yield(.close(connection)) }
        if let timer = actions.timer { self.jobsInput.yield(.timer(timer)) }
        if !closing.isEmpty || actions.connect != nil { self.connectionsGauge.record(self.openConnections) }
    }

    // MARK: Background work

    /// Runs connects, closes and timers as child tasks until ``shutdown(gracePeriod:)`` ends it.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await job in self.jobs {
                switch job {
                case .connect(let id):
                    group.addTask { await self.connect(id) }
                case .close(let connection):
                    group.addTask { await connection.close() }
                case .timer(let instant):
                    group.addTask {
                        // Cancelled at shutdown: a timer then has nothing left to do.
                        guard (try? await MonotonicInstant.sleep(for: MonotonicInstant.now.duration(to: instant))) != nil else { return }
                        self.perform(self.state.withLock { $0.machine.tick(instant, now: .now) })
                    }
                }
            }
            // Shut down: timers have nothing left to do; connects finish and close what they made.
            group.cancelAll()
        }
    }

    private func connect(_ id: PoolStateMachine.ConnectionID) async {
        do {
            let connection = try await HTTP2Connection.connect(self.configuration) { [weak self] event in
                self?.handle(event, on: id)
            }
            let actions = self.state.withLock { state -> PoolStateMachine.Actions in
                // Registered before the machine hears of it: a dispatch may name it at once.
                state.connections[id] = connection
                let actions = state.machine.connected(id, maximumStreams: Int(connection.peerMaxConcurrentStreams), now: .now)
                if state.machine.connection(id) == nil, !actions.close.contains(id) {
                    // It closed before this point: the close event already did the bookkeeping.
                    state.connections[id] = nil
                }
                return actions
            }
            self.logger.debug("connected", metadata: ["apns.endpoint": "\(connection.endpoint)", "apns.connection": "\(id.raw)"])
            self.perform(actions)
            if actions.close.contains(id) { await connection.close() }
        } catch {
            let failure = error as? HTTP2ClientError ?? HTTP2ClientError(.connectFailed, mayHaveBeenProcessed: false, detail: "\(error)")
            let (actions, failures) = self.state.withLock { state in
                (state.machine.connectFailed(id, failure, now: .now, random: .random(in: 0...1)), state.machine.failures)
            }
            self.logger.warning("connect failed", metadata: ["apns.error": "\(failure)", "apns.failures": "\(failures)"])
            self.perform(actions)
        }
    }

    /// A connection's event, on its I/O thread.
    private func handle(_ event: HTTP2ConnectionEvent, on id: PoolStateMachine.ConnectionID) {
        let actions = self.state.withLock { state -> PoolStateMachine.Actions in
            switch event {
            case .maximumConcurrentStreams(let streams):
                return state.machine.settingsChanged(id, maximumStreams: streams, now: .now)
            case .goAway:
                return state.machine.goAway(id, now: .now)
            case .closed(let error):
                // The connection's own record of an answer (the owner of the fact, see
                // `release(_:count:on:)`), written on its I/O thread before this event: an answer
                // whose request is not released yet counts.
                let answered = state.connections.removeValue(forKey: id)?.hasAnswered ?? false
                return state.machine.closed(id, goAway: error.code == .goingAway, answered: answered, error: error, now: .now,
                                            random: .random(in: 0...1))
            }
        }
        if case .closed(let error) = event {
            self.logger.debug("connection closed", metadata: ["apns.connection": "\(id.raw)", "apns.error": "\(error)"])
            self.connectionsGauge.record(self.openConnections)
        }
        self.perform(actions)
    }

    func shutdown(gracePeriod: Duration) async {
        let (actions, connections) = self.state.withLock { state -> (PoolStateMachine.Actions, [HTTP2Connection]) in
            let actions = state.machine.shutDown()
            let connections = actions.close.compactMap { state.connections.removeValue(forKey: $0) }
            return (actions, connections)
        }
        var failing = actions
        failing.close = []
        self.perform(failing)
        await withDiscardingTaskGroup { group in
            for connection in connections { group.addTask { await connection.shutdown(gracePeriod: gracePeriod) } }
        }
        self.jobsInput.finish()
        self.connectionsGauge.record(0)
    }
}
