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

    /// Ends the process at once (nghttpd ignores SIGTERM while it has connections).
    func kill() {
        if self.process.isRunning {
            Glibc.kill(self.process.processIdentifier, SIGKILL)
            self.process.waitUntilExit()
        }
    }

    /// The TCP port the process listens on, read from /proc once its listening socket appears.
    /// Waits at most `timeout` seconds, checking every few milliseconds (a readiness wait).
    func listeningPort(timeout: TimeInterval = 10) throws -> Int {
        let start = Date()
        while Date().timeIntervalSince(start) < timeout {
            if let port = Self.listeningPort(pid: self.process.processIdentifier) { return port }
            guard self.process.isRunning else { break }
            usleep(5_000)
        }
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "no listening socket: \(self.readOutput())"])
    }

    /// Waits for the process to exit and returns its status and output (bounded by `timeout`).
    func finish(timeout: TimeInterval = 60) -> (status: Int32, output: String) {
        let start = Date()
        while self.process.isRunning && Date().timeIntervalSince(start) < timeout { usleep(5_000) }
        self.kill()
        return (self.process.terminationStatus, self.readOutput())
    }

    private func readOutput() -> String {
        String(decoding: self.output.fileHandleForReading.availableData, as: UTF8.self)
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
