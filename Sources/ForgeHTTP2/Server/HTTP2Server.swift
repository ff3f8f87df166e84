import Foundation
internal import ForgeSupport

/// How a server listens.
package struct HTTP2ServerConfiguration: Sendable {
    /// The address to listen on: `127.0.0.1` or `::1` (any IP literal).
    package var host: String
    /// The port; 0 lets the system choose (read it back from ``HTTP2Server/port``).
    package var port: Int
    /// TLS settings; `nil` serves cleartext HTTP/2 with prior knowledge (h2c).
    package var tls: HTTP2ServerTLSConfiguration?
    /// The settings each connection announces first (`SETTINGS_MAX_CONCURRENT_STREAMS` above all).
    package var settings: HTTP2Settings
    /// Whether PINGs are answered (turn off to test a client's dead-peer detection).
    package var answersPings: Bool
    /// How long a new connection may take, from accept, to finish the TLS handshake and send the
    /// client preface (its magic and first SETTINGS); a connection that has not is closed. Default 10 s.
    package var handshakeTimeout: Duration
    /// How long a request may take to arrive complete, from its HEADERS to the END_STREAM flag (on
    /// the headers or on its last DATA); a stream still incomplete then is reset with
    /// `REFUSED_STREAM`, and the connection goes on. Default 10 s; `nil` waits for ever.
    ///
    /// `REFUSED_STREAM` rather than a `408` response: the request was never handed to the handler,
    /// and this is the one HTTP/2 code that tells the client so (RFC 9113 §8.7), so it knows a retry
    /// cannot deliver twice; APNs clients know no `408`, and a response sent while the client is
    /// still sending would need a reset after it anyway. The timer pauses while the server is told
    /// to stop reading (``HTTP2ServerConnection/setReading(_:)``): the client is not the slow side then.
    package var requestTimeout: Duration?
    /// How long each response is held before it is sent, as if the server were that far away:
    /// APNs is 20-50 ms from most providers, loopback is not. Default `.zero`: sent at once.
    ///
    /// The connection's I/O thread holds each response from when it was made (returned by the
    /// handler, or posted through ``HTTP2Responder/respond(_:)``) in a queue, and wakes up for the
    /// first one due: reading, other streams and PINGs go on meanwhile, and thousands of streams
    /// wait at the same time. RST_STREAM, GOAWAY and SETTINGS are not held. A stream the client
    /// resets while its response is held is skipped; responses still held when the connection
    /// closes (or the server shuts down) are dropped.
    package var responseDelay: Duration
    /// Told when a client speaks the other protocol than the port: cleartext (HTTP/2 with prior
    /// knowledge, or HTTP/1.x) to a TLS port, or TLS to a cleartext port, with the peer's address
    /// and a sentence saying which; the connection is then closed. Called on the connection's
    /// thread; keep it short. `nil` (the default) does not look: such a connection fails in the
    /// TLS handshake or the preface, unexplained.
    package var onWrongProtocol: (@Sendable (_ peerAddress: String, _ problem: String) -> Void)?

    /// Creates a configuration: loopback, a free port, h2c, 1000 streams, 10 s for the handshake
    /// and preface, 10 s for each request to arrive, responses sent at once.
    package init(
        host: String = "127.0.0.1",
        port: Int = 0,
        tls: HTTP2ServerTLSConfiguration? = nil,
        settings: HTTP2Settings = HTTP2Settings(maxConcurrentStreams: 1000),
        answersPings: Bool = true,
        handshakeTimeout: Duration = .seconds(10),
        requestTimeout: Duration? = .seconds(10),
        responseDelay: Duration = .zero,
        onWrongProtocol: (@Sendable (_ peerAddress: String, _ problem: String) -> Void)? = nil
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.settings = settings
        self.answersPings = answersPings
        self.handshakeTimeout = handshakeTimeout
        self.requestTimeout = requestTimeout
        self.responseDelay = responseDelay
        self.onWrongProtocol = onWrongProtocol
    }
}

