import ForgeAPNsCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens `--tokens-file` for a send: checks it exists, and with `--strict` reads it once to report
/// every bad line before anything is sent (standard input is spooled to a temporary file first).
enum TokenFileReading {
    static func open(
        path: String, strict: Bool, headers: NotificationOptions.Headers, hasSharedPayload: Bool
    ) throws -> SendSession.Tokens {
        if path != "-" { try InputFiles.requireReadable(path, flag: "--tokens-file") }
        guard strict else {
            return .file(open: { try TokenLines(path: path, headers: headers, hasSharedPayload: hasSharedPayload) }, count: nil)
        }
        let spooled = path == "-" ? try TokenLines.spoolStandardInput() : nil
        let first = try spooled.map {
            try TokenLines(spooled: $0, name: "stdin", headers: headers, hasSharedPayload: hasSharedPayload)
        } ?? TokenLines(path: path, headers: headers, hasSharedPayload: hasSharedPayload)
        var good = 0
        var bad = 0
        while let line = first.next() {
            switch line {
            case .entry: good += 1
            case .skipped: continue
            case .bad(let number, let problem):
                first.report(line: number, problem: problem)
                bad += 1
            }
        }
        guard bad == 0 else {
            throw CLIFailure(
                message: "\(first.name): \(bad) bad line\(bad == 1 ? "" : "s"); nothing sent (--strict)", exitCode: CLIExit.dataError
            )
        }
        if let spooled {
            return .file(
                open: { try TokenLines(spooled: spooled, name: "stdin", headers: headers, hasSharedPayload: hasSharedPayload) },
                count: good
            )
        }
        return .file(open: { try TokenLines(path: path, headers: headers, hasSharedPayload: hasSharedPayload) }, count: good)
    }
}
