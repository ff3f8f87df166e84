internal import Foundation
#if canImport(Glibc)
internal import Glibc
#endif

/// One process per journal: an exclusive `flock` on `<journal>-lock`, held while the journal is
/// open for writing and released by the kernel when the process ends however it ends (SIGKILL
/// included), so a crash never leaves the journal held. The file also names its holder (process
/// id and start time), for the message a second process gets.
///
/// `flock`, not `fcntl`: SQLite's own `fcntl` locks on the database are released by any `close` of
/// the file in the process; a `flock` belongs to this descriptor alone, and the two do not interact.
final class JournalLock: Sendable {
    private let handle: FileHandle

    /// The lock file of the journal at `path`.
    static func path(for journal: String) -> String { journal + "-lock" }

    /// Takes the lock, or says who holds it.
    /// - Throws: ``CampaignJournal/Failure`` `inUse` naming the holder; `unusable` when the lock
    ///   file cannot be made.
    init(journal: String) throws(CampaignJournal.Failure) {
        let path = Self.path(for: journal)
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw CampaignJournal.Failure(kind: .unusable, description: "journal '\(journal)': cannot create its lock file '\(path)'")
        }
        guard flock(handle.fileDescriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            try? handle.close()
            let who = holder.isEmpty ? "another process" : holder
            throw CampaignJournal.Failure(kind: .inUse, description: "journal '\(journal)' is in use by \(who); wait for it or stop it")
        }
        let started = Date().formatted(Date.ISO8601FormatStyle(timeZone: .current).time(includingFractionalSeconds: false))
        try? handle.truncate(atOffset: 0)
        try? handle.write(contentsOf: Data("process \(getpid()) (started \(started))\n".utf8))
        self.handle = handle
    }

    deinit {
        // Closing the descriptor releases the lock.
        try? self.handle.close()
    }
}
