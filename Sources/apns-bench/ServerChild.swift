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
        let (process, port, _) = try self.start(arguments, input: nil)
        return (process, port)
    }

    /// Starts the `apns-server` child with `--answer-counts`: the third value asks it how many
    /// pushes it has accepted.
    static func startCounting(_ arguments: [String]) throws -> (Process, Int, AcceptedCount) {
        let input = Pipe()
        let (process, port, output) = try self.start(arguments + ["--answer-counts"], input: input)
        return (process, port, AcceptedCount(input: input.fileHandleForWriting, output: output))
    }

    /// The pushes the counting child has accepted so far, asked through its stdin and read from its stdout.
    struct AcceptedCount {
        let input: FileHandle
        let output: FileHandle

        func read() throws -> Int {
            try self.input.write(contentsOf: Data([0x0a]))
            guard let count = Int(String(decoding: ServerChild.line(self.output), as: UTF8.self)) else {
                throw ValidationError("the benchmark server did not answer with its count")
            }
            return count
        }
    }

    private static func start(_ arguments: [String], input: Pipe?) throws -> (Process, Int, FileHandle) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        if let input { process.standardInput = input }
        try process.run()
        guard let port = Int(String(decoding: self.line(pipe.fileHandleForReading), as: UTF8.self)) else {
            process.terminate()
            throw ValidationError("the benchmark server (\(arguments.joined(separator: " "))) did not start")
        }
        return (process, port, pipe.fileHandleForReading)
    }

    /// One line of `handle`, read a byte at a time (nothing after it is consumed).
    private static func line(_ handle: FileHandle) -> Data {
        var line = Data()
        while true {
            let byte = handle.readData(ofLength: 1)
            if byte.isEmpty || byte == Data([0x0a]) { break }
            line.append(byte)
        }
        return line
    }
}
