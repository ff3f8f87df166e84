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
                h2loadResult = try H2Load.runAPNs(server: target, requests: self.notifications, connections: self.h2loadConnections,
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

    /// 1,000,000 tokens through sendBulk, streamed: rate and peak RSS.
    struct Reconnect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send pushes one by one to a local server that ends every connection after one answer; print the RSS as connections come and go.",
            discussion: """
                Each send opens a new connection of the pool (TLS handshake, I/O thread, nghttp2 session) and the \
                old one goes away: memory that a connection leaves behind grows the RSS with the count.
                Example: swift run -c release apns-bench reconnect --connections 10000
                """
        )

        @Option(name: .long, help: "Connections to open and lose, one push each.")
        var connections = 10_000

        @Flag(name: .long, help: "Print one JSON object.")
        var json = false

        func run() async throws {
            Bench.warnIfDebug()
            let (child, port) = try ServerChild.start(["apns-server", "--goaway-after-each"])
            defer { child.terminate() }
            let configuration = try ServerChild.clientConfiguration(port: port)
            let alert = try ServerChild.alert()
            let warmUp = min(1_000, self.connections / 10)
            var rssAfterWarmUp = 0.0
            var accepted = 0
            let start = ContinuousClock.now
            try await withAPNSClient(configuration: configuration) { client in
                for index in 0..<self.connections {
                    if index == warmUp { rssAfterWarmUp = Bench.currentRSSMiB() }
                    let token = try DeviceToken(String(format: "%064x", index + 1))
                    if (try? await client.send(alert, to: token)) != nil { accepted += 1 }
                }
            }
            let seconds = Bench.seconds(.now - start)
            let rssAtEnd = Bench.currentRSSMiB()
            let perConnection = (rssAtEnd - rssAfterWarmUp) * 1_048_576 / Double(max(1, self.connections - warmUp))
            if self.json {
                print("{\"benchmark\":\"reconnect\",\"connections\":\(self.connections),\"accepted\":\(accepted),"
                    + "\"rss_after_warm_up_mib\":\(Bench.format(rssAfterWarmUp, digits: 1)),\"rss_at_end_mib\":\(Bench.format(rssAtEnd, digits: 1)),"
                    + "\"bytes_per_connection\":\(Int(perConnection)),\"peak_rss_mib\":\(Bench.format(Bench.peakRSSMiB(), digits: 1)),"
                    + "\"seconds\":\(Bench.format(seconds))}")
                return
            }
            print(String(format: "reconnect: %d connections (%d accepted) in %.1f s; RSS %.1f MiB after %d, %.1f MiB at the end "
                         + "(%.0f bytes per connection after the warm-up); peak %.1f MiB",
                         self.connections, accepted, seconds, rssAfterWarmUp, warmUp, rssAtEnd, perConnection, Bench.peakRSSMiB()))
        }
    }

    struct Bulk: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stream generated tokens through sendBulk to the local server (child process); print rate and peak RSS.",
            discussion: """
                With --latency, the server holds every answer that long, as APNs 20-50 ms away would. With \
                --h2load, h2load then sends as many pushes to the same server (C connections, --in-flight streams \
                each), and the ratios ForgePush/h2load are printed.

                Examples:
                  swift run -c release apns-bench bulk --tokens 1000000
                  swift run -c release apns-bench bulk --tokens 100000 --latency 30ms --h2load
                """
        )

        @Option(name: .long, help: "Tokens to generate.")
        var tokens = 1_000_000

        @Flag(name: .long, help: "Cleartext h2c.")
        var h2c = false

        @Flag(name: .customLong("client-executor"), help: "In tasks mode, the tasks prefer the client's executor (its I/O threads).")
        var clientExecutor = false

        @Option(name: .long, help: "The most connections in the client's pool (default: the library's, 4).")
        var connections: Int?

        @Option(
            help: ArgumentHelp("Hold each answer of the local server this long: 30ms, 0.03s, 250us (default: 0).", valueName: "duration"),
            transform: { try CommandLineDuration.parse($0) }
        )
        var latency: Duration?

        @Flag(name: .long, help: "Also run h2load against the same server, as many pushes.")
        var h2load = false

        @Option(name: .customLong("h2load-connections"), help: "Connections h2load opens (its -c).")
        var h2loadConnections = 4

        @Option(name: .customLong("in-flight"), help: "h2load's -m, streams per connection (sendBulk chooses its own window).")
        var inFlight = 1000

        @Flag(name: .long, help: "Print one JSON object.")
        var json = false

        func validate() throws {
            guard self.h2loadConnections >= 1 else { throw ValidationError("--h2load-connections must be at least 1.") }
            guard self.inFlight >= 1 else { throw ValidationError("--in-flight must be at least 1.") }
        }

        func run() async throws {
            Bench.warnIfDebug()
            let (child, port) = try ServerChild.start(["apns-server"] + (self.h2c ? ["--h2c"] : []) + ServerChild.latencyArguments(self.latency))
            defer { child.terminate() }
            let configuration = try ServerChild.clientConfiguration(port: port, h2c: self.h2c, connections: self.connections)
            let alert = try ServerChild.alert()
            let start = ContinuousClock.now
            let cpuStart = Bench.cpuMicroseconds()
            let (summary, opened) = try await withAPNSClient(configuration: configuration) { client in
                let summary = try await client.sendBulk(alert, to: GeneratedTokens(count: self.tokens)).summary()
                return (summary, client.openConnections)
            }
            let seconds = Bench.seconds(.now - start)
            let rate = Double(self.tokens) / seconds
            let cpu = (Bench.cpuMicroseconds() - cpuStart) / Double(self.tokens)
            let rss = Bench.peakRSSMiB()
            var h2load: H2Load.Result?
            if self.h2load {
                let server = URL(string: "\(self.h2c ? "http" : "https")://localhost:\(port)")!
                h2load = try H2Load.runAPNs(server: server, requests: self.tokens, connections: self.h2loadConnections, inFlight: self.inFlight)
            }
            let latency = self.latency ?? .zero
            if self.json {
                var fields = [
                    "\"benchmark\":\"bulk\"", "\"tokens\":\(self.tokens)", "\"connections\":\(self.connections ?? APNSClient.Pool().maximumConnections)",
                    "\"latency_ms\":\(Bench.format(Bench.milliseconds(latency), digits: 3))", "\"notifications_per_s\":\(Int(rate))",
                    "\"cpu_us_per_notification\":\(Bench.format(cpu))", "\"peak_rss_mib\":\(Bench.format(rss, digits: 1))",
                    "\"accepted\":\(summary.accepted)", "\"errors\":\(summary.total - summary.accepted)",
                ]
                if let h2load {
                    fields += h2load.jsonFields(
                        requests: self.tokens, connections: self.h2loadConnections, streams: self.inFlight, rate: rate, cpu: cpu
                    )
                }
                print("{" + fields.joined(separator: ",") + "}")
                return
            }
            let held = latency == .zero ? "" : " (answers held \(CommandLineDuration.text(latency)))"
            print(String(format: "sendBulk: %d tokens in %.2f s: %.0f notifications/s, %.2f µs CPU each, peak RSS %.1f MiB",
                         self.tokens, seconds, rate, cpu, rss) + held)
            print("summary: \(summary); \(opened) connection(s) open at the end")
            if let h2load {
                let h2cpu = h2load.cpuMicroseconds / Double(self.tokens)
                print(String(format: "h2load:   %.0f requests/s, %.2f µs CPU each (-c %d -m %d; succeeded %d)",
                             h2load.requestsPerSecond, h2cpu, self.h2loadConnections, self.inFlight, h2load.succeeded))
                print(String(format: "ratio:    %.2f× rate, %.2f× CPU (ForgePush/h2load)", rate / h2load.requestsPerSecond, cpu / max(h2cpu, 0.001)))
            }
        }
    }
}

