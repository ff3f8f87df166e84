import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The command that resumes a stopped `send`, to paste: this process's own arguments with
/// `--resume-from` set, and, when stdout went to a file, a new file for the verdicts, so that
/// pressing Up and Enter cannot overwrite the first run's.
enum ResumeCommand {
    /// `resume: apnsctl send … --resume-from 113441 > /path/verdicts-2.ndjson`.
    static func line(resumeFrom line: Int, arguments: [String] = CommandLine.arguments, stdoutFile: String? = Self.stdoutFile()) -> String {
        var kept: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--resume-from" {
                index += 2
                continue
            }
            if !argument.hasPrefix("--resume-from=") { kept.append(argument) }
            index += 1
        }
        var command = (kept + ["--resume-from", String(line)]).map(Self.quoted).joined(separator: " ")
        if let file = stdoutFile { command += " > " + Self.quoted(Self.nextName(file)) }
        return "resume: " + command
    }

    /// `run.ndjson` → `run-2.ndjson`, `run-2.ndjson` → `run-3.ndjson`, `out` → `out-2`.
    static func nextName(_ path: String) -> String {
        let url = URL(fileURLWithPath: path)
        let ext = url.pathExtension
        var stem = url.deletingPathExtension().lastPathComponent
        var number = 2
        if let dash = stem.lastIndex(of: "-"), let current = Int(stem[stem.index(after: dash)...]), current >= 1, current < 100_000 {
            number = current + 1
            stem = String(stem[..<dash])
        }
        let name = "\(stem)-\(number)" + (ext.isEmpty ? "" : ".\(ext)")
        return url.deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// The regular file stdout writes to, if it is one (not a terminal or a pipe).
    static func stdoutFile() -> String? {
        var status = stat()
        guard fstat(STDOUT_FILENO, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        return try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/1")
    }

    /// `text` as a shell word: as it is when it needs no quoting, else in single quotes.
    static func quoted(_ text: String) -> String {
        let plain = !text.isEmpty && text.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) || "-_./:=@,+%".unicodeScalars.contains($0)
        }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
