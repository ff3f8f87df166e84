internal import ForgeAPNsCore
internal import ForgeHTTP2

/// What carries a credential's pushes: the client's own connection pool, known by its type from the
/// moment the client made it, or a transport given through ``APNSTransport`` (an in-process one in
/// tests, a caller's own). The pool is called directly, with its deadline on the I/O threads' clock
/// (no `ContinuousClock.Instant` made on the way, no existential's witness frame); the protocol is
/// only the seam for the others. Requests cross it prepared (``PreparedRequest``): for the pool,
/// as HTTP/2 requests, so the pool keeps nothing of the notifications they were made from.
enum RouteTransport: Sendable {
    case pool(ConnectionPool)
    case other(any APNSTransport)

    /// Whether `self` and `other` are the same transport (so it is run and shut down once).
    func isSame(as other: RouteTransport) -> Bool {
        switch (self, other) {
        case (.pool(let a), .pool(let b)): return a === b
        case (.other(let a), .other(let b)): return a as AnyObject === b as AnyObject
        default: return false
        }
    }

    var capacity: APNSTransportCapacity {
        switch self {
        case .pool(let pool): return pool.capacity
        case .other(let transport): return transport.capacity
        }
    }

    /// Open connections (0 for a transport other than the client's pool).
    var openConnections: Int {
        switch self {
        case .pool(let pool): return pool.openConnections
        case .other: return 0
        }
    }

    /// The form `request`'s notification is sent in with `authorization`, made once for every
    /// request that shares its parts (see ``PreparedRequest``).
    func prepare(_ request: APNSHTTPRequest, authorization: String?) -> PreparedRequest {
        switch self {
        case .pool(let pool):
            return PreparedRequest(
                source: request.shared, authorization: authorization,
                form: .http2(PreparedRequest.http2Parts(request.shared, authorization: authorization, authority: pool.authority))
            )
        case .other:
            return PreparedRequest(source: request.shared, authorization: authorization, form: .other)
        }
    }

    /// Sends `request` in its notification's `prepared` form.
    ///
    /// Switches on the transport, then on the form, not on the tuple `(self, prepared.form)`: a
    /// tuple of copies made on every push, which cost retains and releases (counted in
    /// docs/benchmark-history.md, 2026-11-29).
    nonisolated(nonsending) func send(
        _ request: APNSHTTPRequest, prepared: PreparedRequest, deadline: MonotonicInstant
    ) async -> Result<APNSTransportResponse, APNSTransportError> {
        switch self {
        case .pool(let pool):
            guard case .http2(let parts) = prepared.form else {
                preconditionFailure("a request prepared for another transport")
            }
            switch parts {
            case .success(let parts):
                return await pool.send(PreparedRequest.http2Request(request, parts: parts), deadline: deadline)
            case .failure(let error):
                return .failure(ConnectionPool.transportError(error))
            }
        case .other(let transport):
            return await transport.send(request, authorization: prepared.authorization, deadline: deadline.continuousInstant)
        }
    }

    /// Sends `requests` together, each in the form `prepared` holds at its index.
    func send(
        _ requests: [APNSHTTPRequest], prepared: [PreparedRequest], deadline: MonotonicInstant
    ) async -> [Result<APNSTransportResponse, APNSTransportError>] {
        switch self {
        case .pool(let pool):
            guard requests.count > 1 else {
                // A batch of one (a bulk's last token, a retry): the single path, then an array.
                return requests.isEmpty ? [] : [await self.send(requests[0], prepared: prepared[0], deadline: deadline)]
            }
            var http2: [HTTP2Request] = []
            http2.reserveCapacity(requests.count)
            for index in requests.indices {
                guard case .http2(let parts) = prepared[index].form else { preconditionFailure("a request prepared for another transport") }
                switch parts {
                case .success(let parts):
                    http2.append(PreparedRequest.http2Request(requests[index], parts: parts))
                case .failure(let error):
                    // One bad header list fails the batch before anything is sent, as one request would.
                    return Array(repeating: .failure(ConnectionPool.transportError(error)), count: requests.count)
                }
            }
            return await pool.send(http2, deadline: deadline)
        case .other(let transport):
            // Requests of one batch share one provider token: it is read once per round.
            return await transport.send(requests, authorization: prepared.first?.authorization, deadline: deadline.continuousInstant)
        }
    }

    func connect(deadline: MonotonicInstant) async -> APNSTransportError? {
        switch self {
        case .pool(let pool): return await pool.connect(deadline: deadline)
        case .other(let transport): return await transport.connect(deadline: deadline.continuousInstant)
        }
    }

    func run() async {
        switch self {
        case .pool(let pool): await pool.run()
        case .other(let transport): await transport.run()
        }
    }

    func shutdown(gracePeriod: Duration) async {
        switch self {
        case .pool(let pool): await pool.shutdown(gracePeriod: gracePeriod)
        case .other(let transport): await transport.shutdown(gracePeriod: gracePeriod)
        }
    }
}
