import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeLiveActivities
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceLifecycle
import UnixSignals

/// A Hummingbird 2 app that sends pushes through ForgePush.
///
/// - `POST /notify/:token` with `{"title": …, "body": …}` sends an alert to the device token and
///   answers `{"apns_id": …}`, or APNs' status with `{"reason": …}` (502 when nothing was accepted
///   for another reason: unreachable, deadline, …).
/// - `POST /activities/reports`: what the app posts about its Live Activities (its push-to-start
///   token, an activity's update token, an activity that ended), applied to the registry.
/// - `POST /activities/:id/start` with `{"installation", "order", "status"}`, `POST /activities/:id/update`
///   with `{"status"}`, `POST /activities/:id/end`: managed Live Activities of `OrderAttributes`,
///   answered `{"state": …}` or the manager's error (`{"code", "field", "rule"}`).
/// - `GET /metrics`: the client's swift-metrics (`apns_notifications_total`, `apns_send_duration`, …)
///   as Prometheus text.
///
/// The APNSClient and the HTTP server run in one ServiceGroup: SIGTERM or SIGINT stops the server,
/// then the client (in-flight sends get its grace period).
///
/// Configuration, from the environment:
/// `APNS_KEY_FILE`, `APNS_KEY_ID`, `APNS_TEAM_ID` (the .p8 key), `APNS_TOPIC` (the bundle id),
/// `APNS_URL` (`https://api.sandbox.push.apple.com` by default; `https://127.0.0.1:PORT` for
/// `apnsctl serve`), `APNS_CA_FILE` (trust this CA instead of the system's, for the local server),
/// `PORT` (8080; 0 picks a free one). The bound port is printed on stdout once the server runs.
@main
struct HummingbirdPush {
    struct Notify: Decodable {
        var title: String
        var body: String
    }

    /// The app's Live Activity: an order, its id in the attributes, its status as the content state.
    struct OrderAttributes: Codable, Sendable {
        var order: String
    }

    struct OrderState: Codable, Sendable {
        var status: String
    }

    struct StartOrder: Decodable {
        var installation: String
        var order: String
        var status: String
    }

    static func main() async throws {
        let environment = ProcessInfo.processInfo.environment
        var logger = Logger(label: "hummingbird-push")
        logger.logLevel = .info

        // The client's metrics go into this registry; GET /metrics emits it.
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

        let configuration = try Self.apnsConfiguration(environment, logger: logger)
        let topic = try APNSBundleID(try Self.require("APNS_TOPIC", environment))
        let client = try APNSClient(configuration: configuration)

        let router = Router()
        router.post("/notify/:token") { request, context -> Response in
            let token: DeviceToken
            do {
                token = try DeviceToken(try context.parameters.require("token"))
            } catch {
                return Self.json(.badRequest, ["reason": "token: \(error)"])
            }
            let notify = try await request.decode(as: Notify.self, context: context)
            let alert = APNSAlertNotification(alert: APNSAlert(title: notify.title, body: notify.body), topic: topic)
            do {
                let result = try await client.send(alert, to: token)
                return Self.json(.ok, ["apns_id": result.apnsID])
            } catch let error as APNSError {
                let status = error.status.map { HTTPResponse.Status(code: $0) } ?? .badGateway
                return Self.json(status, ["reason": error.reason?.rawValue ?? error.kind.rawValue])
            }
        }
        // Managed Live Activities: the registry in memory (a `PostgresLiveActivityStore` or
        // `SQLiteLiveActivityStore` keeps it across restarts and replicas).
        let activities = LiveActivityManager(client: client, store: InMemoryLiveActivityStore())
        router.post("/activities/reports") { request, context -> Response in
            let body = try await request.body.collect(upTo: 4096)
            let answer = await activities.handleReport(body: body.readableBytesView)
            return Response(
                status: HTTPResponse.Status(code: answer.status), headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body))
            )
        }
        router.post("/activities/:id/:action") { request, context -> Response in
            do {
                let id = try LiveActivityID(try context.parameters.require("id"))
                switch try context.parameters.require("action") {
                case "start":
                    let start = try await request.decode(as: StartOrder.self, context: context)
                    let started = try await activities.start(
                        activity: id, installation: try InstallationID(start.installation), bundleID: topic,
                        attributesType: "OrderAttributes", attributes: OrderAttributes(order: start.order),
                        contentState: OrderState(status: start.status),
                        alert: APNSLiveActivityAlert(title: .plain("Order \(start.order)"), body: .plain(start.status))
                    )
                    return Self.json(.ok, ["state": started.activity.state.name])
                case "update":
                    let state = try await request.decode(as: OrderState.self, context: context)
                    let outcome = try await activities.update(activity: id, contentState: state)
                    return Self.json(.ok, ["state": outcome == .held ? "held" : "sent"])
                case "end":
                    try await activities.end(activity: id, contentState: nil as OrderState?)
                    return Self.json(.ok, ["state": "ended"])
                default:
                    return Self.json(.notFound, ["reason": "unknown action"])
                }
            } catch let error as LiveActivityError {
                let status: HTTPResponse.Status = switch error.code {
                case .invalidInput, .notLive, .noPushToStartToken: .badRequest
                case .unknownActivity: .notFound
                default: .badGateway
                }
                return Self.json(status, ["code": error.code.rawValue, "field": error.field ?? "", "rule": error.rule])
            }
        }
        router.get("/metrics") { _, _ -> String in
            var text: [UInt8] = []
            registry.emit(into: &text)
            return String(decoding: text, as: UTF8.self)
        }

        let port = Int(environment["PORT"] ?? "8080") ?? 8080
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                // Unbuffered: a script waiting for the port reads it at once.
                FileHandle.standardOutput.write(Data("\(channel.localAddress?.port ?? port)\n".utf8))
            },
            logger: logger
        )
        // One group: the client's background work and the server, shut down in reverse order.
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [client, app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
        ))
        try await group.run()
    }

    static func apnsConfiguration(_ environment: [String: String], logger: Logger) throws -> APNSClient.Configuration {
        let key = try APNSSigningKey(contentsOfFile: try Self.require("APNS_KEY_FILE", environment))
        let url = environment["APNS_URL"] ?? "https://api.sandbox.push.apple.com"
        guard let parts = URLComponents(string: url), parts.scheme == "https", let host = parts.host else {
            throw ConfigurationError("APNS_URL must be https://HOST[:PORT] (got \(url))")
        }
        return APNSClient.Configuration(
            authentication: .jwt(
                key: key, keyID: try APNSKeyID(try Self.require("APNS_KEY_ID", environment)),
                teamID: try APNSTeamID(try Self.require("APNS_TEAM_ID", environment))
            ),
            environment: .custom(host: host, port: parts.port ?? 443),
            tls: APNSClient.TLS(caFile: environment["APNS_CA_FILE"]),
            logger: logger
        )
    }

    static func require(_ name: String, _ environment: [String: String]) throws -> String {
        guard let value = environment[name], !value.isEmpty else { throw ConfigurationError("\(name) is not set") }
        return value
    }

    static func json(_ status: HTTPResponse.Status, _ fields: [String: String]) -> Response {
        let body = (try? JSONEncoder().encode(fields)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: body))
        )
    }
}

struct ConfigurationError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
