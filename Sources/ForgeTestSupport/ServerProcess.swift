public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A server program running in the background for a test (`apnsctl serve`,
/// Tests/FaultServer/fault_server.py), whose first line on standard output is its port, stopped by
/// a signal. Every wait is bounded: for the port line, for the exit after the signal, for the exit
/// after SIGKILL.
public final class ServerProcess: Sendable {
    /// The running program.
    public let child: ChildProcess
    /// The port read from its first line.
    public let port: Int
    private let reportProblem: @Sendable (String) -> Void

    /// Starts `executable` and reads the port from its first stdout line, `<portPrefix><port>`,
    /// waiting at most `timeout` for it.
    /// - Parameters:
    ///   - environment: the whole environment; nil inherits the test process's.
    ///   - keepsInputOpen: gives the server a standard input that stays open until ``stop(signal:)``,
    ///     instead of /dev/null.
    ///   - currentDirectory: its working directory; nil inherits the test process's.
    ///   - reportProblem: told when the server outlives its stop signal (a test records an issue:
    ///     this module does not depend on a test framework).
    /// - Throws: ``ChildProcessError`` naming what it printed instead, and its standard error; the
    ///   server is killed first.
    public init(
        executable: URL,
        arguments: [String],
        environment: [String: String]? = nil,
        portPrefix: String = "",
        keepsInputOpen: Bool = false,
        currentDirectory: URL? = nil,
        timeout: Duration = .seconds(30),
        reportProblem: @escaping @Sendable (String) -> Void
    ) throws {
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment,
            standardInput: keepsInputOpen ? .heldOpen : .nullDevice, currentDirectory: currentDirectory
        )
        let printedLine = child.waitForStandardOutput(containing: "\n", timeout: timeout)
        let text = child.standardOutputSoFar.prefix { $0 != "\n" }
        guard printedLine, text.hasPrefix(portPrefix), let port = Int(text.dropFirst(portPrefix.count)) else {
            // Printed something else, exited, or printed nothing in time: gone either way.
            child.kill()
            let result = child.finish(timeout: .zero)
            throw ChildProcessError(
                "\(child.name) printed no port within \(timeout): '\(text)'; stderr: \(result.stderr)"
            )
        }
        self.child = child
        self.port = port
        self.reportProblem = reportProblem
    }

    /// Sends `signal` and returns the exit code and what was printed after the port line.
    ///
    /// First ends a held standard input, which stops a server that watches it even when it was
    /// started with the signal blocked. A server that outlives the signal by 30 s is reported and
    /// killed, so the test fails instead of hanging; one that Foundation still calls running 10 s
    /// after SIGKILL gives exit code -1.
    @discardableResult
    public func stop(signal: Int32 = SIGTERM) -> ChildProcess.Result {
        self.child.closeStandardInput()
        self.child.signal(signal)
        if !self.child.waitForExit(timeout: .seconds(30)) {
            self.reportProblem("\(self.child.name) was still running 30 s after signal \(signal); killed")
            self.child.kill()
        }
        var result = self.child.finish(timeout: .zero)
        if let endOfPortLine = result.stdout.firstIndex(of: "\n") {
            result.stdout = String(result.stdout[result.stdout.index(after: endOfPortLine)...])
        }
        return result
    }
}
