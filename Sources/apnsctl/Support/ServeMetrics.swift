import ForgeAPNsCore
import ForgeHTTP2
import ForgeLoopback
import Prometheus

/// `apnsctl serve --metrics-port`: the local server's judged requests as Prometheus metrics, served
/// as text on `GET /metrics` (HTTP/1.1, loopback, `Connection: close`; anything else is 404).
///
/// Fed by the server's observer, on its connections' threads:
/// - `apns_local_requests_total{status,reason,push_type}`: requests judged, by the status answered,
///   APNs' reason (empty for 200) and the push type (empty when the request named none);
/// - `apns_local_request_duration_seconds{status}`: how long a request waited for its answer at
///   the server (judging plus the time answers are held: `--latency`, delay faults);
/// - `apns_local_connections_accepted`: connections accepted so far, read at each scrape;
///
/// and by the phones (``LocalAPNSPhones``, through ``factory``):
/// - `apns_local_deliveries_total{state,reason}`: what became of accepted pushes on their phones
///   (`delivered`, `discarded`, `throttled`, …, and the discard or throttle reason).
final class ServeMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()

    /// swift-metrics instruments in this registry, for the phones' counters.
    var factory: PrometheusMetricsFactory { PrometheusMetricsFactory(registry: self.registry) }
    private static let buckets: [Duration] = [
        .microseconds(100), .microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
    ]

    /// Counts one judged request.
    func record(_ judgement: LocalAPNSJudgement) {
        let decision = judgement.decision
        let status = String(decision.status)
        self.registry.makeCounter(
            descriptor: MetricNameDescriptor(
                metricName: "apns_local_requests", unitName: "total",
                helpText: "Requests the local APNs server judged, by status, reason and push type."
            ),
            labels: [("status", status), ("reason", decision.reason?.rawValue ?? ""), ("push_type", decision.pushType?.rawValue ?? "")]
        ).increment()
        self.registry.makeDurationHistogram(
            descriptor: MetricNameDescriptor(
                metricName: "apns_local_request_duration", unitName: "seconds",
                helpText: "How long a request waited for its answer at the local APNs server (judging plus held answers)."
            ),
            labels: [("status", status)], buckets: Self.buckets
        ).record(judgement.duration)
    }

    /// The metrics as Prometheus text, the accepted connections read now.
    func text(server: LocalAPNSServer) -> [UInt8] {
        self.connections.set(to: Double(server.acceptedConnections))
        var text: [UInt8] = []
        self.registry.emit(into: &text)
        return text
    }

    private var connections: Gauge {
        self.registry.makeGauge(descriptor: MetricNameDescriptor(
            metricName: "apns_local_connections", unitName: "accepted", helpText: "Connections the local APNs server accepted so far."
        ))
    }

    /// Serves `GET /metrics` on `host:port` (0 picks a free port) until the endpoint is shut down.
    func serve(host: String, port: Int, server: LocalAPNSServer) throws -> PlainHTTPEndpoint {
        return try PlainHTTPEndpoint(host: host, port: port) { [self] method, path in
            guard path == "/metrics" || path.hasPrefix("/metrics?") else {
                return PlainHTTPEndpoint.Response(status: 404, body: Array("only GET /metrics is served here\n".utf8))
            }
            guard method == "GET" else {
                return PlainHTTPEndpoint.Response(status: 405, body: Array("only GET /metrics is served here\n".utf8))
            }
            return PlainHTTPEndpoint.Response(
                status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: self.text(server: server)
            )
        }
    }
}
