import ForgeTestSupport
import Foundation
import Testing

/// Runs the built `apnsctl` binary, as a shell user would.
enum CommandRunner {
    typealias Result = ChildProcess.Result

    /// `apnsctl` sits beside the test bundle in the build products folder; `FORGE_APNSCTL` names
    /// another one to test instead, such as the release binary `make dist` builds.
    static let binary: URL = ProcessInfo.processInfo.environment["FORGE_APNSCTL"].map { URL(fileURLWithPath: $0) }
        ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("apnsctl")

    /// Whether the binary under test is `FORGE_APNSCTL`'s: a release build of a commit (make dist),
    /// whose `--version` names the commit and whose demo says it is a release build.
    static let testsARelease = ProcessInfo.processInfo.environment["FORGE_APNSCTL"] != nil

    /// The test process's environment without APNS_* and proxy variables (a developer's own settings
    /// must not change what a test sees), plus `extra`.
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        let proxyVariables: Set = ["https_proxy", "http_proxy", "all_proxy", "no_proxy"]
        return ProcessInfo.processInfo.environment
            .filter { !$0.key.hasPrefix("APNS_") && !proxyVariables.contains($0.key.lowercased()) }
            .merging(extra) { $1 }
    }

    /// Runs apnsctl (or `binary`) with `arguments`, an environment without APNS_* variables plus
    /// `environment`, and optional standard input, in `currentDirectory` (nil: the test's). Bounded:
    /// the process is terminated after `timeout` seconds.
    static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        stdin: [UInt8]? = nil,
        binary: URL = Self.binary,
        currentDirectory: URL? = nil,
        timeout: TimeInterval = 30
    ) throws -> Result {
        try ChildProcess.run(
            binary, arguments, environment: Self.environment(environment), standardInput: .bytes(stdin ?? []),
            currentDirectory: currentDirectory, timeout: .seconds(timeout)
        )
    }

    /// A copy of apnsctl in `folder` (a hard link when possible), as an installed binary far from
    /// the checkout: run from there it can find nothing of the repository.
    static func installedCopy(in folder: TemporaryFolder) throws -> URL {
        let copy = folder.url.appendingPathComponent("apnsctl")
        do {
            try FileManager.default.linkItem(at: Self.binary, to: copy)
        } catch {
            try FileManager.default.copyItem(at: Self.binary, to: copy)
        }
        return copy
    }
}

extension ServerProcess {
    /// `apnsctl serve --port 0` with `arguments`; its first stdout line is the port. Unless the
    /// arguments choose (`--cert`, `--h2c`, `--write-ca`), it serves keys-example's server
    /// certificate, so that the tests' clients trust it with keys-example/ca.pem.
    convenience init(_ arguments: [String]) throws {
        let chooses = arguments.contains { ["--cert", "--h2c", "--write-ca"].contains($0) }
        let certificate = chooses ? [] : ["--cert", KeysExample.path("server.pem"), "--key", KeysExample.path("server.key")]
        try self.init(executable: CommandRunner.binary, arguments: ["serve", "--port", "0"] + certificate + arguments)
    }

    /// `executable` as a server for an apnsctl test: the environment without APNS_* variables, and
    /// a server that outlives its stop signal fails the test.
    convenience init(
        executable: URL, arguments: [String], portPrefix: String = "", keepsInputOpen: Bool = false, currentDirectory: URL? = nil
    ) throws {
        try self.init(
            executable: executable, arguments: arguments, environment: CommandRunner.environment(), portPrefix: portPrefix,
            keepsInputOpen: keepsInputOpen, currentDirectory: currentDirectory, reportProblem: { Issue.record(Comment(rawValue: $0)) }
        )
    }
}

struct CLIFailureForTests: Error, CustomStringConvertible {
    var message: String
    var description: String { self.message }
}

/// Runs another program (curl, nghttp) with a bounded time, standard error merged into its output.
func runTool(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let result = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), arguments, mergesStandardError: true)
    return (result.exitCode, result.stdout)
}

/// A command line that must be refused before anything is sent: its exit code and a piece of its
/// message (the tables of APNSCtlTests, SendTests and InputValidationTests).
struct BadInput: Sendable, CustomTestStringConvertible {
    var name: String
    var arguments: [String]
    var exitCode: Int32
    var message: String
    var testDescription: String { self.name }
}
