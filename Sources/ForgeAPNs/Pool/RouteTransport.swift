internal import ForgeAPNsCore
internal import ForgeHTTP2

/// What carries a credential's pushes: the client's own connection pool, known by its type from the
/// moment the client made it, or a transport given through ``APNSTransport`` (an in-process one in
/// tests, a caller's own). The pool is called directly, with its deadline on the I/O threads' clock
/// (no `ContinuousClock.Instant` made on the way, no existential's witness frame); the protocol is
/// only the seam for the others.
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

    nonisolated(nonsending) func send(
        _ request: APNSHTTPRequest, authorization: String?, deadline: MonotonicInstant
    ) async -> Result<APNSTransportResponse, APNSTransportError> {
        switch self {
        case .pool(let pool): return await pool.send(request, authorization: authorization, deadline: deadline)
        case .other(let transport): return await transport.send(request, authorization: authorization, deadline: deadline.continuousInstant)
        }
    }

    func send(
        _ requests: [APNSHTTPRequest], authorization: String?, deadline: MonotonicInstant
    ) async -> [Result<APNSTransportResponse, APNSTransportError>] {
        switch self {
        case .pool(let pool): return await pool.send(requests, authorization: authorization, deadline: deadline)
        case .other(let transport): return await transport.send(requests, authorization: authorization, deadline: deadline.continuousInstant)
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
