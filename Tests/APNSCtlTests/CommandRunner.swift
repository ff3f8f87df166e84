import Foundation

/// Runs the built `apnsctl` binary, as a shell user would.
struct CommandRunner {
    struct Result {
        var exitCode: Int32
        var stdout: String
        var stderr: String
    }

    /// The folder of the package, for keys-example/ and the fixtures.
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let keysExample = packageRoot.appendingPathComponent("keys-example")

    /// `apnsctl` sits beside the test bundle in the build products folder.
    static let binary: URL = URL(fileURLWithPath: CommandLine.arguments[0])
        .deletingLastPathComponent().appendingPathComponent("apnsctl")

    /// Runs apnsctl with `arguments`, an environment without APNS_* variables plus `environment`,
    /// and optional standard input. Bounded: the process is killed after `timeout` seconds.
    static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        stdin: [UInt8]? = nil,
        timeout: TimeInterval = 30
    ) throws -> Result {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("APNS_") }
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin)) }
        try input.fileHandleForWriting.close()
        // Read both pipes to the end before waiting, so a large output cannot block the child.
        let group = DispatchGroup()
        nonisolated(unsafe) var stdoutData = Data()
        nonisolated(unsafe) var stderrData = Data()
        group.enter()
        DispatchQueue.global().async {
            stdoutData = out.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        group.enter()
        DispatchQueue.global().async {
            stderrData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            group.wait()
        }
        process.waitUntilExit()
        return Result(
            exitCode: process.terminationStatus,
            stdout: String(decoding: stdoutData, as: UTF8.self),
            stderr: String(decoding: stderrData, as: UTF8.self)
        )
    }
}
