public import Hummingbird
internal import Logging
internal import NIOCore

extension LiveActivityGateway {
    /// The gateway as a Hummingbird application on `host:port` (0 picks a free port): a
    /// swift-service-lifecycle `Service`, run with `run()` or in a `ServiceGroup`, which stops
    /// gracefully on its shutdown signal. Every path is answered: one outside the routes with a JSON 404.
    /// - Parameters:
    ///   - host: the address to listen on (127.0.0.1 by default).
    ///   - port: the port; 0 lets the system choose.
    ///   - onServerRunning: called once with the port bound, as the server starts to accept.
    /// - Returns: the application; nothing listens until it runs.
    public func makeApplication(
        host: String = "127.0.0.1", port: Int = 0, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            try await self.response(to: request)
        }
        var logger = Logger(label: "forge.gateway.http")
        logger.logLevel = .critical
        return Application(
            responder: responder,
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "ForgeLiveActivitiesGateway"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// Adds the gateway's routes to `router`, to serve them beside routes of your own. A path outside
    /// them is your router's to answer.
    /// - Parameter router: the router to add the routes to.
    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        for route in Self.routes {
            let path = RouterPath("/" + route.pattern.map { $0.hasPrefix("{") ? ":\($0.dropFirst().dropLast())" : $0 }.joined(separator: "/"))
            router.on(path, method: HTTPRequest.Method(route.method)!) { request, _ in
                try await self.response(to: request)
            }
        }
    }

    /// A Hummingbird request answered by ``respond(to:)``: the body read up to one byte past the
    /// limit (a longer one is refused whole).
    func response(to request: Hummingbird.Request) async throws -> Hummingbird.Response {
        var body: [UInt8] = []
        let limit = self.configuration.maximumBodySize
        if request.method == .post || request.method == .put {
            for try await buffer in request.body {
                body.append(contentsOf: buffer.readableBytesView.prefix(limit + 1 - body.count))
                if body.count > limit { break }
            }
        }
        let answer = await self.respond(
            to: Request(
                method: request.method.rawValue, path: request.uri.path, query: request.uri.query,
                authorization: request.headers[.authorization], body: body
            )
        )
        var headers: HTTPFields = [.contentType: answer.contentType, .cacheControl: "no-store"]
        // The gateway's own header names (Allow, WWW-Authenticate): always valid tokens.
        for (name, value) in answer.headers { headers.append(.init(name: .init(name)!, value: value)) }
        return Hummingbird.Response(status: .init(code: answer.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}
