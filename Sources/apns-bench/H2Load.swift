import ArgumentParser
import ForgeAPNsCore
import ForgeCrypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs h2load (C connections, K streams each) against a target and reads its figures.
enum H2Load {
    struct Result {
        var requestsPerSecond: Double
        var cpuMicroseconds: Double
        var meanLatencyMilliseconds: Double
        var succeeded: Int
        var failed: Int
    }

    /// h2load against the APNs-like server at `server` (`https://host:port` or `http://…`): `requests`
    /// alert pushes to one device token, with a provider token signed by keys-example's FORGEKEY01 (as
    /// the benchmark clients use), over `connections` connections with `inFlight` streams each.
    static func runAPNS(server: URL, requests: Int, connections: Int, inFlight: Int) throws -> Result {
        let key = try APNSSigningKey(contentsOfFile: "keys-example/AuthKey_FORGEKEY01.p8")
        let jwt = try APNSProviderToken.sign(keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1"), issuedAt: Date(), key: key)
        let device = URL(string: "\(server.absoluteString)/3/device/\(String(repeating: "ab", count: 32))")!
        return try Self.run(target: device, requests: requests, connections: connections, inFlight: inFlight,
                            headers: ["authorization: \(jwt.authorizationHeaderValue)"])
    }

    /// - Parameters:
    ///   - connections: h2load's `-c`.
    ///   - inFlight: h2load's `-m`, streams per connection.
    ///   - headers: extra request headers (`name: value`), for example a provider token.
    static func run(target: URL, requests: Int, connections: Int = 1, inFlight: Int, headers: [String]) throws -> Result {
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("apns-bench-body-\(getpid()).json")
        try Data(#"{"aps":{"alert":{"title":"Benchmark","body":"Hello from ForgePush"}}}"#.utf8).write(to: body)
        defer { try? FileManager.default.removeItem(at: body) }
        return try Self.run(arguments: [
            "-n", String(requests), "-c", String(connections), "-m", String(inFlight), "-d", body.path,
            "-H", "apns-push-type: alert", "-H", "apns-topic: com.example.forgepush",
        ] + headers.flatMap { ["-H", $0] } + [target.absoluteString])
    }

    /// Runs h2load with `arguments` (the target's URIs among them) and reads its figures.
    static func run(arguments: [String]) throws -> Result {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
        let before = Bench.microseconds(usage)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/h2load")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
        return try Self.parse(output, cpu: Bench.microseconds(usage) - before)
    }

    /// h2load's figures from its output; `cpu`: its CPU time in µs.
    private static func parse(_ output: String, cpu: Double) throws -> Result {
        func number(after marker: String, in line: Substring) -> Double? {
            guard let range = line.range(of: marker) else { return nil }
            return Double(line[range.upperBound...].split(separator: " ").first ?? "")
        }
        var rate = 0.0, mean = 0.0, succeeded = 0, failed = 0
        for line in output.split(separator: "\n") {
            if line.hasPrefix("finished in"), let value = line.split(separator: ",").dropFirst().first?
                .trimmingCharacters(in: .whitespaces).split(separator: " ").first {
                rate = Double(value) ?? 0
            }
            if line.hasPrefix("requests:") {
                succeeded = Int(number(after: "done, ", in: line) ?? 0)
                failed = Int(number(after: "succeeded, ", in: line) ?? 0)
                succeeded = Int(line.split(separator: ",").first(where: { $0.contains("succeeded") })?
                    .trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "0") ?? 0
            }
            if line.hasPrefix("time for request:") {
                let fields = line.dropFirst("time for request:".count).split(separator: " ")
                if fields.count >= 3 { mean = Self.milliseconds(fromH2Load: String(fields[2])) }
            }
        }
        guard rate > 0 else { throw ValidationError("h2load did not run: \(output)") }
        return Result(requestsPerSecond: rate, cpuMicroseconds: cpu, meanLatencyMilliseconds: mean, succeeded: succeeded, failed: failed)
    }

    static func milliseconds(fromH2Load text: String) -> Double {
        if text.hasSuffix("us") { return (Double(text.dropLast(2)) ?? 0) / 1000 }
        if text.hasSuffix("ms") { return Double(text.dropLast(2)) ?? 0 }
        if text.hasSuffix("s") { return (Double(text.dropLast(1)) ?? 0) * 1000 }
        return 0
    }
}

extension H2Load.Result {
    /// The JSON fields of this h2load run beside ForgePush's (`rate` per second, `cpu` µs per
    /// request, over `requests`): its figures and the two ratios.
    func jsonFields(requests: Int, connections: Int, streams: Int, rate: Double, cpu: Double) -> [String] {
        let h2cpu = self.cpuMicroseconds / Double(max(1, requests))
        return [
            "\"h2load\":{\"connections\":\(connections),\"streams\":\(streams),"
                + "\"requests_per_s\":\(Int(self.requestsPerSecond)),\"cpu_us_per_request\":\(Bench.format(h2cpu)),"
                + "\"succeeded\":\(self.succeeded),\"failed\":\(self.failed)}",
            "\"ratio_rate\":\(Bench.format(rate / self.requestsPerSecond, digits: 3))",
            "\"ratio_cpu\":\(Bench.format(cpu / max(h2cpu, 0.001), digits: 3))",
        ]
    }
}
