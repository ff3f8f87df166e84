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
