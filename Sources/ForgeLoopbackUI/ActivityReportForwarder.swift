internal import AsyncHTTPClient
internal import ForgeSupport
internal import NIOCore
internal import NIOHTTP1
package import ForgeSimulatedDevice
package import Logging
package import Metrics
package import struct Foundation.URL

/// Posts the Live Activity token reports of the local server's phones to a backend, as the apps
/// would (`apnsctl serve --report-tokens-to URL`): each report's JSON (``ActivityTokenReport/json``)
/// in a `POST` with `Content-Type: application/json`.
///
/// Reports wait in one bounded queue, oldest first, and go out one at a time in that order, so each
/// phone's reports arrive in the order its apps posted them. A report the queue has no room for is
/// dropped and counted. A connection failure or a 5xx answer is retried after a backoff that doubles
/// up to a bound, a bounded number of times ("retry"); a 4xx is logged once and the report dropped
/// (the backend refused it; sending it again changes nothing). Counted in swift-metrics as
/// `apns_local_token_reports_total{outcome}`: `sent`, `refused` (4xx), `failed` (retries spent),
/// `dropped` (queue full).
///
/// ``run()`` owns the HTTP client (async-http-client) and shuts it down before it returns.
package final class ActivityReportForwarder: Sendable {
    /// What to do with a report after one attempt.
    package enum Verdict: Hashable, Sendable {
        /// Delivered (2xx or 3xx): the next report.
        case sent
        /// Try again after the backoff: no connection, a time-out, or a 5xx.
        case retry
        /// Refused for good (4xx): logged and dropped.
        case refused
    }

    /// How a failed attempt is retried.
    package struct Retry: Sendable, Hashable {
        /// The wait before the first retry; each later wait doubles, up to ``maximumDelay``.
        package var initialDelay: Duration = .milliseconds(100)
        /// The longest wait between two attempts.
        package var maximumDelay: Duration = .seconds(5)
        /// Attempts per report, the first included.
        package var attempts: Int = 8

        package init() {}

        /// The wait before attempt `attempt + 1`, after `attempt` failed ones (from 1).
        package func delay(after attempt: Int) -> Duration {
            var delay = self.initialDelay
            for _ in 1..<max(1, attempt) {
                delay *= 2
                if delay >= self.maximumDelay { return self.maximumDelay }
            }
            return min(delay, self.maximumDelay)
        }
    }

    /// The backend's URL.
    package let url: URL
    package let retry: Retry
    private let logger: Logger
    private let queue: AsyncStream<ActivityTokenReport>
    private let input: AsyncStream<ActivityTokenReport>.Continuation
    private let counters: [String: Counter]
    private let counts = LockedBox<[String: Int]>([:])

    /// Creates a forwarder; nothing is sent before ``run()``.
    /// - Parameters:
    ///   - url: where each report is posted (http or https).
    ///   - capacity: the most reports waiting; one more is dropped and counted.
    ///   - retry: the backoff for connection failures and 5xx answers.
    ///   - metrics: where the counters come from.
    ///   - logger: refusals, spent retries and drops are logged here.
    package init(
        url: URL, capacity: Int = 10_000, retry: Retry = Retry(), metrics: any MetricsFactory = MetricsSystem.factory,
        logger: Logger = Logger(label: "forgepush.token-reports")
    ) {
        self.url = url
        self.retry = retry
        self.logger = logger
        (self.queue, self.input) = AsyncStream.makeStream(of: ActivityTokenReport.self, bufferingPolicy: .bufferingOldest(max(1, capacity)))
        var counters: [String: Counter] = [:]
        for outcome in ["sent", "refused", "failed", "dropped"] {
            counters[outcome] = Counter(label: "apns_local_token_reports_total", dimensions: [("outcome", outcome)], factory: metrics)
        }
        self.counters = counters
    }

    /// Queues one report; never waits. A full queue drops it (counted as `dropped`).
    package func enqueue(_ report: ActivityTokenReport) {
        if case .dropped = self.input.yield(report) {
            if self.count("dropped") == 1 {
                self.logger.warning("token report queue full: reports are dropped (counted in apns_local_token_reports_total{outcome=\"dropped\"})")
            }
        }
    }

    /// No more reports: ``run()`` returns once the queued ones are posted.
    package func finish() {
        self.input.finish()
    }

    /// How many reports ended with `outcome` (`sent`, `refused`, `failed`, `dropped`).
    package func count(of outcome: String) -> Int { self.counts.withLock { $0[outcome, default: 0] } }

    /// Posts the queued reports in order until ``finish()`` and the queue is empty, or until the
    /// task is cancelled (what is still queued then is not sent). Shuts its HTTP client down before
    /// it returns.
    package func run() async {
        do {
            try await HTTPClient.withHTTPClient { client in
                for await report in self.queue {
                    guard !Task.isCancelled else { break }
                    await self.post(report, with: client)
                }
            }
        } catch {
            self.logger.error("token reports: the HTTP client did not shut down cleanly: \(error)")
        }
    }

    /// One report, with its retries.
    private func post(_ report: ActivityTokenReport, with client: HTTPClient) async {
        var request = HTTPClientRequest(url: self.url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(report.json)
        var attempt = 0
        while true {
            attempt += 1
            let verdict: Verdict
            var detail: String
            do {
                let response = try await client.execute(request, timeout: .seconds(10))
                let status = Int(response.status.code)
                _ = try? await response.body.collect(upTo: 64 * 1024)
                verdict = Self.verdict(status: status)
                detail = "HTTP \(status)"
            } catch {
                verdict = Self.verdict(status: nil)
                detail = "\(error)"
            }
            switch verdict {
            case .sent:
                self.count("sent")
                return
            case .refused:
                self.count("refused")
                self.logger.warning(
                    "token report refused by \(self.url.absoluteString) (\(detail)); dropped",
                    metadata: ["report.kind": "\(report.kind)", "report.sequence": "\(report.sequence)"]
                )
                return
            case .retry:
                guard attempt < self.retry.attempts, !Task.isCancelled else {
                    self.count("failed")
                    self.logger.warning(
                        "token report not delivered to \(self.url.absoluteString) after \(attempt) attempts (\(detail)); dropped",
                        metadata: ["report.kind": "\(report.kind)", "report.sequence": "\(report.sequence)"]
                    )
                    return
                }
                // Cancelled during the wait: the guard above ends it on the next turn.
                try? await Task.sleep(for: self.retry.delay(after: attempt))
            }
        }
    }

    /// What one answer means: `nil` is no answer (connection refused or lost, time-out).
    package static func verdict(status: Int?) -> Verdict {
        guard let status else { return .retry }
        switch status {
        case 200..<400: return .sent
        case 400..<500: return .refused
        default: return .retry
        }
    }

    /// Counts an outcome; returns the new count.
    @discardableResult
    private func count(_ outcome: String) -> Int {
        self.counters[outcome]?.increment()
        return self.counts.withLock { counts in
            counts[outcome, default: 0] += 1
            return counts[outcome, default: 0]
        }
    }
}