/// Answers a request later, from any thread: for handlers that need to wait for something.
package struct HTTP2Responder: Sendable {
    /// The connection the request came on (to change its settings or end it).
    package let connection: HTTP2ServerConnection
    /// The stream of the request.
    package let streamID: Int32

    /// Sends the response (ignored if the stream is gone), after
    /// ``HTTP2ServerConfiguration/responseDelay`` like every response.
    package func respond(_ response: HTTP2Response) {
        self.connection.post { $0.responses.append((self.streamID, response)) }
    }

    /// Sends the response `delay` from now, plus ``HTTP2ServerConfiguration/responseDelay`` like
    /// every response (ignored if the stream is gone by then): a server slow to answer one request.
    /// The connection's I/O thread holds it; no task or thread waits for it.
    package func respond(_ response: HTTP2Response, after delay: Duration) {
        let due = ServerLoop.adding(ServerLoop.nanoseconds(delay), to: monotonicNanoseconds())
        self.connection.post { $0.delayedResponses.append((due, self.streamID, response)) }
    }

    /// Resets the stream instead of answering.
    package func reset(_ errorCode: HTTP2ErrorCode) {
        self.connection.post { $0.commands.append(.reset(streamID: self.streamID, errorCode: errorCode)) }
    }
}

/// Handles one request on the connection's I/O thread: return the response now, or `nil` and
/// answer later through the responder. Keep it short; it runs between frames.
package typealias HTTP2RequestHandler = @Sendable (HTTP2ServerRequest, HTTP2Responder) -> HTTP2Response?

/// An HTTP/2 server over nghttp2 and OpenSSL: loopback tests, the local APNs server, benchmarks.
///
/// One thread accepts; each connection has its own I/O thread (streams have none: a stream whose
/// request stalls costs its buffers only, until ``HTTP2ServerConfiguration/requestTimeout`` resets
/// it). A connection that never completes its handshake and preface is closed after
/// ``HTTP2ServerConfiguration/handshakeTimeout``. ``connections`` yields every
/// accepted connection, whose handle injects faults (GOAWAY, resets, settings, abrupt close,
/// stopped reading, unanswered PINGs).
package final class HTTP2Server: Sendable {
    /// The port the server listens on.
    package let port: Int
    /// The configuration it started with.
    package let configuration: HTTP2ServerConfiguration
    /// Each accepted connection, as it is accepted.
    package let connections: AsyncStream<HTTP2ServerConnection>
    private let shared: LockedBox<Shared>
    private let waker: WakePipe

    struct Shared {
        var stopping = false
        var goAwayDebugData: [UInt8] = []
        var open: [UInt64: HTTP2ServerConnection] = [:]
        var settings: HTTP2Settings
        var stopWaiters: [() -> Void] = []
        var acceptLoopDone = false
        var accepted = 0
    }

    private init(port: Int, configuration: HTTP2ServerConfiguration, connections: AsyncStream<HTTP2ServerConnection>,
                 shared: LockedBox<Shared>, waker: WakePipe) {
        self.port = port
        self.configuration = configuration
        self.connections = connections
        self.shared = shared
        self.waker = waker
    }

    /// Binds, then accepts on a thread of its own until ``shutdown()``.
    /// - Throws: a description of what failed: binding, or loading the certificate or key.
    package static func start(_ configuration: HTTP2ServerConfiguration, handler: @escaping HTTP2RequestHandler) throws -> HTTP2Server {
        let context = try configuration.tls.map { try TLSContext.server($0) }
        let (listener, port) = try Socket.listen(host: configuration.host, port: configuration.port)
        let waker = try WakePipe()
        let shared = LockedBox(Shared(settings: configuration.settings))
        let (stream, continuation) = AsyncStream.makeStream(of: HTTP2ServerConnection.self)
        let server = HTTP2Server(port: port, configuration: configuration, connections: stream, shared: shared, waker: waker)
        let acceptor = Acceptor(
            listener: listener, context: context, configuration: configuration, handler: handler, shared: shared,
            waker: waker, yield: { continuation.yield($0) }, finish: { continuation.finish() }
        )
        startIOThread(named: "forge-h2a:\(port)") { acceptor.run() }
        return server
    }

    /// How many connections the server has accepted so far, counted as each is accepted (before
    /// ``connections`` yields it and before it reads its first request).
    package var acceptedConnections: Int { self.shared.withLock { $0.accepted } }

    /// Announces new settings on every open connection and uses them for new ones.
    package func updateSettings(_ settings: HTTP2Settings) {
        let open = self.shared.withLock { shared -> [HTTP2ServerConnection] in
            shared.settings = settings
            return Array(shared.open.values)
        }
        for connection in open { connection.updateSettings(settings) }
    }

    /// Stops accepting and closes every connection (GOAWAY first, carrying `goAwayDebugData`).
    /// Returns when all are closed.
    package func shutdown(goAwayDebugData: [UInt8] = []) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let stopped = self.shared.withLock { shared -> Bool in
                // Already stopped (a second call): nothing will run the waiters again.
                if shared.acceptLoopDone, shared.open.isEmpty { return true }
                if !shared.stopping { shared.goAwayDebugData = goAwayDebugData }
                shared.stopping = true
                shared.stopWaiters.append { continuation.resume() }
                return false
            }
            if stopped { continuation.resume() } else { self.waker.wake() }
        }
    }
}

