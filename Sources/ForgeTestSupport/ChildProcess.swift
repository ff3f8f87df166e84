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
        /// The exit status (the signal's number when a signal ended it), or -1 when the child still
        /// ran after the last bounded wait.
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

    /// How long ``kill()`` waits for the exit after SIGKILL.
    private static let exitAfterKill: Duration = .seconds(10)

    private let process: Process
    /// The writing end of a ``StandardInput/heldOpen`` standard input.
    private let heldInput: FileHandle?
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
        let out = try ClosedOnExecPipe()
        let err = mergesStandardError ? out : try ClosedOnExecPipe()
        process.standardOutput = out.writing
        process.standardError = err.writing
        let input: ClosedOnExecPipe?
        switch standardInput {
        case .inherited:
            input = nil
        case .nullDevice:
            input = nil
            process.standardInput = FileHandle.nullDevice
        case .bytes, .heldOpen:
            input = try ClosedOnExecPipe()
            process.standardInput = input?.reading
        }
        self.process = process
        if case .heldOpen = standardInput { self.heldInput = input?.writing } else { self.heldInput = nil }
        self.captured = LockedBox(Captured(open: mergesStandardError ? 1 : 2))
        try process.run()
        // The child has its own copies now; without closing these, its output would never end.
        try? out.writing.close()
        if !mergesStandardError { try? err.writing.close() }
        try? input?.reading.close()
        Self.startReading(out.reading, isStandardError: false, into: self.captured)
        if !mergesStandardError { Self.startReading(err.reading, isStandardError: true, into: self.captured) }
        if case .bytes(let bytes) = standardInput, let writer = input?.writing {
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
    /// `/proc` entry is gone, or in state `Z` (exited, not reaped) or `X` (being reaped: seen in
    /// CI for the moment between Foundation's `waitpid` and the entry going away). Foundation
    /// sometimes sees an exit late or never (under AddressSanitizer, after SIGKILL); a wait that
    /// trusted it alone held its thread for its whole bound, and two such waits on the cooperative
    /// pool of a 2-core machine stall every test.
    private var hasExitedPerKernel: Bool {
        #if os(Linux)
        let pid = self.process.processIdentifier
        guard pid > 0 else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else {
            // Gone only if its /proc entry is: a read can also fail for this process's own reasons
            // (every descriptor in use while many tests run at once), and a child still running
            // must not be reported as exited then. `fileExists` needs no descriptor.
            return !FileManager.default.fileExists(atPath: "/proc/\(pid)")
        }
        // `pid (comm) S …`: the state follows the last `)` (the command name may hold one).
        guard let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].drop(while: { $0 == " " }).first
        return state == "Z" || state == "X" || state == "x"
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
        try? self.heldInput?.close()
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
    /// Whether it exited.
    @discardableResult
    public func terminate(grace: Duration = .seconds(10)) -> Bool {
        self.closeStandardInput()
        guard self.isRunning else { return true }
        self.signal(SIGTERM)
        return self.waitForExit(timeout: grace) || self.kill()
    }

    /// Ends the child at once (SIGKILL; some servers, such as nghttpd with open connections, ignore
    /// SIGTERM) and waits at most 10 s for it to exit. Whether it did.
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
        let exited = self.waitForExit(timeout: timeout) || self.terminate()
        return self.result(exited: exited)
    }

    /// Waits at most `timeout` for the child to exit (then ``terminate(grace:)``) and returns how it
    /// ended, without holding a thread of the cooperative pool while it runs.
    public func finish(timeout: Duration = .seconds(60)) async -> Result {
        let exited = await self.waitForExit(timeout: timeout) || self.terminate()
        return self.result(exited: exited)
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

    /// The same for standard error.
    public func waitForStandardError(lines count: Int, timeout: Duration) -> Bool {
        self.wait(for: \.stderr, timeout: timeout) { bytes in bytes.lazy.filter { $0 == UInt8(ascii: "\n") }.count >= count }
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

    /// How the child ended, once a wait saw it exit (`exited`): its exit status, then at most 10 s
    /// for the output to reach its end (a grandchild may still hold the pipes), then what was read.
    /// Not ``isRunning`` again: the kernel's view of an exit can be read a moment before the
    /// state Foundation reports, and a second look could land in between.
    private func result(exited: Bool) -> Result {
        var exitCode: Int32?
        if exited {
            exitCode = self.exitStatus(within: .seconds(10))
            let deadline = ContinuousClock.now + .seconds(10)
            while self.captured.withLock({ $0.open > 0 }), ContinuousClock.now < deadline { usleep(1_000) }
        }
        return self.captured.withLock { captured in
            Result(
                exitCode: exitCode ?? -1,
                stdout: String(decoding: captured.stdout, as: UTF8.self),
                stderr: String(decoding: captured.stderr, as: UTF8.self)
            )
        }
    }

    /// The status of a child that has exited, from Foundation once it has reaped the child, or else
    /// from the kernel without reaping it (Foundation still will). Foundation learns of an exit only
    /// when a socket the child holds closes, and a child another thread spawned at the same moment
    /// may inherit that socket and hold it for its whole life (seen in CI: a test's `apnsctl` had
    /// exited, but Foundation still said it ran 2 s later, while a server started beside it lived on).
    private func exitStatus(within bound: Duration) -> Int32? {
        let deadline = ContinuousClock.now + bound
        while true {
            if !self.process.isRunning { return self.process.terminationStatus }
            if let status = self.exitStatusPerKernel { return status }
            guard ContinuousClock.now < deadline else { return nil }
            usleep(1_000)
        }
    }

    /// `waitid(WNOWAIT)`: the exit status (or the signal's number) of a child waiting to be reaped,
    /// leaving it to be reaped; nil while it runs, or once Foundation has reaped it.
    private var exitStatusPerKernel: Int32? {
        #if os(Linux)
        let pid = self.process.processIdentifier
        guard pid > 0 else { return nil }
        var info = siginfo_t()
        var answer: Int32
        repeat {
            answer = waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT)
        } while answer == -1 && errno == EINTR
        guard answer == 0, info._sifields._sigchld.si_pid == pid else { return nil }
        switch Int(info.si_code) {
        case Int(CLD_EXITED), Int(CLD_KILLED), Int(CLD_DUMPED): return info._sifields._sigchld.si_status
        default: return nil
        }
        #else
        return nil
        #endif
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

/// A pipe whose two ends close on exec. Foundation's `Pipe` leaves them open, and a child another
/// thread spawns at that moment inherits them (Foundation closes only the descriptors that existed
/// when it prepared that spawn): the output of this child would then end only when that one exits.
/// Foundation still gives this child its end, by dup2 onto 0, 1 or 2, which clears the flag.
private struct ClosedOnExecPipe {
    let reading: FileHandle
    let writing: FileHandle

    init() throws {
        // pipe2(O_CLOEXEC) would be atomic, but Glibc's module does not export it; the flag set a
        // moment later still shuts all but a window of a few instructions.
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw ChildProcessError("pipe failed: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.reading = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        self.writing = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
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
