import Foundation

extension ChildProcess {
    /// The TCP port the child listens on, read from /proc once its listening socket appears: for
    /// servers that do not print their port (nghttpd, `openssl s_server` on port 0).
    ///
    /// Waits at most `timeout`, checking every few milliseconds without holding a thread of the
    /// cooperative pool (a blocked pool thread stalls every other test on a 2-core machine).
    /// - Throws: ``ChildProcessError`` with the child's output when no socket appeared; the child is
    ///   killed first.
    public func listeningPort(timeout: Duration = .seconds(30)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let port = Self.listeningPort(pid: self.processIdentifier) { return port }
            guard self.isRunning else { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        // Killed first, so that its output is complete.
        self.kill()
        let result = await self.finish(timeout: .zero)
        throw ChildProcessError("\(self.name): no listening socket: \(result.stdout)\(result.stderr)")
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