/// Distinct 64-digit tokens made on the fly, never held in memory together.
struct GeneratedTokens: AsyncSequence, Sendable {
    typealias Element = String
    let count: Int
    var offset = 0

    static func token(_ index: Int) -> DeviceToken {
        try! DeviceToken(Self.hex(index))
    }

    static func hex(_ index: Int) -> String {
        // Computed digits, no table: the generator stands for the application's token source and
        // should cost little next to the send it feeds.
        String(unsafeUninitializedCapacity: 64) { buffer in
            for position in 0..<64 {
                let shift = (63 - position) * 4
                let nibble = shift < 64 ? UInt8(truncatingIfNeeded: (index >> shift) & 0xF) : 0xA
                buffer[position] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
            }
            return 64
        }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var next = 0
        let end: Int
        mutating func next() async -> String? {
            guard self.next < self.end else { return nil }
            defer { self.next += 1 }
            return GeneratedTokens.hex(self.next)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(next: self.offset, end: self.offset + self.count) }
}

/// A benchmark server in a child process (this executable with a hidden subcommand that prints its
/// port on the first line), so its CPU and memory are not counted as the client's.
enum ServerChild {
    /// A client of the `apns-server` child on `port`: keys-example's key, its CA (or h2c).
    static func clientConfiguration(port: Int, h2c: Bool = false, connections: Int? = nil) throws -> APNSClient.Configuration {
        let key = try APNSSigningKey(contentsOfFile: "keys-example/AuthKey_FORGEKEY01.p8")
        return APNSClient.Configuration(
            authentication: .jwt(key: key, keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1")),
            environment: .custom(host: "localhost", port: port),
            tls: APNSClient.TLS(caFile: h2c ? nil : "keys-example/ca.pem", cleartextLoopbackOnly: h2c),
            pool: connections.map { APNSClient.Pool(maximumConnections: $0) } ?? APNSClient.Pool()
        )
    }

    /// The alert the client benchmarks send.
    static func alert() throws -> APNSAlertNotification<APNSNoCustomKeys> {
        APNSAlertNotification(alert: APNSAlert(title: "Benchmark", body: "Hello from ForgePush"), topic: try APNSBundleID("com.example.forgepush"))
    }

    /// `--latency <duration>` for the `apns-server` child, or nothing.
    static func latencyArguments(_ latency: Duration?) -> [String] {
        latency.map { ["--latency", CommandLineDuration.text($0)] } ?? []
    }

    static func start(_ arguments: [String]) throws -> (Process, Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        var line = Data()
        while true {
            let byte = pipe.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data([0x0a]) { break }
            line.append(byte)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw ValidationError("the benchmark server (\(arguments.joined(separator: " "))) did not start")
        }
        return (process, port)
    }
}

extension APNSBench {
    /// The server side of `client` and `bulk`.
    struct APNSServer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apns-server", abstract: "Run the local APNs server for the client benchmarks; prints the port.",
            shouldDisplay: false
        )

