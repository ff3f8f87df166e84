import ArgumentParser
import ForgeSimulatedDevice
import ForgeSupport
import struct Foundation.URL

// `apnsctl serve`'s options in the groups its help lists them under.

/// The server's TLS, or cleartext HTTP/2.
struct ServeTLSOptions: ParsableArguments {
    @Flag(help: "Serve cleartext HTTP/2 (h2c) instead of TLS.")
    var h2c = false

    @Option(help: "The server certificate chain (PEM); default: one made in memory at start, for localhost, 127.0.0.1 and ::1.")
    var cert: String?

    @Option(help: "The server private key (PEM), with --cert.")
    var key: String?

    @Option(
        name: .customLong("write-ca"),
        help: ArgumentHelp("Write the CA of the certificate made at start (PEM) to this file, for clients to trust.", valueName: "file")
    )
    var writeCA: String?
}

/// How clients authenticate: provider tokens, client certificates.
struct ServeAuthenticationOptions: ParsableArguments {
    @Option(
        name: .customLong("register-key"),
        help: ArgumentHelp(
            "A provider-token key, as FILE:KEYID:TEAMID (a .p8 or a public key PEM), or FILE:KEYID:TEAMID:BUNDLEID,… for a key "
                + "limited to those bundle ids (other topics: InvalidProviderToken). Repeatable."
        )
    )
    var registerKey: [String] = []

    @Flag(name: .customLong("lenient-tokens"), help: "Also accept DER signatures and a string iat, as APNs was seen doing (default: strict).")
    var lenientTokens = false

    @Option(
        name: .customLong("token-update-limit"),
        help: ArgumentHelp(
            "Answer TooManyProviderTokenUpdates to a key's new token (an iat not seen before) sooner than this after its previous one, "
                + "on any connection: 20m, 90s (default: off; the per-connection 20-minute rule always applies).",
            valueName: "duration"
        ),
        transform: { try TokenDuration.parse($0, flag: "--token-update-limit", maximumMinutes: 60) }
    )
    var tokenUpdateLimit: Duration?

    @Option(name: .customLong("client-ca"), help: "Ask clients for a certificate and check it against this CA (PEM).")
    var clientCA: String?

    @Option(name: .customLong("register-cert"), help: "A client certificate accepted for its bundle id, as FILE[:BUNDLEID]. Repeatable.")
    var registerCert: [String] = []
}

/// The bundle ids served and the device tokens known.
struct ServeTokenOptions: ParsableArguments {
    @Option(
        name: .customLong("topic"),
        help: ArgumentHelp(
            "A bundle id the server serves (pushes to others: 400 TopicDisallowed); the first is the default for --token "
                + "and --unregistered. Repeatable; without it every topic is served.",
            valueName: "bundle-id"
        )
    )
    var topics: [String] = []

    /// The default bundle id for --token and --unregistered.
    var topic: String? { self.topics.first }

    @Option(name: .customLong("token"), help: "Register an active device token, as TOKEN[:BUNDLEID]. Repeatable.")
    var tokens: [String] = []

    @Option(name: .customLong("unregistered"), help: "Register a token unregistered now (410 Unregistered), as TOKEN[:BUNDLEID]. Repeatable.")
    var unregistered: [String] = []

    @Flag(name: .customLong("reject-unknown-tokens"), help: "Answer BadDeviceToken for tokens not registered (default: accept them).")
    var rejectUnknownTokens = false
}

/// How the server plays APNs: its environment, limits, timeouts and latency.
struct ServeBehaviourOptions: ParsableArguments {
    @Option(help: "The environment the server plays: sandbox (adds apns-unique-id; development is its other name) or production.")
    var environment: EnvironmentName = .sandbox

    @Option(name: .customLong("max-streams"), help: "MAX_CONCURRENT_STREAMS after a connection's first accepted push.")
    var maxStreams: UInt32 = 1000

    @Option(name: .customLong("idle-timeout"), help: "Seconds without a request before GOAWAY IdleTimeout (default: never).")
    var idleTimeout: Double?

    @Option(
        name: .customLong("handshake-timeout"),
        help: "Seconds a new connection has to finish its TLS handshake and send the HTTP/2 preface before it is closed."
    )
    var handshakeTimeout: Double = 10

    @Option(
        name: .customLong("request-timeout"),
        help: "Seconds a request has to arrive complete (headers and body) before its stream is reset with REFUSED_STREAM; 0: never."
    )
    var requestTimeout: Double = 10

    @Option(
        help: ArgumentHelp(
            "Hold each answer this long before sending it, as a server that far away would: 30ms, 0.03s, 250us (default: 0).",
            valueName: "duration"
        ),
        transform: { try CommandLineDuration.parse($0) }
    )
    var latency: Duration?
}

/// What the server prints and records.
struct ServeOutputOptions: ParsableArguments {
    @Flag(help: "One JSON object per judged request on stdout.")
    var json = false

