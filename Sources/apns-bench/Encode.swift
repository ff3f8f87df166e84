import ArgumentParser
import ForgeAPNsCore
import Foundation

extension APNSBench {
    /// How fast requests are built: the payload once per notification, headers and path per token.
    struct Encode: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure payload encoding and per-token request building.",
            discussion: """
                Cases: prepare-alert (validate + encode an alert with custom keys), prepare-liveactivity \
                (a Live Activity update with a typed content state), parse-token (validate a hex token string), \
                request-for-token (the per-token cost of a bulk send: the prepared notification is reused).
                """
        )

        @Option(name: .long, help: "Operations per case.")
        var iterations = 1_000_000

        @Flag(name: .long, help: "Print one JSON object.")
        var json = false

        @Option(name: .customLong("case"), help: "Run only the named cases (repeatable).")
        var cases: [String] = []

        private func wants(_ name: String) -> Bool { self.cases.isEmpty || self.cases.contains(name) }

        struct ScoreState: Encodable, Sendable {
            var home: Int
            var away: Int
            var minute: Int
            var lastEvent: String
        }

        func run() throws {
            Bench.warnIfDebug()
            let bundle = try APNSBundleID("com.example.forgepush")
            let tokenStrings = (0..<1024).map { index in
                String(repeating: "0", count: 56) + String(format: "%08x", index)
            }
            let tokens = try tokenStrings.map { try DeviceToken($0) }
            let alert = APNSAlertNotification(
                alert: APNSAlert(title: "Your order shipped", body: "Order A-17 is on its way and arrives tomorrow."),
                topic: bundle, badge: 1, sound: .default, threadID: "orders", category: "ORDER",
                payload: ["order-id": "A-17", "deep-link": "app://orders/A-17"]
            )
            let prepared = try alert.prepared()
            let encodeIterations = max(1, self.iterations / 20)  // Foundation encoding is the slow part

            var results: [Bench.Result] = []
            if self.wants("prepare-alert") {
            results.append(
                try Bench.measure("prepare-alert", operations: encodeIterations) { count in
                    var bytes = 0
                    for _ in 0..<count { bytes &+= try alert.prepared().body.count }
                    return bytes
                }
            )
            }
            let update = APNSLiveActivityNotification(
                event: .update, contentState: ScoreState(home: 2, away: 1, minute: 67, lastEvent: "Goal"),
                timestamp: Date(timeIntervalSince1970: 1_760_000_000), topic: bundle,
                staleDate: Date(timeIntervalSince1970: 1_760_000_900), priority: .consideringDevicePower
            )
            if self.wants("prepare-liveactivity") {
            results.append(
                try Bench.measure("prepare-liveactivity", operations: encodeIterations) { count in
                    var bytes = 0
                    for _ in 0..<count { bytes &+= try update.prepared().body.count }
                    return bytes
                }
            )
            }
            if self.wants("parse-token") {
            results.append(
                try Bench.measure("parse-token", operations: self.iterations) { count in
                    var total = 0
                    for index in 0..<count { total &+= try DeviceToken(tokenStrings[index & 1023]).hexString.utf8.count }
                    return total
                }
            )
            }
            if self.wants("request-for-token") {
            results.append(
                Bench.measure("request-for-token", operations: self.iterations) { count in
                    var total = 0
                    for index in 0..<count { total &+= prepared.request(to: tokens[index & 1023]).path.utf8.count }
                    return total
                }
            )
            }
            self.report(results)
        }

        private func report(_ results: [Bench.Result]) {
            if self.json {
                let cases = results.map { result in
                    "{\"name\":\"\(result.name)\",\"operations\":\(result.operations),"
                        + "\"ops_per_s\":\(Int(result.operationsPerSecond)),"
                        + "\"ns_per_op\":\(String(format: "%.1f", result.nanosecondsPerOperation)),"
                        + "\"cpu_ns_per_op\":\(String(format: "%.1f", result.cpuNanosecondsPerOperation))}"
                }
                print("{\"benchmark\":\"encode\",\"cases\":[\(cases.joined(separator: ","))],"
                    + "\"peak_rss_mib\":\(String(format: "%.1f", Bench.peakRSSMiB()))}")
                return
            }
            print("case                      operations        ops/s     ns/op  cpu ns/op")
            for result in results {
                print(
                    result.name.padding(toLength: 22, withPad: " ", startingAt: 0)
                        + String(format: "%14d %12.0f %9.1f %10.1f", result.operations, result.operationsPerSecond,
                                 result.nanosecondsPerOperation, result.cpuNanosecondsPerOperation)
                )
            }
            print(String(format: "peak RSS %.1f MiB", Bench.peakRSSMiB()))
        }
    }
}