        @Flag(name: .long, help: "Serve cleartext h2c.")
        var h2c = false

        @Flag(name: .customLong("lenient-tokens"), help: "Accept DER signatures and a string iat (APNSwift 6.4 sends one).")
        var lenientTokens = false

        @Flag(name: .customLong("goaway-after-each"), help: "Answer each request, then GOAWAY: every request needs a new connection.")
        var goAwayAfterEach = false

        @Option(help: ArgumentHelp("Hold each answer this long: 30ms, 0.03s, 250us (default: 0).", valueName: "duration"),
                transform: { try CommandLineDuration.parse($0) })
        var latency: Duration?

        func run() async throws {
            let key = try APNSSigningKey(contentsOfFile: "keys-example/AuthKey_FORGEKEY01.p8")
            let tls = self.h2c ? nil : HTTP2ServerTLSConfiguration(certificateChainFile: "keys-example/server.pem",
                                                                    privateKeyFile: "keys-example/server.key")
            let server = try LocalAPNsServer.start(
                LocalAPNsConfiguration(keepsHistory: false), http2: HTTP2ServerConfiguration(tls: tls, responseDelay: self.latency ?? .zero),
                authenticator: TokenAuthenticator(
                    keys: [LocalAPNsKey(keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1"),
                                        verificationKey: key.publicKey)],
                    environment: .sandbox, lenient: self.lenientTokens
                )
            )
            if self.goAwayAfterEach {
                server.schedule(.goAway(errorCode: .noError, reason: .shutdown), afterRequests: 0, count: .max)
            }
            print(server.port)
            fflush(nil)
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
    }
}
