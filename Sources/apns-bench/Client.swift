import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension APNSBench {
    /// Notifications per second, client CPU and latency of APNSClient.
    struct Client: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send N notifications through APNSClient (bulk, or one send per task) and measure it.",
            discussion: """
                Without --url, the local APNs server runs in a child process (TLS with keys-example's test \
                certificate and its FORGEKEY01 key registered, or h2c with --h2c), so the CPU measured is the \
                client's alone. With --latency, that server holds every answer that long, as APNs 20-50 ms away \
                would. With --h2load, h2load sends the same N requests to the same server afterwards (C connections, \
                --in-flight streams each, with a provider token), and the ratios ForgePush/h2load are printed.

                Examples:
                  swift run -c release apns-bench client --notifications 200000 --h2load
                  swift run -c release apns-bench client --mode tasks --in-flight 100 --notifications 100000
                  swift run -c release apns-bench client --latency 30ms --mode tasks --in-flight 1000 --h2load
                  swift run -c release apns-bench client --url https://127.0.0.1:2197 --ca-file keys-example/ca.pem
                """
        )

        enum Mode: String, ExpressibleByArgument, CaseIterable {
            case bulk, tasks
        }

        @Option(name: .long, help: "Notifications to send.")
        var notifications = 100_000

        @Option(name: .long, help: "bulk (sendBulk over a token sequence) or tasks (K tasks calling send).")
        var mode: Mode = .bulk

        @Option(name: .customLong("in-flight"), help: "Tasks in tasks mode; in bulk mode, h2load's -m.")
        var inFlight = 100

        @Flag(name: .customLong("client-executor"), help: "In tasks mode, the tasks prefer the client's executor (its I/O threads).")
        var clientExecutor = false

        @Option(name: .long, help: "The most connections in the client's pool (default: the library's, 4).")
        var connections: Int?

        @Option(name: .long, help: "An APNs-like server: https://HOST:PORT or http://… for h2c (default: the local server in a child process).")
        var url: String?

        @Option(name: .customLong("ca-file"), help: "Trust this CA for --url.")
        var caFile: String?

        @Flag(name: .customLong("insecure-loopback"), help: "Skip certificate checks (loopback addresses only).")
        var insecureLoopback = false

        @Flag(name: .long, help: "Cleartext h2c with the local server.")
        var h2c = false

        @Flag(name: .long, help: "Also run h2load against the same server.")
        var h2load = false

        @Option(name: .customLong("h2load-connections"), help: "Connections h2load opens (its -c).")
        var h2loadConnections = 4

        @Option(
            name: .customLong("h2load-streams"),
            help: """
                Streams per h2load connection (its -m). Default: --in-flight in bulk mode; in tasks mode, the \
                tasks shared among h2load's connections, so both keep as many requests in flight (at a round \
                trip, K tasks each waiting for its answer cannot beat K / round trip; Little's law).
                """
        )
        var h2loadStreams: Int?

        /// h2load's `-m`.
        var h2loadStreamsPerConnection: Int {
            if let streams = self.h2loadStreams { return streams }
            switch self.mode {
            case .bulk: return self.inFlight
            case .tasks: return max(1, (self.inFlight + self.h2loadConnections - 1) / self.h2loadConnections)
            }
        }

        @Option(
            help: ArgumentHelp("Hold each answer of the local server this long: 30ms, 0.03s, 250us (default: 0).", valueName: "duration"),
            transform: { try CommandLineDuration.parse($0) }
        )
        var latency: Duration?

        @Flag(name: .long, help: "Print one JSON object.")
        var json = false

        func validate() throws {
            if self.url != nil, self.latency != nil { throw ValidationError("--latency applies to the local server; drop --url.") }
            guard self.h2loadConnections >= 1 else { throw ValidationError("--h2load-connections must be at least 1.") }
            if let streams = self.h2loadStreams, streams < 1 { throw ValidationError("--h2load-streams must be at least 1.") }
        }

        func run() async throws {
            Bench.warnIfDebug()
            var child: Process?
            let target: URL
            if let url = self.url {
                guard let parsed = URL(string: url), parsed.host != nil else { throw ValidationError("--url must be http(s)://HOST:PORT") }
                target = parsed
            } else {
                let (process, port) = try ServerChild.start(["apns-server"] + (self.h2c ? ["--h2c"] : []) + ServerChild.latencyArguments(self.latency))
                child = process
                target = URL(string: "\(self.h2c ? "http" : "https")://localhost:\(port)")!
            }
            defer { child?.terminate() }
            let key = try APNSSigningKey(contentsOfFile: "keys-example/AuthKey_FORGEKEY01.p8")
            let keyID = try APNSKeyID("FORGEKEY01"), teamID = try APNSTeamID("FORGETEAM1")
            let secure = target.scheme == "https"
            let configuration = APNSClient.Configuration(
                authentication: .jwt(key: key, keyID: keyID, teamID: teamID),
                environment: .custom(host: target.host!, port: target.port ?? (secure ? 443 : 80)),
                tls: APNSClient.TLS(
                    caFile: secure && !self.insecureLoopback ? (self.caFile ?? "keys-example/ca.pem") : nil,
                    insecureLoopbackOnly: self.insecureLoopback, cleartextLoopbackOnly: !secure
                ),
                pool: self.connections.map { APNSClient.Pool(maximumConnections: $0) } ?? APNSClient.Pool()
            )
            let alert = APNSAlertNotification(alert: APNSAlert(title: "Benchmark", body: "Hello from ForgePush"),
                                              topic: try APNSBundleID("com.example.forgepush"))
            let result = try await withAPNSClient(configuration: configuration) { client in
                // Warm up: connection, stream limit, allocator.
                _ = try await client.sendBulk(alert, to: GeneratedTokens(count: 2000, offset: 1 << 40)).summary()
                return try await self.measure(client, alert)
            }
            var h2loadResult: H2Load.Result?
            if self.h2load {
                h2loadResult = try H2Load.runAPNS(server: target, requests: self.notifications, connections: self.h2loadConnections,
                                                  inFlight: self.h2loadStreamsPerConnection)
            }
            self.report(result, h2load: h2loadResult, target: target)
        }

        struct Measured {
            var seconds: Double
            var cpuMicroseconds: Double
            var latencies: [Double]
            var errors: Int
        }

        private func measure(_ client: APNSClient, _ alert: APNSAlertNotification<APNSNoCustomKeys>) async throws -> Measured {
            // In tasks mode each task's tokens are made before the clock starts: an application holds
            // its tokens already, and h2load makes none.
            let tasks = max(1, self.inFlight)
            let per = self.notifications / tasks, extra = self.notifications % tasks
            let taskTokens = self.mode == .tasks
                ? (0..<tasks).map { index in (0..<(per + (index < extra ? 1 : 0))).map { GeneratedTokens.token(index * (per + 1) + $0) } }
                : []
            let cpuStart = Bench.cpuMicroseconds()
            let start = ContinuousClock.now
            var latencies: [Double] = []
            latencies.reserveCapacity(self.notifications)
            var errors = 0
            switch self.mode {
            case .bulk:
                let bulk = try client.sendBulk(alert, to: GeneratedTokens(count: self.notifications))
                for await verdict in bulk {
                    if case .accepted(let result) = verdict.outcome {
                        latencies.append(Bench.milliseconds(result.duration))
                    } else {
                        errors += 1
                    }
                }
            case .tasks:
                let prepared = try alert.prepared()
                let executor: (any TaskExecutor)? = self.clientExecutor ? client.executor : nil
                @Sendable func sendAll(_ tokens: [DeviceToken]) async -> ([Double], Int) {
                    var local: [Double] = []
                    local.reserveCapacity(tokens.count)
                    var failures = 0
                    for token in tokens {
                        let sent = ContinuousClock.now
                        do {
                            _ = try await client.send(prepared, to: token)
                            local.append(Bench.milliseconds(.now - sent))
                        } catch {
                            failures += 1
                        }
                    }
                    return (local, failures)
                }
                await withTaskGroup(of: ([Double], Int).self) { group in
                    for tokens in taskTokens {
                        // Without --client-executor, tasks as a caller writes them: `addTask(executorPreference: nil)`
                        // gives each task a preference record all the same, and the runtime then takes
                        // the task's status lock to read it at every resume (3 % of the run's CPU).
                        if let executor {
                            group.addTask(executorPreference: executor) { await sendAll(tokens) }
                        } else {
                            group.addTask { await sendAll(tokens) }
                        }
                    }
                    for await (local, failures) in group {
                        latencies += local
                        errors += failures
                    }
                }
            }
            let seconds = Bench.seconds(.now - start)
            return Measured(seconds: seconds, cpuMicroseconds: Bench.cpuMicroseconds() - cpuStart, latencies: latencies.sorted(), errors: errors)
        }

        private func report(_ measured: Measured, h2load: H2Load.Result?, target: URL) {
            let rate = Double(self.notifications) / measured.seconds
            let cpu = measured.cpuMicroseconds / Double(self.notifications)
            let p50 = Bench.percentile(measured.latencies, 0.5), p99 = Bench.percentile(measured.latencies, 0.99)
            let rss = Bench.peakRSSMiB()
            if self.json {
                var fields = [
                    "\"benchmark\":\"client\"", "\"mode\":\"\(self.mode.rawValue)\"", "\"target\":\"\(target.absoluteString)\"",
                    "\"notifications\":\(self.notifications)", "\"connections\":\(self.connections ?? APNSClient.Pool().maximumConnections)",
                    "\"notifications_per_s\":\(Int(rate))", "\"cpu_us_per_notification\":\(Bench.format(cpu))",
                    "\"p50_ms\":\(Bench.format(p50, digits: 3))", "\"p99_ms\":\(Bench.format(p99, digits: 3))",
                    "\"peak_rss_mib\":\(Bench.format(rss, digits: 1))", "\"errors\":\(measured.errors)",
                    "\"latency_ms\":\(Bench.format(Bench.milliseconds(self.latency ?? .zero), digits: 3))",
                ]
                if let h2load {
                    fields += h2load.jsonFields(
                        requests: self.notifications, connections: self.h2loadConnections, streams: self.h2loadStreamsPerConnection,
                        rate: rate, cpu: cpu
                    )
                }
                print("{" + fields.joined(separator: ",") + "}")
                return
            }
            let held = self.latency.map { ", answers held \(CommandLineDuration.text($0))" } ?? ""
            print("APNSClient \(self.mode.rawValue), \(self.notifications) notifications, at most \(self.connections ?? APNSClient.Pool().maximumConnections) connection(s), target \(target.absoluteString)\(held)")
            print(String(format: "ForgePush  %9.0f notifications/s  %6.2f µs CPU/notification  p50 %.3f ms  p99 %.3f ms  peak RSS %.1f MiB  errors %d",
                         rate, cpu, p50, p99, rss, measured.errors))
            if let h2load {
                let h2cpu = h2load.cpuMicroseconds / Double(self.notifications)
                print(String(format: "h2load     %9.0f requests/s       %6.2f µs CPU/request       (-c %d -m %d; succeeded %d)",
                             h2load.requestsPerSecond, h2cpu, self.h2loadConnections, self.h2loadStreamsPerConnection, h2load.succeeded))
                print(String(format: "ratio      %9.2f× rate            %6.2f× CPU", rate / h2load.requestsPerSecond, cpu / max(h2cpu, 0.001)))
            }
        }
    }
}
