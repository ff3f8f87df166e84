import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A helper program (nghttpd, nghttp, h2load, curl) run by a test, killed when the test ends.
final class ExternalProcess {
    let process = Process()
    private let output = Pipe()

    init(_ executable: String, _ arguments: [String]) throws {
        self.process.executableURL = URL(fileURLWithPath: executable)
        self.process.arguments = arguments
        self.process.standardOutput = self.output
        self.process.standardError = self.output
        try self.process.run()
    }

    deinit { self.kill() }

    /// Ends the process at once (nghttpd ignores SIGTERM while it has connections), waiting at most
    /// 10 s for Foundation to see it exit. Not `waitUntilExit()`: when Foundation misses a child's
    /// exit (seen once under AddressSanitizer), that spins its run loop for ever.
    func kill() {
        guard self.process.isRunning else { return }
        Glibc.kill(self.process.processIdentifier, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(10)
        while self.process.isRunning, ContinuousClock.now < deadline { usleep(1_000) }
    }

    /// The exit status, or -1 while Foundation still reports the process running.
    private var status: Int32 { self.process.isRunning ? -1 : self.process.terminationStatus }

    /// The TCP port the process listens on, read from /proc once its listening socket appears.
    /// Waits at most `timeout` seconds, checking every few milliseconds without holding a thread of
    /// the cooperative pool (a blocked pool thread stalls every other test on a 2-core machine).
    func listeningPort(timeout: Duration = .seconds(30)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let port = Self.listeningPort(pid: self.process.processIdentifier) { return port }
            guard self.process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        // Ended (or killed here) first, so reading its output to the end cannot block.
        self.kill()
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "no listening socket: \(self.readOutput())"])
    }

    /// Waits for the process to exit and returns its status and output (bounded by `timeout`).
    func finish(timeout: Duration = .seconds(60)) async -> (status: Int32, output: String) {
        // Drain the output meanwhile: a process blocked on a full pipe would never exit.
        let output = self.output.fileHandleForReading
        let reader = Task.detached { output.readDataToEndOfFile() }
        let deadline = ContinuousClock.now + timeout
        while self.process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        self.kill()
        let data = await reader.value
        return (self.status, String(decoding: data, as: UTF8.self))
    }

    /// Everything the process wrote; call only once it has ended.
    private func readOutput() -> String {
        String(decoding: self.output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    private static func listeningPort(pid: Int32) -> Int? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { return nil }
        var inodes = Set<String>()
        for entry in entries {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(entry)"),
                target.hasPrefix("socket:[")
            else { continue }
            inodes.insert(String(target.dropFirst(8).dropLast()))
        }
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                // local_address is field 1 (ADDR:PORT in hex), st is field 3 (0A = LISTEN), inode is field 9.
                guard fields.count > 9, fields[3] == "0A", inodes.contains(String(fields[9])),
                    let portText = fields[1].split(separator: ":").last, let port = Int(portText, radix: 16)
                else { continue }
                return port
            }
        }
        return nil
    }
}