/// The accept thread.
private final class Acceptor: @unchecked Sendable {
    // @unchecked Sendable: handed once to the accept thread, which alone uses it.
    let listener: Socket
    let context: TLSContext?
    let configuration: HTTP2ServerConfiguration
    let handler: HTTP2RequestHandler
    let shared: LockedBox<HTTP2Server.Shared>
    let waker: WakePipe
    let yield: (HTTP2ServerConnection) -> Void
    let finish: () -> Void
    var nextID: UInt64 = 0

    init(listener: Socket, context: TLSContext?, configuration: HTTP2ServerConfiguration, handler: @escaping HTTP2RequestHandler,
         shared: LockedBox<HTTP2Server.Shared>, waker: WakePipe, yield: @escaping (HTTP2ServerConnection) -> Void,
         finish: @escaping () -> Void) {
        self.listener = listener
        self.context = context
        self.configuration = configuration
        self.handler = handler
        self.shared = shared
        self.waker = waker
        self.yield = yield
        self.finish = finish
    }

    func run() {
        acceptConnections(on: self.listener, waker: self.waker, until: { self.shared.withLock { $0.stopping } }) { socket in
            self.nextID += 1
            let settings = self.shared.withLock { $0.settings }
            guard let connection = try? HTTP2ServerConnection(id: self.nextID, peerAddress: socket.peerAddress, server: self.shared)
            else { return }  // dropping `socket` closes it: the client sees the connection refused
            let loop = ServerLoop(
                connection: connection, socket: socket, context: self.context, configuration: self.configuration,
                settings: settings, handler: self.handler
            )
            self.shared.withLock { shared in
                shared.open[connection.id] = connection
                shared.accepted += 1
            }
            self.yield(connection)
            startIOThread(named: "forge-h2s#\(connection.id % 100_000)") { loop.run() }
        }
        self.finish()
        // Close every connection, then let shutdown() return when the last one has ended.
        let (open, debugData) = self.shared.withLock { shared -> ([HTTP2ServerConnection], [UInt8]) in
            shared.acceptLoopDone = true
            return (Array(shared.open.values), shared.goAwayDebugData)
        }
        for connection in open { connection.post { $0.commands.append(.shutdown(debugData: debugData)) } }
        HTTP2ServerConnection.resumeStopWaitersIfDone(self.shared)
    }
}