    @Flag(help: "Print only the port, not a line per request.")
    var quiet = false

    @Flag(name: .customLong("print-requests"),
          help: "Print each request with its verdict: request line, headers and the pretty-printed body, provider tokens redacted (one JSON object with --json).")
    var printRequests = false


    @Option(
        name: .customLong("record"),
        help: ArgumentHelp(
            "Write every judged request to this file as it is judged, one JSON object a line, in the shape of the inbox API's entries.",
            valueName: "file"
        )
    )
    var record: String?

    @Flag(name: .customLong("record-accepted-only"), help: "With --record, write only the accepted pushes.")
    var recordAcceptedOnly = false

    @Option(name: .customLong("metrics-port"),
            help: "Serve Prometheus metrics on GET /metrics at 127.0.0.1 on this port; 0 lets the system choose (printed after the port, and after the ui line if any).")
    var metricsPort: Int?
}

/// The inbox: a page, a JSON API and an event stream of judged pushes.
struct ServeInboxOptions: ParsableArguments {
    @Option(name: .customLong("ui-port"), help: "Serve the inbox (page, JSON API, events) on this port; 0 lets the system choose (printed on the second line).")
    var uiPort: Int?

    @Option(name: .customLong("ui-host"), help: "The address the inbox listens on: 127.0.0.1 or ::1.")
    var uiHost: String = "127.0.0.1"

    @Option(help: "How many judged requests the inbox keeps (the oldest are dropped and counted).")
    var keep: Int = 10_000

    @Option(
        name: .customLong("report-tokens-to"),
        help: ArgumentHelp(
            "POST the Live Activity token reports of the phones made by POST /api/v1/devices to this http or https URL, as JSON "
                + "(push_to_start_token, update_token, ended); needs --ui-port.",
            valueName: "url"
        )
    )
    var reportTokensTo: String?

    @Option(
        name: .customLong("activity-type"),
        help: ArgumentHelp(
            "What the apps of the phones made by POST /api/v1/devices decode for a Live Activity type, as NAME=CONTRACT.json "
                + "(a content-state contract); a push whose content state does not decode is discarded as decoding_failed. Repeatable.",
            valueName: "name=file"
        )
    )
    var activityTypes: [String] = []

    /// `--report-tokens-to` as a URL: http or https, with a host.
    func reportURL() throws -> URL? {
        guard let text = self.reportTokensTo else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else {
            throw ValidationError(
                "--report-tokens-to '\(text)': must be an http or https URL with a host, such as http://127.0.0.1:8080/reports."
            )
        }
        guard self.uiPort != nil else {
            throw ValidationError("--report-tokens-to needs --ui-port: it reports for the phones made by the inbox's POST /api/v1/devices.")
        }
        return url
    }

    /// The `--activity-type` contracts by attributes type, each file read and checked.
    func contracts() throws -> [String: LiveActivityContract] {
        var contracts: [String: LiveActivityContract] = [:]
        for argument in self.activityTypes {
            guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex, argument.index(after: equals) != argument.endIndex else {
                throw CLIFailure(message: "--activity-type '\(argument)': must be NAME=CONTRACT.json", exitCode: CLIExit.dataError)
            }
            let name = String(argument[..<equals]), path = String(argument[argument.index(after: equals)...])
            let bytes = try InputFiles.read(path, flag: "--activity-type")
            let contract: LiveActivityContract
            do throws(LiveActivityContract.Invalid) {
                contract = try LiveActivityContract(json: bytes)
            } catch {
                throw CLIFailure(message: "--activity-type \(path): \(error.path): \(error.rule)", exitCode: CLIExit.dataError)
            }
            guard contract.attributesType == name else {
                throw CLIFailure(
                    message: "--activity-type \(path): attributes_type is \(contract.attributesType), not \(name)", exitCode: CLIExit.dataError
                )
            }
            contracts[name] = contract
        }
        if !contracts.isEmpty, self.uiPort == nil {
            throw ValidationError("--activity-type needs --ui-port: it is what the phones made by the inbox's POST /api/v1/devices decode.")
        }
        return contracts
    }
}

/// A provider token's duration on the command line (`serve --token-update-limit`, `jwt
/// --refresh-interval`): whole minutes (`20m`) or seconds (`90s`), from 1 s to `maximumMinutes`.
enum TokenDuration {
    static func parse(_ text: String, flag: String, maximumMinutes: Int64) throws -> Duration {
        let unit: Int64? = text.hasSuffix("m") ? 60 : text.hasSuffix("s") ? 1 : nil
        guard let unit, let value = Int64(text.dropLast()), text.dropLast().allSatisfy(\.isWholeNumber), value >= 1,
            value * unit <= maximumMinutes * 60
        else {
            throw ValidationError("\(flag) '\(text)': expected whole minutes or seconds, such as 20m or 90s, from 1s to \(maximumMinutes)m")
        }
        return .seconds(value * unit)
    }
}
