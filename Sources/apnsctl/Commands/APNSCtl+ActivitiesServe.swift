import ArgumentParser
import ForgeAPNs
import ForgeLiveActivities
import ForgeLiveActivitiesGateway
import ForgeSupport
import Foundation
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import UnixSignals

extension APNSCtl.Activities {
    /// `apnsctl activities serve`: the manager on `--store` over HTTP/1.1 JSON (ForgeLiveActivitiesGateway).
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve the registry over HTTP/1.1 JSON: token reports, start, update, end and the activities, for backends in any language.",
            discussion: """
                The first line on stdout is the URL (http://127.0.0.1:PORT; useful with --port 0). Routes: POST /v1/reports \
                (the app's token report, as activities report takes it), POST /v1/activities/{id}/start, /update \
                ({"content_state", "importance": "routine" or "alerting"}) and /end, GET /v1/activities/{id}, \
                GET /v1/activities?state=&group=, POST /v1/groups/{group}/update and /end (every member of the group \
                started with "group"), GET /v1/groups/{group}, GET /metrics, GET /readyz, and GET /v1/openapi.json, which \
                describes every route, request and answer. Start, update and end answer 202 {"id", "state"}; a refusal is \
                {"error": {"code", "field", "rule"}} with 400, 401, 404, 409, 413, 502 or 503.

                With --api-key-file, every route but /readyz needs Authorization: Bearer KEY (the file's content, \
                trimmed); it is required when --host is not a loopback address. The credentials and endpoint flags \
                are those of the other activities commands, but --port and --host are the gateway's: Apple's port 2197 \
                comes from APNS_PORT or --url. SIGINT or SIGTERM stops it after the requests under way.

                Example:
                  apnsctl activities serve --store sqlite:activities.sqlite --port 8080 \\
                      --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id DEF123GHIJ
                  curl -s -X POST http://127.0.0.1:8080/v1/activities/order-17/update \\
                      -d '{"content_state": {"status": "shipped"}}'
                """
        )

        @OptionGroup var store: ActivityStoreOptions

        @Option(help: "The port to listen on; 0 lets the system choose (printed on the first line).")
        var port: Int = 0

        @Option(help: "The address to listen on; another than loopback needs --api-key-file.")
        var host: String = "127.0.0.1"

        @Option(
            name: .customLong("api-key-file"),
            help: ArgumentHelp("A file whose content (trimmed) every request but GET /readyz must give as Authorization: Bearer.", valueName: "path")
        )
        var apiKeyFile: String?

        @Option(name: .customLong("max-body"), help: ArgumentHelp("The largest request body in bytes; a larger one gets 413.", valueName: "bytes"))
        var maxBody: Int = 64 * 1024

        @Option(
            help: ArgumentHelp(
                "How long this gateway holds a push it took before another gateway on the store may take it over (30s by default; "
                    + CommandLineDuration.rule + ").",
                valueName: "duration"
            ),
            transform: { try CommandLineDuration.parse($0) }
        )
        var lease: Duration?

        @OptionGroup var auth: AuthOptions

        @OptionGroup var endpoint: APNSEndpointOptions<NoApplePortOption>

        @Flag(name: .long, help: "Log the client's connections and retries on stderr (never a key or a provider token).")
        var verbose = false

        func validate() throws {
            guard (0...65_535).contains(self.port) else { throw ValidationError("--port must be 0...65535 (got \(self.port)).") }
            guard self.maxBody >= 1 else { throw ValidationError("--max-body must be at least 1 (got \(self.maxBody)).") }
            if self.apiKeyFile == nil, !Self.isLoopback(self.host) {
                throw ValidationError("--api-key-file is required when --host is not a loopback address (got \(self.host)).")
            }
        }

        func run() async throws {
            try await runReportingFailures {
                let key = try self.apiKeyFile.map(Self.readKey)
                let configuration = try ClientFactory.configuration(auth: self.auth, endpoint: self.endpoint, verbose: self.verbose)
                let client = try ClientFactory.client(configuration)
                // One registry for the gateway's metrics and the manager's: both on GET /metrics.
                let registry = PrometheusCollectorRegistry()
                var managing = LiveActivityManager.Configuration()
                managing.metrics = PrometheusMetricsFactory(registry: registry)
                if let lease = self.lease { managing.lease = lease }
                try await self.store.withStore { store in
                    try await withAPNSClient(client) { client in
                        try await self.serve(LiveActivityManager(client: client, store: store, configuration: managing), key: key, registry: registry)
                    }
                }
            }
        }

        /// Serves until SIGINT or SIGTERM, then lets the requests under way finish.
        private func serve(_ manager: LiveActivityManager, key: String?, registry: PrometheusCollectorRegistry) async throws {
            let gateway = LiveActivityGateway(
                manager: manager,
                configuration: LiveActivityGateway.Configuration(
                    apiKey: key, maximumBodySize: self.maxBody, metrics: PrometheusMetricsFactory(registry: registry),
                    prometheusText: { registry.emitToBuffer() }
                )
            )
            let listening = Mutex(false)
            let host = self.host.contains(":") ? "[\(self.host)]" : self.host
            let storeName = self.store.store.hasPrefix("sqlite:") ? self.store.store : "PostgreSQL"
            let application = gateway.makeApplication(host: self.host, port: self.port) { port in
                listening.withLock { $0 = true }
                Output.result("http://\(host):\(port)")
                Output.diagnostic("apnsctl activities serve: \(storeName) on http://\(host):\(port)\(key == nil ? "" : ", API key required"); Ctrl-C stops")
            }
            var logger = Logger(label: "apnsctl.activities.serve")
            logger.logLevel = .critical
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: [.init(service: application), .init(service: DeliveryService(manager: manager))],
                    gracefulShutdownSignals: [.sigint, .sigterm], logger: logger
                )
            )
            do {
                try await group.run()
            } catch {
                guard listening.withLock({ $0 }) else {
                    throw CLIFailure(message: "--port: cannot listen on \(self.host):\(self.port): \(error)", exitCode: CLIExit.cannotCreate)
                }
                throw error
            }
            Output.diagnostic("apnsctl activities serve: stopped")
        }

        /// The API key: the file's content without the whitespace around it.
        private static func readKey(_ path: String) throws -> String {
            let bytes = try InputFiles.read(path, flag: "--api-key-file")
            let key = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !key.isEmpty else { throw CLIFailure(message: "--api-key-file \(path): is empty", exitCode: CLIExit.dataError) }
            return key
        }

        /// 127.0.0.0/8, ::1 or localhost.
        static func isLoopback(_ host: String) -> Bool {
            if host == "localhost" || host == "::1" { return true }
            let parts = host.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
        }
    }
}

/// The manager's delivery loop as a service beside the HTTP server: it sends the updates and ends
/// the routes record, and stops when the group shuts down (a push it had taken and not finished is
/// taken over after its lease by the next gateway on the store).
private struct DeliveryService: Service {
    let manager: LiveActivityManager

    func run() async throws {
        try await cancelWhenGracefulShutdown {
            try await self.manager.run()
        }
    }
}
