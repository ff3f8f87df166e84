import ForgeAPNsCore
import Foundation

/// Reads the files and streams named on the command line.
enum InputFiles {
    /// The bytes of `path`, or of standard input for `-`.
    /// - Throws: a ``CLIFailure`` with exit code 66 when the file does not exist or is a directory, 65
    ///   when it cannot be read.
    static func read(_ path: String, flag: String) throws -> [UInt8] {
        if path == "-" {
            return Array(FileHandle.standardInput.readDataToEndOfFile())
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIFailure(message: "\(flag): file '\(path)' does not exist", exitCode: CLIExit.noInput)
        }
        guard !isDirectory.boolValue else {
            throw CLIFailure(message: "\(flag): '\(path)' is a directory, not a file", exitCode: CLIExit.noInput)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIFailure(message: "\(flag): file '\(path)' cannot be read", exitCode: CLIExit.dataError)
        }
        return Array(data)
    }

    /// `bytes` without a leading UTF-8 byte order mark: JSON has none (RFC 8259 §8.1), but editors
    /// on Windows write one, and a device's parser would refuse the payload for it.
    static func withoutByteOrderMark(_ bytes: [UInt8]) -> [UInt8] {
        bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
    }

    /// `path` read as a `.apns` file (simctl's format), its byte order mark dropped.
    /// - Throws: ``CLIFailure`` 65 naming the file and the rule it breaks, 66 for a missing file.
    static func simulatorFile(_ path: String, flag: String) throws -> APNSSimulatorFile {
        let bytes = Self.withoutByteOrderMark(try Self.read(path, flag: flag))
        do throws(APNSSimulatorFile.Problem) { return try APNSSimulatorFile(contents: bytes) } catch {
            throw CLIFailure(message: "\(flag) '\(path)': a .apns file \(error.rule)", exitCode: CLIExit.dataError)
        }
    }

    /// Checks that `path` is a readable file, so a server fails with a message naming the flag.
    /// - Throws: a ``CLIFailure`` with exit code 66 when it does not exist or is a directory, 65 when
    ///   it cannot be read.
    static func requireReadable(_ path: String, flag: String) throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIFailure(message: "\(flag): file '\(path)' does not exist", exitCode: CLIExit.noInput)
        }
        guard !isDirectory.boolValue else {
            throw CLIFailure(message: "\(flag): '\(path)' is a directory, not a file", exitCode: CLIExit.noInput)
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw CLIFailure(message: "\(flag): file '\(path)' cannot be read", exitCode: CLIExit.dataError)
        }
    }
}

/// Writes the files named on the command line.
enum OutputFiles {
    /// Writes `text` to `path` whole (a reader never sees half of it).
    /// - Throws: a ``CLIFailure`` with exit code 73 naming the flag when it cannot be written.
    static func write(_ text: String, to path: String, flag: String) throws {
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw CLIFailure(message: "\(flag): cannot write '\(path)': \(error.localizedDescription)", exitCode: CLIExit.cannotCreate)
        }
    }
}
