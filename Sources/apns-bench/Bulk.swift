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
    /// 1,000,000 tokens through sendBulk, streamed: rate and peak RSS.
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
                h2load = try H2Load.runAPNS(server: server, requests: self.tokens, connections: self.h2loadConnections, inFlight: self.inFlight)
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
