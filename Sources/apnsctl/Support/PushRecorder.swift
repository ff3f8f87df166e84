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

/// `apnsctl serve --record FILE`: every request the server judges, one NDJSON line each in the
/// shape of the inbox API's entries (``LocalAPNSInboxEntry/json``: token or channel_id, apns_id,
/// received_at, topic, push_type, priority, expiration, collapse_id, status, reason, why, payload,
/// headers; authorization and any provider token redacted), accepted and rejected (only accepted with
/// `--record-accepted-only`): the ground truth a test compares a sender's verdicts with.
///
/// Each line is written when its request is judged, with one `write(2)` (so `tail -f` shows it at
/// once and a server killed with SIGKILL loses nothing already judged); lines of concurrent
/// connections are written whole, in the order they were judged on their threads.
final class PushRecorder: Sendable {
    /// The open file, guarded: lines are written whole, one thread at a time, and closing waits
    /// for a write under way. (With a lock around nothing, `LockedBox<Void>`, ThreadSanitizer
    /// reported an access race on the zero-sized value between two writers holding the mutex in turn.)
    private let file: LockedBox<Int32>
    private let path: String
    private let acceptedOnly: Bool

    /// Creates (or empties) `path`.
    /// - Throws: ``CLIFailure`` 73 naming `--record` when it cannot be written.
    init(path: String, acceptedOnly: Bool = false) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CLIFailure(message: "--record: cannot write '\(path)': \(String(cString: strerror(errno)))", exitCode: CLIExit.cannotCreate)
        }
        self.file = LockedBox(descriptor)
        self.path = path
        self.acceptedOnly = acceptedOnly
    }

    /// Called by the server for every judged request.
    func record(_ judgement: LocalAPNSJudgement) {
        if self.acceptedOnly, !(judgement.decision.isAccepted && judgement.decision.target.isPush) { return }
        var line = judgement.entry.json
        line.append(UInt8(ascii: "\n"))
        self.file.withLock { descriptor in self.write(&line, to: descriptor) }
    }

    /// Writes what is left and closes the file; call once the server has stopped.
    func close() {
        self.file.withLock { descriptor in _ = Glibc.close(descriptor) }
    }

    private func write(_ buffer: inout [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
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
