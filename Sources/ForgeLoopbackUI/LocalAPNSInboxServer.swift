internal import AsyncAlgorithms
internal import ForgeLoopback
internal import ForgeSupport
internal import Hummingbird
internal import Logging
internal import NIOCore
internal import ServiceLifecycle

/// The local server's inbox on an HTTP/1.1 port (Hummingbird, outside the push path): the JSON API
/// (``LocalAPNSInboxAPI``), the live event stream `GET /api/v1/events` (Server-Sent Events), the
/// page at `GET /`, and optionally `GET /metrics`.
///
/// ``run(onListening:)`` serves until its task is cancelled or ``LocalAPNSInbox/close()`` is
/// followed by cancellation; event streams end when the inbox closes.
public struct LocalAPNSInboxServer: Sendable {
    /// Where to listen: an IP address (127.0.0.1 by default) and a port (0 picks one).
    public var host: String
    public var port: Int
    /// The API it serves.
    public let api: LocalAPNSInboxAPI
    /// `GET /metrics`: Prometheus text, when given.
    public var metrics: (@Sendable () -> [UInt8])?
    /// How many events an event-stream client may fall behind before it is disconnected.
    public var eventBuffer: Int

    /// Creates a server for `api` on `host:port`.
    public init(
        api: LocalAPNSInboxAPI, host: String = "127.0.0.1", port: Int = 0, metrics: (@Sendable () -> [UInt8])? = nil,
        eventBuffer: Int = 1_024
    ) {
        self.api = api
        self.host = host
        self.port = port
        self.metrics = metrics
        self.eventBuffer = eventBuffer
    }

    /// The page at `/`: one self-contained HTML document.
    public static var page: [UInt8] { PackageResources.inbox_html }

    /// Serves until the task is cancelled. `onListening` is called once with the bound port.
    /// - Throws: when the address cannot be bound (the port is taken, the host is not local).
    public func run(onListening: @escaping @Sendable (Int) -> Void) async throws {
        let api = self.api
        let metrics = self.metrics
        let eventBuffer = self.eventBuffer
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            try await Self.respond(to: request, api: api, metrics: metrics, eventBuffer: eventBuffer)
        }
        var logger = Logger(label: "forgepush.inbox")
        logger.logLevel = .critical
        let application = Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(self.host, port: self.port), serverName: "apnsctl"),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        try await application.run()
    }

    /// Runs the server as a child task of `group` and returns once it listens, with its port.
    /// - Throws: the error that kept it from listening (a taken port, an address that is not local).
    public func start(in group: inout ThrowingDiscardingTaskGroup<any Error>) async throws -> Int {
        let (ports, listening) = AsyncStream.makeStream(of: Result<Int, any Error>.self)
        group.addTask {
            do {
                try await self.run { port in listening.yield(.success(port)) }
            } catch {
                listening.yield(.failure(error))
            }
            listening.finish()
        }
        var iterator = ports.makeAsyncIterator()
        switch await iterator.next() {
        case .success(let port): return port
        case .failure(let error): throw error
        case nil: throw CancellationError()
        }
    }

    private static func respond(
        to request: Request, api: LocalAPNSInboxAPI, metrics: (@Sendable () -> [UInt8])?, eventBuffer: Int
    ) async throws -> Response {
        let path = request.uri.path
        let method = request.method.rawValue
        switch path {
        case "/", "/index.html":
            guard method == "GET" || method == "HEAD" else { return Self.plain(405, "only GET / is served here") }
            return Self.response(200, "text/html; charset=utf-8", Self.page, extra: [.cacheControl: "no-store"])
        case "/readyz":
            // Serving means ready: the server judges from its first request, and the inbox keeps it.
            guard method == "GET" || method == "HEAD" else { return Self.plain(405, "only GET /readyz is served here") }
            var writer = JSONObjectWriter()
            writer.raw("ready", Array("true".utf8))
            writer.field("entries", api.inbox.count)
            writer.field("dropped", api.inbox.dropped)
            return Self.response(200, "application/json; charset=utf-8", writer.finish(), extra: [.cacheControl: "no-store"])
        case "/metrics":
            guard let metrics else { return Self.json(LocalAPNSInboxAPI.Response.notFound(path)) }
            return Self.response(200, "text/plain; version=0.0.4; charset=utf-8", metrics())
        case "/api/v1/events":
            guard method == "GET" else { return Self.json(.init(status: 405, contentType: "application/json; charset=utf-8", body: Array(#"{"error":"only GET /api/v1/events is served"}"#.utf8))) }
            return Self.events(api: api, buffer: eventBuffer)
        default:
            // Only the POST routes (devices, device actions) read a body: a small JSON object.
            let body = method == "POST" ? Array(try await request.body.collect(upTo: 64 * 1024).readableBytesView) : []
            return Self.json(await api.respond(method: method, path: path, query: request.uri.query, body: body))
        }
    }

    /// `event: push` per judged request, `event: device` when a phone changed, `event: clear`.
    private static func events(api: LocalAPNSInboxAPI, buffer: Int) -> Response {
        let pushes = api.inbox.events(buffer: buffer).map { event -> [UInt8] in
            switch event {
            case .push(let entry): return Array("event: push\ndata: ".utf8) + entry.json + Array("\n\n".utf8)
            case .cleared: return Array("event: clear\ndata: {}\n\n".utf8)
            }
        }
        let devices = (api.phones?.updates(buffer: buffer) ?? AsyncStream { $0.finish() }).map { token -> [UInt8] in
            var writer = JSONObjectWriter()
            writer.field("token", token)
            return Array("event: device\ndata: ".utf8) + writer.finish() + Array("\n\n".utf8)
        }
        let body = ResponseBody { writer in
            try await writer.write(ByteBuffer(string: "retry: 1000\n: connected\n\n"))
            for await chunk in merge(pushes, devices) {
                try await writer.write(ByteBuffer(bytes: chunk))
            }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no"],
            body: body
        )
    }

    private static func json(_ response: LocalAPNSInboxAPI.Response) -> Response {
        Self.response(response.status, response.contentType, response.body, extra: [.cacheControl: "no-store"])
    }

    private static func plain(_ status: Int, _ text: String) -> Response {
        Self.json(LocalAPNSInboxAPI.Response.error(status, text))
    }

    private static func response(_ status: Int, _ type: String, _ body: [UInt8], extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [.contentType: type]
        headers.append(contentsOf: extra)
        return Response(status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

extension LocalAPNSInboxAPI.Response {
    static func notFound(_ path: String) -> Self {
        .error(404, "no such resource: \(path) (the API is under /api/v1/: pushes, wait, devices, events)")
    }
}
