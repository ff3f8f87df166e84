import ArgumentParser
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeLiveActivitiesSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension APNSBench {
    /// `apnsctl activities serve` as a backend meets it: update requests over HTTP/1.1, timed by
    /// h2load, on a SQLite registry, with the APNs server in a child process.
    struct Gateway: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure apnsctl activities serve: update requests accepted per second on a SQLite registry (h2load over HTTP/1.1).",
            discussion: """
                Registers --activities activities straight in a SQLite registry (update-token reports, \
                as an app posts them), starts `apnsctl activities serve` on it (the apnsctl beside this \
                executable, or --apnsctl) against the APNs server child, then runs h2load --h1: \
                --requests POST /v1/activities/{id}/update over --connections connections, the ids in \
                turn. Each must answer 202; the gateway's delivery loop sends the coalesced pushes \
                meanwhile. Target: at least 5,000 accepted a second.

                  swift build -c release --product apns-bench --product apnsctl
                  .build/release/apns-bench gateway --rounds 3
                """
        )

        @Option(name: .long, help: "Activities in the registry, updated in turn.")
        var activities = 10_000

        @Option(name: .long, help: "Update requests in each round.")
        var requests = 50_000

        @Option(name: .long, help: "h2load's connections (each keeps one request at a time: HTTP/1.1).")
        var connections = 32

        @Option(name: .long, help: "Rounds, each on the same gateway.")
        var rounds = 3

        @Option(name: .long, help: "The apnsctl to run (default: the one beside this executable).")
        var apnsctl: String?

        @Flag(name: .long, help: "Print one JSON object per round, then one with the median.")
        var json = false

        static let target = 5_000.0

        func validate() throws {
            guard self.activities >= 1, self.requests >= 1, self.connections >= 1, self.rounds >= 1 else {
                throw ValidationError("--activities, --requests, --connections and --rounds must be at least 1.")
            }
        }

        func run() async throws {
            Bench.warnIfDebug()
            let apnsctl = self.apnsctl
                ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("apnsctl").path
            guard FileManager.default.isExecutableFile(atPath: apnsctl) else {
                throw ValidationError("--apnsctl: no apnsctl at \(apnsctl): build it (swift build -c release --product apnsctl)")
            }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-bench-gateway-\(getpid())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let registry = folder.appendingPathComponent("activities.sqlite").path
            let ids = try await self.register(registry)

            let (server, port) = try ServerChild.start(["apns-server"])
            defer { server.terminate() }
            let gateway = Process()
            gateway.executableURL = URL(fileURLWithPath: apnsctl)
            gateway.arguments = [
                "activities", "serve", "--store", "sqlite:" + registry, "--port", "0", "--url", "https://localhost:\(port)",
                "--ca-file", "keys-example/ca.pem", "--key-file", "keys-example/AuthKey_FORGEKEY01.p8", "--key-id", "FORGEKEY01",
                "--team-id", "FORGETEAM1",
            ]
            let output = Pipe()
            gateway.standardOutput = output
            gateway.standardError = FileHandle.nullDevice
            try gateway.run()
            defer {
                gateway.terminate()
                gateway.waitUntilExit()
            }
            var line = Data()
            while true {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data([0x0a]) { break }
                line.append(byte)
            }
            let base = String(decoding: line, as: UTF8.self)
            guard base.hasPrefix("http://") else { throw ValidationError("apnsctl activities serve did not start (its first line: \(base))") }

            let uris = folder.appendingPathComponent("uris.txt")
            try Data(ids.map { "\(base)/v1/activities/\($0.rawValue)/update\n" }.joined().utf8).write(to: uris)
            let body = folder.appendingPathComponent("update.json")
            try Data(#"{"content_state":{"status":"on the way","etaMinutes":12,"courier":"Sam"},"importance":"routine"}"#.utf8).write(to: body)

            var rates: [Double] = []
            for round in 1...self.rounds {
                let result = try H2Load.run(arguments: [
                    "--h1", "-n", String(self.requests), "-c", String(self.connections), "-m", "1", "-d", body.path,
                    "-H", "content-type: application/json", "-i", uris.path,
                ])
                guard result.succeeded == self.requests, result.failed == 0 else {
                    throw ValidationError("round \(round): \(result.succeeded) of \(self.requests) updates accepted, \(result.failed) failed")
                }
                rates.append(result.requestsPerSecond)
                if self.json {
                    print(#"{"benchmark":"gateway","round":\#(round),"activities":\#(self.activities),"requests":\#(self.requests),"#
                        + #""connections":\#(self.connections),"updates_per_s":\#(Int(result.requestsPerSecond)),"#
                        + #""mean_latency_ms":\#(Bench.format(result.meanLatencyMilliseconds, digits: 3))}"#)
                } else {
                    print(String(format: "round %d: %.0f updates accepted/s (%d × 202), mean %.2f ms", round, result.requestsPerSecond,
                                 result.succeeded, result.meanLatencyMilliseconds))
                }
            }
            let median = Bench.median(rates)
            if self.json {
                print(#"{"benchmark":"gateway","median":true,"rounds":\#(self.rounds),"updates_per_s":\#(Int(median))}"#)
            } else {
                print(String(format: "median of %d round(s): %.0f updates accepted/s; target ≥ %.0f/s: ", self.rounds, median, Self.target)
                    + (median >= Self.target ? "met" : "MISSED"))
            }
        }

        /// The activities, registered as an app reports them (16 at a time, so the store commits them together).
        private func register(_ path: String) async throws -> [LiveActivityID] {
            let store = try SQLiteLiveActivityStore(path: path)
            let manager = LiveActivityManager(store: store)
            let bundleID = try APNSBundleID("com.example.forgepush")
            let ids = try (0..<self.activities).map { index throws(LiveActivityError) in try LiveActivityID("activity-\(index)") }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<16 {
                    group.addTask {
                        for index in stride(from: task, to: ids.count, by: 16) {
                            let outcome = try await manager.report(.updateToken(
                                ids[index], token: GeneratedTokens.token(index), sequence: 1,
                                registration: try ActivityReport.Registration(bundleID: bundleID, attributesType: "DeliveryAttributes")
                            ))
                            guard outcome.applied else { throw ValidationError("report \(index) was not applied: \(outcome.why ?? "")") }
                        }
                    }
                }
                try await group.waitForAll()
            }
            return ids
        }
    }
}
