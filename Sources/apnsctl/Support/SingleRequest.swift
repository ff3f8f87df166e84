import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore

/// One request (a Live Activity push, a broadcast, a channel call) with a client made from the
/// flags: shut down on every path, its failure turned into a message and an exit code.
enum SingleRequest {
    /// Runs `body` with a client; an ``APNSError`` becomes a ``CLIFailure`` (1 rejected, 65 bad data,
    /// 69 unreachable or TLS).
    static func withClient<Result>(
        auth: AuthOptions, endpoint: EndpointOptions, verbose: Bool,
        _ body: (APNSClient) async throws(APNSError) -> Result
    ) async throws -> Result {
        let configuration = try ClientFactory.configuration(auth: auth, endpoint: endpoint, verbose: verbose)
        let client = try ClientFactory.client(configuration)
        do {
            return try await withAPNSClient(client) { client in try await body(client) }
        } catch let error as APNSError {
            throw CLIFailure(message: Self.describe(error, endpoint: configuration.environment.authority),
                             exitCode: ClientFactory.exitCode(for: error))
        }
    }

    /// Sends one push and prints its result line and the summary (as `send` does); the exit code
    /// follows the outcome.
    static func sendReporting(
        auth: AuthOptions, endpoint: EndpointOptions, verbose: Bool, json: Bool, lints: [String] = [], target: String,
        _ body: (APNSClient) async throws(APNSError) -> APNSSendResult
    ) async throws {
        let configuration = try ClientFactory.configuration(auth: auth, endpoint: endpoint, verbose: verbose)
        let client = try ClientFactory.client(configuration)
        let started = ContinuousClock.now
        let outcome = try await withAPNSClient(client) { client -> APNSBulkVerdict.Outcome in
            do throws(APNSError) {
                return .accepted(try await body(client))
            } catch {
                return APNSBulkVerdict.Outcome(error)
            }
        }
        try Self.printVerdict(outcome, target: target, json: json, lints: lints, since: started, authority: configuration.environment.authority)
    }

    /// Prints one push's verdict line and the summary (as `send` does); throws the exit code of
    /// anything but an acceptance (1 rejected, 69 unreachable, …), with the hint for a rejection.
    static func printVerdict(
        _ outcome: APNSBulkVerdict.Outcome, target: String, json: Bool, lints: [String] = [], since started: ContinuousClock.Instant,
        authority: String
    ) throws {
        let renderer = ResultRenderer(json: json, lints: lints)
        let result = TokenResult(token: target, outcome: outcome)
        var counts = SendCounts()
        counts.add(result)
        Output.result(renderer.line(result))
        Output.result(renderer.summary(counts, seconds: ProgressBar.seconds(.now - started)))
        switch outcome {
        case .accepted: return
        case .rejected(let error):
            if let reason = error.reason, let hint = RejectionHints.hint(for: reason) { Output.diagnostic(hint) }
            throw ExitCode(1)
        case .failed(let error), .notSent(let error):
            if error.kind == .transport || error.kind == .unreachable {
                Output.diagnostic("error: \(Self.describe(error, endpoint: authority))")
            }
            throw ExitCode(ClientFactory.exitCode(for: error))
        }
    }

    static func describe(_ error: APNSError, endpoint: String) -> String {
        switch error.kind {
        case .rejected:
            return "\(error.status.map(String.init) ?? "-") \(error.reason?.rawValue ?? error.detail)"
        case .transport, .unreachable, .deadlineExceeded:
            return "cannot reach \(endpoint): \(error.detail.isEmpty ? error.kind.rawValue : error.detail)"
                + (RejectionHints.hint(forTransportDetail: error.detail).map { "\n" + $0 } ?? "")
        default:
            return error.detail.isEmpty ? "\(error)" : error.detail
        }
    }
}
