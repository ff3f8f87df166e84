import Foundation

extension ChildProcess {
    /// The TCP port the child listens on, read from /proc once its listening socket appears: for
    /// servers that do not print their port (nghttpd, `openssl s_server` on port 0).
    ///
    /// Waits at most `timeout`, checking every few milliseconds on a thread of its own: neither
    /// holding a thread of the cooperative pool (a blocked pool thread stalls every other test on a
    /// 2-core machine) nor depending on one (tests that wait for child processes synchronously can
    /// hold the whole pool for seconds under ThreadSanitizer, and a `Task.sleep` loop then lost its
    /// timeout to that wait, not to the child).
    /// - Throws: ``ChildProcessError`` with the child's output when no socket appeared; the child is
    ///   killed first.
    public func listeningPort(timeout: Duration = .seconds(30)) async throws -> Int {
        let start = ContinuousClock.now
        let pid = self.processIdentifier
        let (found, exited) = await withCheckedContinuation { (continuation: CheckedContinuation<(Int?, Bool), Never>) in
            let thread = Thread {
                while ContinuousClock.now < start + timeout {
                    if let port = Self.listeningPort(pid: pid) { return continuation.resume(returning: (port, false)) }
                    guard self.isRunning else { return continuation.resume(returning: (nil, true)) }
                    usleep(5_000)
                }
                continuation.resume(returning: (nil, false))
            }
            thread.name = "listening-port:\(pid)"
            thread.start()
        }
        if let found { return found }
        let waited = ContinuousClock.now - start
        // Killed first, so that its output is complete.
        self.kill()
        let result = await self.finish(timeout: .zero)
        let how = exited ? "it exited with status \(result.exitCode) after \(waited)" : "none after \(waited), killed"
        throw ChildProcessError("\(self.name): no listening socket (\(how)): \(result.stdout)\(result.stderr)")
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
            guard let text = Self.readProcFile(table) else { continue }
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

    /// A `/proc` file read to its end. Not `String(contentsOfFile:)`: these files say their size is
    /// 0, and Foundation then reads only its first chunk (about 4 KB, some 27 sockets of
    /// `/proc/net/tcp`); a listening socket further down the table, as when many tests have
    /// connections open, was never seen.
    private static func readProcFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes += buffer[..<count]
        }
    }
}
