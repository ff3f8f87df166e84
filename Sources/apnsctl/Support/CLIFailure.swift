import ArgumentParser
import ForgeAPNsCore

/// The `sysexits`-style exit codes of apnsctl, mapped from library errors in one place.
enum CLIExit {
    /// Bad input data: a token, payload, key or id.
    static let dataError: Int32 = 65
    /// An input file does not exist.
    static let noInput: Int32 = 66
    /// The endpoint is unreachable, or TLS failed.
    static let unavailable: Int32 = 69
    /// A bug in apnsctl or the library.
    static let software: Int32 = 70
    /// An output file cannot be written.
    static let cannotCreate: Int32 = 73
    /// A read or write failed mid-run (the journal of `send --journal`).
    static let ioError: Int32 = 74
    /// EX_TEMPFAIL: try again later (a journal another process is using).
    static let temporaryFailure: Int32 = 75
    /// Stopped by SIGINT (Ctrl-C), as shells report it: 128 + 2.
    static let interrupted: Int32 = 130
}

/// An error apnsctl reports itself: a message for stderr and an exit code.
struct CLIFailure: Error, CustomStringConvertible, Sendable {
    var message: String
    var exitCode: Int32

    var description: String { self.message }

    /// A bad value for a flag: `--token 'abc': device token must …`.
    static func badData(_ flag: String, _ error: APNSValidationError, value: String? = nil) -> CLIFailure {
        let shown = value.map { " '\(Self.abbreviate($0))'" } ?? ""
        return CLIFailure(message: "\(flag)\(shown): \(error.field) \(error.rule)", exitCode: CLIExit.dataError)
    }

    /// `value` as an error quotes it: at most 80 characters, a provider token redacted first (cut
    /// short, it would no longer be recognised).
    static func abbreviate(_ value: String) -> String {
        let value = ProviderTokenRedaction.redacting(value)
        return value.count > 80 ? String(value.prefix(77)) + "…" : value
    }
}

/// Runs a command body, turning library errors into a message on stderr and the right exit code.
func runReportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let failure as CLIFailure {
        Output.diagnostic("error: \(failure.message)")
        throw ExitCode(failure.exitCode)
    } catch let error as APNSValidationError {
        Output.diagnostic("error: \(error.field) \(error.rule)")
        throw ExitCode(CLIExit.dataError)
    }
}
