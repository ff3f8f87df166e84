import ArgumentParser
import ForgeHTTP2
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension APNSBench {
    /// Requests per second, client CPU and latency of one HTTP/2 connection, against h2load.
    struct Transport: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure one HTTP/2 connection: N requests with K in flight.",
            discussion: """
                Without --url, the project's own server runs in a child process (TLS with keys-example's test \
                certificate, or h2c with --h2c), so the CPU measured is the client's alone. With --h2load, \
                h2load sends the same N requests with the same K in flight to the same server, and the ratios are \
                printed.

                Examples:
                  swift run -c release apns-bench transport --requests 200000 --in-flight 100 --h2load
                  nghttpd -a 127.0.0.1 -d DOCROOT 8443 keys-example/server.key keys-example/server.pem &
                  swift run -c release apns-bench transport --url https://127.0.0.1:8443/3/device/abc \\
                      --ca-file keys-example/ca.pem --h2load
                """
        )

        @Option(name: .long, help: "Requests to send.")
        var requests = 100_000

        @Option(name: .customLong("in-flight"), help: "Requests in flight at once.")
        var inFlight = 100

        @Option(name: .long, help: "Target an existing server: https://HOST:PORT/PATH or http://… for h2c.")
        var url: String?

        @Option(name: .customLong("ca-file"), help: "Trust this CA for --url.")
        var caFile: String?

        @Flag(name: .customLong("insecure-loopback"), help: "Skip certificate checks (loopback addresses only).")
        var insecureLoopback = false

        @Flag(name: .long, help: "Use cleartext h2c with the project's server.")
        var h2c = false

        @Flag(name: .long, help: "Also run h2load with the same N and K against the same server.")
        var h2load = false

        @Option(name: .long, help: "How requests are issued: tasks (K tasks, one send each at a time) or batch (K/B tasks, each keeping a batch of B in flight).")
        var mode: Mode = .tasks

        @Option(name: .customLong("batch-size"), help: "Requests per batch in batch mode.")
        var batchSize = 25

        @Flag(name: .long, help: "Run the sending tasks on the connection's own I/O thread (its task executor).")
        var executor = false

        @Flag(name: .long, help: "Print one JSON object.")
        var json = false

        enum Mode: String, ExpressibleByArgument, CaseIterable { case tasks, batch }

        func run() async throws {
            Bench.warnIfDebug()
            var child: Process?
            let target: URL
            if let url {
                guard let parsed = URL(string: url), parsed.host != nil else { throw ValidationError("--url must be http(s)://HOST:PORT/PATH") }
                target = parsed
            } else {
                let (process, port) = try ServerChild.start(["transport-server"] + (self.h2c ? ["--h2c"] : []))
                child = process
                target = URL(string: "\(self.h2c ? "http" : "https")://127.0.0.1:\(port)/3/device/\(String(repeating: "ab", count: 32))")!
            }
            defer {
                if let child, child.isRunning {
                    kill(child.processIdentifier, SIGKILL)
                    child.waitUntilExit()
                }
            }

            let ours = try await self.measureClient(target)
            var h2loadResult: H2Load.Result?
            if self.h2load { h2loadResult = try self.runH2Load(target) }
            self.report(ours, h2load: h2loadResult, target: target)
        }

        // MARK: Our client

        struct ClientResult {
            var seconds: Double
            var cpuMicroseconds: Double
            var latencies: [Double]  // milliseconds, sorted
            var errors: Int
        }

        private func measureClient(_ target: URL) async throws -> ClientResult {
            let secure = target.scheme == "https"
            var tls: HTTP2TLSConfiguration?
            if secure {
                if self.insecureLoopback {
                    tls = HTTP2TLSConfiguration(verification: .insecureLoopbackOnly)
                } else {
                    tls = HTTP2TLSConfiguration(trustRoots: .file(self.caFile ?? "keys-example/ca.pem"))
                }
            }
            let host = target.host!
            let connection = try await HTTP2Connection.connect(
                HTTP2ClientConfiguration(host: host, port: target.port ?? (secure ? 443 : 80), tls: tls, pingInterval: nil,
                                         maximumConcurrentStreams: max(self.inFlight, 1))
            )
            let request = HTTP2Request(
                scheme: target.scheme ?? "https", authority: host, path: target.path.isEmpty ? "/" : target.path,
                headers: [HTTP2HeaderField("apns-push-type", "alert"), HTTP2HeaderField("apns-topic", "com.example.forgepush")],
                body: Array(#"{"aps":{"alert":{"title":"Benchmark","body":"Hello from ForgePush"}}}"#.utf8)
            )
            // Warm up: connection settings, allocator, code paths.
            _ = await connection.sendBatch(Array(repeating: request, count: min(1000, self.requests)))

            let cpuStart = Bench.cpuMicroseconds()
            let clock = ContinuousClock()
            let start = clock.now
            var latencies: [Double] = []
            var errors = 0
            switch self.mode {
            case .tasks:
                let perTask = self.requests / max(self.inFlight, 1)
                let extra = self.requests % max(self.inFlight, 1)
                let outcomes = await self.runTasks(max(self.inFlight, 1), on: connection) { index in
                    let count = perTask + (index < extra ? 1 : 0)
                    var local: [Double] = []
                    local.reserveCapacity(count)
                    var failures = 0
                    for _ in 0..<count {
                        let sent = clock.now
                        do {
                            let response = try await connection.send(request)
                            if response.status != 200 { failures += 1 }
                        } catch {
                            failures += 1
                        }
                        local.append(Bench.milliseconds(sent.duration(to: clock.now)))
                    }
                    return (local, failures)
                }
                for (local, failures) in outcomes {
                    latencies += local
                    errors += failures
                }
            case .batch:
                let size = max(1, min(self.batchSize, self.inFlight))
                let tasks = max(1, self.inFlight / size)
                let batches = (self.requests + size - 1) / size
                let outcomes = await self.runTasks(tasks, on: connection) { index in
                    let mine = batches / tasks + (index < batches % tasks ? 1 : 0)
                    var local: [Double] = []
                    var failures = 0
                    let batch = Array(repeating: request, count: size)
                    for _ in 0..<mine {
                        let sent = clock.now
                        let results = await connection.sendBatch(batch)
                        let elapsed = Bench.milliseconds(sent.duration(to: clock.now))
                        for result in results {
                            local.append(elapsed)
                            if (try? result.get().status) != 200 { failures += 1 }
                        }
                    }
                    return (local, failures)
                }
                for (local, failures) in outcomes {
                    latencies += local
                    errors += failures
                }
            }
            let elapsed = start.duration(to: clock.now)
            let cpu = Bench.cpuMicroseconds() - cpuStart
            await connection.close()
            return ClientResult(seconds: Bench.seconds(elapsed), cpuMicroseconds: cpu, latencies: latencies.sorted(), errors: errors)
        }

        /// Runs `body` in `count` child tasks (on the connection's executor with `--executor`) and
        /// collects each task's latencies and failure count.
        private func runTasks(
            _ count: Int,
            on connection: HTTP2Connection,
            _ body: @escaping @Sendable (Int) async -> ([Double], Int)
        ) async -> [([Double], Int)] {
            await withTaskGroup(of: ([Double], Int).self) { group in
                for index in 0..<count {
                    group.addTask(executorPreference: self.executor ? connection.executor : nil) { await body(index) }
                }
                var all: [([Double], Int)] = []
                for await outcome in group { all.append(outcome) }
                return all
            }
        }

        // MARK: h2load

        private func runH2Load(_ target: URL) throws -> H2Load.Result {
            try H2Load.run(target: target, requests: self.requests, inFlight: self.inFlight, headers: [])
        }

        // MARK: Report

        private func report(_ ours: ClientResult, h2load: H2Load.Result?, target: URL) {
            let sent = ours.latencies.count
            let rate = Double(sent) / ours.seconds
            let cpuPerRequest = ours.cpuMicroseconds / Double(sent)
            let p50 = Bench.percentile(ours.latencies, 0.50)
            let p99 = Bench.percentile(ours.latencies, 0.99)
            let mean = ours.latencies.isEmpty ? 0 : ours.latencies.reduce(0, +) / Double(ours.latencies.count)
            if self.json {
                var fields = [
                    "\"benchmark\":\"transport\"", "\"target\":\"\(target.absoluteString)\"", "\"mode\":\"\(self.mode.rawValue)\(self.executor ? "+executor" : "")\"",
                    "\"requests\":\(self.requests)", "\"in_flight\":\(self.inFlight)",
                    "\"requests_per_s\":\(Int(rate))", "\"cpu_us_per_request\":\(Bench.format(cpuPerRequest))",
                    "\"p50_ms\":\(Bench.format(p50, digits: 3))", "\"p99_ms\":\(Bench.format(p99, digits: 3))",
                    "\"mean_ms\":\(Bench.format(mean, digits: 3))", "\"errors\":\(ours.errors)",
                ]
                if let h2load {
                    let h2cpu = h2load.cpuMicroseconds / Double(self.requests)
                    fields += [
                        "\"h2load\":{\"requests_per_s\":\(Int(h2load.requestsPerSecond)),\"cpu_us_per_request\":\(Bench.format(h2cpu)),"
                            + "\"mean_ms\":\(Bench.format(h2load.meanLatencyMilliseconds, digits: 3)),\"succeeded\":\(h2load.succeeded)}",
                        "\"ratio_requests_per_s\":\(Bench.format(rate / h2load.requestsPerSecond, digits: 3))",
                        "\"ratio_cpu_per_request\":\(Bench.format(cpuPerRequest / max(h2cpu, 0.001), digits: 3))",
                        "\"ratio_mean_latency\":\(Bench.format(mean / max(h2load.meanLatencyMilliseconds, 0.000_001), digits: 3))",
                    ]
                }
                print("{" + fields.joined(separator: ",") + "}")
                return
            }
            print("target \(target.absoluteString), \(self.requests) requests, \(self.inFlight) in flight, mode \(self.mode.rawValue)")
            print(String(format: "ForgePush  %10.0f req/s  %7.2f µs CPU/req  p50 %.3f ms  p99 %.3f ms  mean %.3f ms  errors %d",
                         rate, cpuPerRequest, p50, p99, mean, ours.errors))
            if let h2load {
                let h2cpu = h2load.cpuMicroseconds / Double(self.requests)
                print(String(format: "h2load     %10.0f req/s  %7.2f µs CPU/req                          mean %.3f ms  succeeded %d",
                             h2load.requestsPerSecond, h2cpu, h2load.meanLatencyMilliseconds, h2load.succeeded))
                print(String(format: "ratio      %10.2f× req/s %7.2f× CPU/req                         %.2f× mean latency",
                             rate / h2load.requestsPerSecond, cpuPerRequest / max(h2cpu, 0.001),
                             mean / max(h2load.meanLatencyMilliseconds, 0.000_001)))
            }
        }
    }

    /// The server side of `transport`, run as a child process so its CPU is not counted as the client's.
    struct TransportServer: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "transport-server",
            abstract: "Serve 200 responses for the transport benchmark; prints the port, runs until killed.",
            shouldDisplay: false
        )

        @Flag(name: .long, help: "Serve cleartext h2c.")
        var h2c = false

        @Option(name: .long, help: "The port (0 picks a free one).")
        var port = 0

        func run() throws {
            let tls = self.h2c ? nil : HTTP2ServerTLSConfiguration(
                certificateChainFile: "keys-example/server.pem", privateKeyFile: "keys-example/server.key"
            )
            let response = HTTP2Response(status: 200, headers: [HTTP2HeaderField("apns-id", "00000000-0000-0000-0000-000000000000")])
            let server = try HTTP2Server.start(HTTP2ServerConfiguration(port: self.port, tls: tls)) { _, _ in response }
            print(server.port)
            fflush(nil)
            while true { pause() }
        }
    }
}
