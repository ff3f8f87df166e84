public import Foundation
internal import ForgeSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A program a test runs as a child process (the built `apnsctl`, openssl, curl, nghttp, nghttpd,
/// a Python server): arguments, environment and standard input as given, standard output and
/// error read from the start, and every wait bounded.
///
/// Waits poll ``isRunning`` (Foundation's view and the kernel's) and give up after a bound. Never
/// `Process.waitUntilExit()`: when Foundation misses a child's exit (seen under AddressSanitizer,
/// and after SIGKILL), that spins its run loop for ever and the test process hangs instead of failing.
///
/// Output is read by two threads of their own from the moment the child starts, so a child that
/// writes much cannot block on a full pipe, and no thread of the cooperative pool ever blocks on a
/// read. The child is killed when the last reference goes away.
public final class ChildProcess: Sendable {
    /// What the child reads on its standard input.
    public enum StandardInput: Sendable {
        /// The test process's own standard input (for programs that behave differently when it is
        /// at its end, such as `openssl s_server`, which stops at end of input).
        case inherited
        /// /dev/null: end of input at once.
        case nullDevice
        /// These bytes, written from another thread, then end of input (empty: end of input at once).
        case bytes([UInt8])
        /// A pipe held open until ``closeStandardInput()``, ``terminate(grace:)`` or ``kill()``:
        /// for servers that stop when their input ends. Even a test process that dies leaves no such
        /// server behind, and a server started with SIGTERM blocked (a child of this process may
        /// inherit a blocked SIGTERM) can still be stopped.
        case heldOpen
    }

    /// How a child ended and what it wrote.
    public struct Result: Sendable {
        /// The exit status (the signal's number when a signal ended it), or -1 when Foundation still
        /// reported the process running after the last bounded wait.
        public var exitCode: Int32
        /// Everything written to standard output (with `mergesStandardError`, to either stream, in order).
        public var stdout: String
        /// Everything written to standard error (empty with `mergesStandardError`).
        public var stderr: String

        public init(exitCode: Int32, stdout: String, stderr: String) {
            self.exitCode = exitCode
            self.stdout = stdout
            self.stderr = stderr
        }
    }

    /// What the reading threads have read so far.
    private struct Captured {
        var stdout: [UInt8] = []
        var stderr: [UInt8] = []
        /// Streams not yet at their end.
        var open: Int
    }

    /// How long ``kill()`` waits for Foundation to see the exit after SIGKILL.
    private static let exitAfterKill: Duration = .seconds(10)

    private let process: Process
    /// The pipe of a ``StandardInput/heldOpen`` standard input.
    private let heldInput: Pipe?
    private let captured: LockedBox<Captured>

    /// Starts `executable`.
    /// - Parameters:
    ///   - environment: the whole environment; nil inherits the test process's.
    ///   - mergesStandardError: standard error goes to the same pipe as standard output, as `2>&1`.
    ///   - currentDirectory: its working directory; nil inherits the test process's.
    public init(
        executable: URL,
        arguments: [String],
        environment: [String: String]? = nil,
        standardInput: StandardInput = .nullDevice,
        mergesStandardError: Bool = false,
        currentDirectory: URL? = nil
    ) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let out = Pipe()
        let err = mergesStandardError ? out : Pipe()
        process.standardOutput = out
        process.standardError = err
        let input: Pipe?
        switch standardInput {
        case .inherited:
            input = nil
        case .nullDevice:
            input = nil
            process.standardInput = FileHandle.nullDevice
        case .bytes, .heldOpen:
            input = Pipe()
            process.standardInput = input
        }
        self.process = process
        if case .heldOpen = standardInput { self.heldInput = input } else { self.heldInput = nil }
        self.captured = LockedBox(Captured(open: mergesStandardError ? 1 : 2))
        try process.run()
        Self.startReading(out.fileHandleForReading, isStandardError: false, into: self.captured)
        if !mergesStandardError { Self.startReading(err.fileHandleForReading, isStandardError: true, into: self.captured) }
        if case .bytes(let bytes) = standardInput, let writer = input?.fileHandleForWriting {
            // From another thread: a child that does not read its input must not block the test.
            Thread {
                if !bytes.isEmpty { try? writer.write(contentsOf: bytes) }
                try? writer.close()
            }.start()
        }
    }

    /// Starts `executable` (a path) with the test process's environment and standard input, standard
    /// error merged into standard output: the shape a test wants for a helper such as nghttpd or curl.
    public convenience init(_ executable: String, _ arguments: [String]) throws {
        try self.init(
            executable: URL(fileURLWithPath: executable), arguments: arguments, standardInput: .inherited,
            mergesStandardError: true
        )
    }

    deinit { self.kill() }

    /// Runs `executable` to its end, at most `timeout` (then ``terminate(grace:)``), and returns how
    /// it ended. Blocks the calling thread: from async code, prefer `finish(timeout:) async`.
    public static func run(
        _ executable: URL,
        _ arguments: [String],
        environment: [String: String]? = nil,
        standardInput: StandardInput = .nullDevice,
        mergesStandardError: Bool = false,
        currentDirectory: URL? = nil,
        timeout: Duration = .seconds(60)
    ) throws -> Result {
        try ChildProcess(
            executable: executable, arguments: arguments, environment: environment, standardInput: standardInput,
            mergesStandardError: mergesStandardError, currentDirectory: currentDirectory
        ).finish(timeout: timeout)
    }

    /// The child's process identifier.
    public var processIdentifier: Int32 { self.process.processIdentifier }

    /// Whether the child still runs: Foundation reports it running, and the kernel does too (it is
    /// neither gone nor a zombie waiting to be reaped; see ``hasExitedPerKernel``).
    public var isRunning: Bool { self.process.isRunning && !self.hasExitedPerKernel }

    /// Whether the kernel says the child has exited although Foundation has not reaped it yet: its
    /// `/proc` entry is gone or in state `Z`. Foundation sometimes sees an exit late or never (under
    /// AddressSanitizer, after SIGKILL); a wait that trusted it alone held its thread for its whole
    /// bound, and two such waits on the cooperative pool of a 2-core machine stall every test.
    private var hasExitedPerKernel: Bool {
        #if os(Linux)
        let pid = self.process.processIdentifier
        guard pid > 0 else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        // `pid (comm) S …`: the state follows the last `)` (the command name may hold one).
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].drop(while: { $0 == " " }).first == "Z"
        #else
        return false
        #endif
    }

    /// The program's file name, for messages.
    public var name: String { self.process.executableURL?.lastPathComponent ?? "child" }

    /// Sends `signal` to the child while it runs (``isRunning``; once it has exited and is reaped,
    /// its process identifier may belong to another process).
    public func signal(_ signal: Int32) {
        guard self.isRunning else { return }
        sendSignal(signal, to: self.process.processIdentifier)
    }

    /// Ends a ``StandardInput/heldOpen`` standard input; nothing otherwise.
    public func closeStandardInput() {
        try? self.heldInput?.fileHandleForWriting.close()
    }

    /// Waits at most `timeout` for the child to exit, blocking the calling thread; whether it exited.
    @discardableResult
    public func waitForExit(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while self.isRunning {
            guard ContinuousClock.now < deadline else { return false }
            usleep(2_000)
        }
        return true
    }

    /// Waits at most `timeout` for the child to exit, without holding a thread of the cooperative
    /// pool (a blocked pool thread stalls every other test on a 2-core machine); whether it exited.
    /// Stops waiting early when the task is cancelled.
    @discardableResult
    public func waitForExit(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while self.isRunning {
            guard ContinuousClock.now < deadline, (try? await Task.sleep(for: .milliseconds(5))) != nil else {
                return !self.isRunning
            }
        }
        return true
    }

    /// Ends the child: closes a held standard input, sends SIGTERM, allows `grace`, then ``kill()``.
    /// Whether Foundation saw it exit.
    @discardableResult
    public func terminate(grace: Duration = .seconds(10)) -> Bool {
        self.closeStandardInput()
        guard self.isRunning else { return true }
        self.signal(SIGTERM)
        return self.waitForExit(timeout: grace) || self.kill()
    }

    /// Ends the child at once (SIGKILL; some servers, such as nghttpd with open connections, ignore
    /// SIGTERM) and waits at most 10 s for Foundation to see it exit. Whether it did.
    @discardableResult
    public func kill() -> Bool {
        self.closeStandardInput()
        guard self.isRunning else { return true }
        sendSignal(SIGKILL, to: self.process.processIdentifier)
        return self.waitForExit(timeout: Self.exitAfterKill)
    }

    /// Waits at most `timeout` for the child to exit (then ``terminate(grace:)``) and returns how it
    /// ended. Blocks the calling thread.
    public func finish(timeout: Duration = .seconds(60)) -> Result {
        if !self.waitForExit(timeout: timeout) { self.terminate() }
        return self.result()
    }

    /// Waits at most `timeout` for the child to exit (then ``terminate(grace:)``) and returns how it
    /// ended, without holding a thread of the cooperative pool while it runs.
    public func finish(timeout: Duration = .seconds(60)) async -> Result {
        if await !self.waitForExit(timeout: timeout) { self.terminate() }
        return self.result()
    }

    /// Standard output so far (with `mergesStandardError`, both streams).
    public var standardOutputSoFar: String {
        self.captured.withLock { String(decoding: $0.stdout, as: UTF8.self) }
    }

    /// Standard error so far.
    public var standardErrorSoFar: String {
        self.captured.withLock { String(decoding: $0.stderr, as: UTF8.self) }
    }

    /// Waits at most `timeout` until standard output contains `text`, or has ended without it;
    /// whether it contains `text`. Blocks the calling thread.
    public func waitForStandardOutput(containing text: String, timeout: Duration) -> Bool {
        let needle = Array(text.utf8)
        return self.wait(for: \.stdout, timeout: timeout) { $0.firstRange(of: needle) != nil }
    }

    /// The same for standard error.
    public func waitForStandardError(containing text: String, timeout: Duration) -> Bool {
        let needle = Array(text.utf8)
        return self.wait(for: \.stderr, timeout: timeout) { $0.firstRange(of: needle) != nil }
    }

    /// Waits at most `timeout` until standard output has `count` complete lines, or has ended
    /// without them; whether it has them. Blocks the calling thread.
    public func waitForStandardOutput(lines count: Int, timeout: Duration) -> Bool {
        self.wait(for: \.stdout, timeout: timeout) { bytes in bytes.lazy.filter { $0 == UInt8(ascii: "\n") }.count >= count }
    }

    private func wait(for stream: KeyPath<Captured, [UInt8]>, timeout: Duration, until done: ([UInt8]) -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (found, ended) = self.captured.withLock { captured in
                (done(captured[keyPath: stream]), captured.open == 0)
            }
            if found { return true }
            if ended || ContinuousClock.now >= deadline { return false }
            usleep(2_000)
        }
    }

    /// How the child ended: waits at most 10 s for the output to reach its end once the child has
    /// exited (a grandchild may still hold the pipes), then takes what was read.
    /// A child the kernel reports exited gets up to 2 s for Foundation to reap it and learn its status.
    private func result() -> Result {
        if !self.isRunning {
            let reaped = ContinuousClock.now + .seconds(2)
            while self.process.isRunning, ContinuousClock.now < reaped { usleep(1_000) }
            let deadline = ContinuousClock.now + .seconds(10)
            while self.captured.withLock({ $0.open > 0 }), ContinuousClock.now < deadline { usleep(1_000) }
        }
        let running = self.process.isRunning
        return self.captured.withLock { captured in
            Result(
                exitCode: running ? -1 : self.process.terminationStatus,
                stdout: String(decoding: captured.stdout, as: UTF8.self),
                stderr: String(decoding: captured.stderr, as: UTF8.self)
            )
        }
    }

    /// Reads `handle` to its end on a thread of its own (not Dispatch's pool, which the tests share),
    /// keeping each chunk as soon as it arrives. With read(2): `FileHandle.read(upToCount:)` waits
    /// for the whole count, so a server's port line would only be seen once the server exits.
    private static func startReading(_ handle: FileHandle, isStandardError: Bool, into captured: LockedBox<Captured>) {
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(handle.fileDescriptor, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }  // end of file, or an error: nothing more will come
                captured.withLock { captured in
                    if isStandardError {
                        captured.stderr += buffer[..<count]
                    } else {
                        captured.stdout += buffer[..<count]
                    }
                }
            }
            captured.withLock { $0.open -= 1 }
        }.start()
    }
}

/// What a child process could not do (print its port, open a socket) and what it wrote meanwhile.
public struct ChildProcessError: Error, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { self.message }
}

/// `kill(2)`, outside `ChildProcess`, whose own `kill()` would shadow it.
private func sendSignal(_ signal: Int32, to pid: Int32) {
    _ = kill(pid, signal)
}
