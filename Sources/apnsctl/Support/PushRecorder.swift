import ForgeAPNsCore
import ForgeLoopback
import ForgeSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `apnsctl serve --record FILE`: every push the server accepts, one NDJSON line each
/// (`{"token":…,"apns_id":…,"time":…,"push_type":…}`, `channel_id` instead of `token` for a
/// broadcast), in the order the server accepted them: the ground truth a test compares a sender's
/// verdicts with. Lines are written in 64 KiB pieces from the server's I/O threads and the rest when
/// the server stops (SIGINT or SIGTERM); a server killed with SIGKILL may lose the last piece.
final class PushRecorder: Sendable {
    private let descriptor: Int32
    private let path: String
    private let buffer = LockedBox<[UInt8]>([])

    /// Creates (or empties) `path`.
    /// - Throws: ``CLIFailure`` 73 naming `--record` when it cannot be written.
    init(path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CLIFailure(message: "--record: cannot write '\(path)': \(String(cString: strerror(errno)))", exitCode: CLIExit.cannotCreate)
        }
        self.descriptor = descriptor
        self.path = path
    }

    /// Called by the server for every judged request; records the accepted pushes and broadcasts.
    func record(_ judgement: LocalAPNsJudgement) {
        let verdict = judgement.verdict
        guard verdict.status == 200 else { return }
        var line: [UInt8] = []
        line.reserveCapacity(160)
        switch verdict.target {
        case .device(let token):
            line.append(contentsOf: "{\"token\":".utf8)
            JSONString.append(token, to: &line)
        case .broadcast(_, let channel):
            line.append(contentsOf: "{\"channel_id\":".utf8)
            JSONString.append(channel, to: &line)
        case .channels, .unknown:
            return
        }
        line.append(contentsOf: ",\"apns_id\":".utf8)
        JSONString.append(verdict.apnsID, to: &line)
        line.append(contentsOf: ",\"time\":".utf8)
        JSONString.append(ISODate.string(judgement.date), to: &line)
        line.append(contentsOf: ",\"push_type\":".utf8)
        JSONString.append(verdict.pushType?.rawValue ?? "alert", to: &line)
        line.append(contentsOf: "}\n".utf8)
        self.buffer.withLock { buffer in
            buffer.append(contentsOf: line)
            if buffer.count >= 1 << 16 { self.write(&buffer) }
        }
    }

    /// Writes what is left and closes the file; call once the server has stopped.
    func close() {
        self.buffer.withLock { self.write(&$0) }
        Glibc.close(self.descriptor)
    }

    private func write(_ buffer: inout [UInt8]) {
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { Glibc.write(self.descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                Output.diagnostic("apnsctl serve: --record: cannot write '\(self.path)': \(String(cString: strerror(errno)))")
                break
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }
}
