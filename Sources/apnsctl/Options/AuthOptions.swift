import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import Foundation

/// Authentication flags, shared by every command that talks to APNs: a provider-token key
/// (`--key-file`, `--key-id`, `--team-id`) or a client certificate (`--cert` + `--cert-key`, or
/// `--p12` with its password in an environment variable).
struct AuthOptions: ParsableArguments {
    @Option(
        name: .customLong("key-file"),
        help: ArgumentHelp(
            "The .p8 signing key from developer.apple.com (or APNS_KEY_FILE; or APNS_KEY holding the key's PEM text or its base64).",
            valueName: "path"
        )
    )
    var keyFile: String?

    @Option(name: .customLong("key-id"), help: "The 10-character key id (or APNS_KEY_ID).")
    var keyID: String?

    @Option(name: .customLong("team-id"), help: "The 10-character team id (or APNS_TEAM_ID).")
    var teamID: String?

    @Option(name: .customLong("cert"), help: ArgumentHelp("A client certificate (PEM) instead of a key; needs --cert-key.", valueName: "path"))
    var certificate: String?

    @Option(name: .customLong("cert-key"), help: ArgumentHelp("The private key (PEM) of --cert.", valueName: "path"))
    var certificateKey: String?

    @Option(name: .customLong("p12"), help: ArgumentHelp("A client certificate and key as PKCS#12 instead of a key.", valueName: "path"))
    var pkcs12: String?

    @Option(
        name: .customLong("p12-password-env"),
        help: ArgumentHelp("The environment variable holding the --p12 password (never the password itself).", valueName: "name")
    )
    var pkcs12PasswordVariable: String?

    @Option(
        name: .customLong("credential"),
        help: ArgumentHelp(
            "Another team's or key's credential for some apps, repeatable: bundle ids (comma-separated) = .p8 file : key id : team id. "
                + "Pushes to those bundle ids use it; the key flags above, if given, serve every other topic.",
            valueName: "ids=path:KEYID:TEAMID"
        )
    )
    var credentialSpecs: [String] = []

    var resolvedKeyFile: String? { EnvironmentFallback.value(self.keyFile, "APNS_KEY_FILE") }
    var resolvedKeyID: String? { EnvironmentFallback.value(self.keyID, "APNS_KEY_ID") }
    var resolvedTeamID: String? { EnvironmentFallback.value(self.teamID, "APNS_TEAM_ID") }

    /// `APNS_KEY`: the key itself, used when neither `--key-file` nor `APNS_KEY_FILE` is given.
    private var keyVariable: String? {
        guard self.resolvedKeyFile == nil else { return nil }
        return EnvironmentFallback.value(nil, "APNS_KEY")
    }

    /// Whether any token-authentication input was given.
    var isPresent: Bool {
        self.resolvedKeyFile != nil || self.keyVariable != nil || self.resolvedKeyID != nil || self.resolvedTeamID != nil
    }

    /// Whether a client certificate was given.
    var usesCertificate: Bool { self.certificate != nil || self.certificateKey != nil || self.pkcs12 != nil }

    /// Whether any credential was given: a key, a certificate or a `--credential`.
    var hasCredentials: Bool { self.isPresent || self.usesCertificate || !self.credentialSpecs.isEmpty }

    /// The client's credentials: the key or certificate flags (serving every topic no `--credential`
    /// names), then each `--credential` for its bundle ids.
    /// - Throws: `ValidationError` (64) for missing or conflicting flags, ``CLIFailure`` (65, 66) for bad data.
    /// A warning when the key file's name (`AuthKey_<KEYID>.p8`, as Apple names it) names another key
    /// id than `--key-id`: the most common cause of `InvalidProviderToken`. `nil` when they agree or
    /// the file was renamed.
    func keyFileNameWarning() -> String? {
        guard let path = self.resolvedKeyFile, let keyID = self.resolvedKeyID else { return nil }
        let name = URL(fileURLWithPath: path).lastPathComponent
        guard name.hasPrefix("AuthKey_"), name.hasSuffix(".p8") else { return nil }
        let fileID = name.dropFirst("AuthKey_".count).dropLast(".p8".count)
        guard fileID.count == 10, fileID != keyID else { return nil }
        return "the key file is \(name) but the key id is \(keyID): Apple names the file after its key id, "
            + "and a token signed under another id gets InvalidProviderToken"
    }

    func credentials() throws -> [APNSClient.Credential] {
        var credentials: [APNSClient.Credential] = []
        if self.isPresent || self.usesCertificate || self.credentialSpecs.isEmpty {
            credentials.append(APNSClient.Credential(authentication: try self.authentication()))
        }
        for spec in self.credentialSpecs {
            let parsed = try Self.credential(spec)
            credentials.append(APNSClient.Credential(
                authentication: .jwt(key: parsed.key, keyID: parsed.keyID, teamID: parsed.teamID), topics: parsed.topics
            ))
        }
        return credentials
    }

    /// The bundle ids the credentials serve, or `nil` when the key or certificate flags serve every one.
    /// - Throws: ``CLIFailure`` (65) for a `--credential` whose bundle ids are malformed.
    func servedBundleIDs() throws -> Set<String>? {
        if self.isPresent || self.usesCertificate || self.credentialSpecs.isEmpty { return nil }
        var served: Set<String> = []
        for spec in self.credentialSpecs {
            served.formUnion(try Self.credentialParts(spec).topics.map(\.rawValue))
        }
        return served
    }

    /// A `--credential` value's parts: `ids=path:KEYID:TEAMID`, split at the first `=` and the last
    /// two `:` (a path may hold both), the ids checked.
    static func credentialParts(
        _ spec: String
    ) throws -> (topics: [APNSBundleID], path: String, keyID: APNSKeyID, teamID: APNSTeamID) {
        let shape = "--credential '\(CLIFailure.abbreviate(spec))': must be bundle ids (comma-separated) = .p8 file : key id : team id, "
            + "such as com.example.app,com.example.other=AuthKey_ABC123DEFG.p8:ABC123DEFG:DEF123GHIJ"
        guard let equals = spec.firstIndex(of: "=") else { throw ValidationError(shape) }
        let fields = spec[spec.index(after: equals)...].split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count >= 3 else { throw ValidationError(shape) }
        let path = fields.dropLast(2).joined(separator: ":")
        let ids = spec[..<equals].split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !path.isEmpty, !ids.isEmpty else { throw ValidationError(shape) }
        var topics: [APNSBundleID] = []
        for id in ids {
            do { topics.append(try APNSBundleID(id)) } catch {
                throw CLIFailure.badData("--credential", error, value: id)
            }
        }
        let keyIDText = String(fields[fields.count - 2])
        let teamIDText = String(fields[fields.count - 1])
        do {
            return (topics, path, try APNSKeyID(keyIDText), try APNSTeamID(teamIDText))
        } catch {
            throw CLIFailure.badData("--credential", error, value: "\(keyIDText):\(teamIDText)")
        }
    }

    /// A `--credential` value with its key loaded.
    /// - Throws: ``CLIFailure``: 64 for a malformed value, 65 for bad ids or a bad key, 66 for a missing file.
    static func credential(_ spec: String) throws -> (topics: [APNSBundleID], key: APNSSigningKey, keyID: APNSKeyID, teamID: APNSTeamID) {
        let parts = try Self.credentialParts(spec)
        do {
            return (parts.topics, try APNSSigningKey(contentsOfFile: parts.path), parts.keyID, parts.teamID)
        } catch {
            let exitCode = error.code == .fileNotFound ? CLIExit.noInput : CLIExit.dataError
            throw CLIFailure(message: "--credential: \(error)", exitCode: exitCode)
        }
    }

    /// The client's authentication: a certificate when `--cert` or `--p12` is given, else the key.
    /// - Throws: `ValidationError` (64) for missing or conflicting flags, ``CLIFailure`` (65, 66) for bad data.
    func authentication() throws -> APNSClient.Authentication {
        guard self.usesCertificate else {
            let credentials = try self.load()
            return .jwt(key: credentials.key, keyID: credentials.keyID, teamID: credentials.teamID)
        }
        if self.keyFile != nil || self.keyID != nil || self.teamID != nil {
            throw ValidationError("Give a provider-token key (--key-file, --key-id, --team-id) or a client certificate (--cert/--p12), not both.")
        }
        if let pkcs12 = self.pkcs12 {
            guard self.certificate == nil, self.certificateKey == nil else {
                throw ValidationError("--p12 holds the certificate and its key; it cannot be combined with --cert or --cert-key.")
            }
            guard let variable = self.pkcs12PasswordVariable else {
                throw ValidationError("--p12 needs --p12-password-env NAME: the environment variable that holds its password.")
            }
            guard let password = ProcessInfo.processInfo.environment[variable] else {
                throw ValidationError("--p12-password-env: the environment variable \(variable) is not set.")
            }
            try InputFiles.requireReadable(pkcs12, flag: "--p12")
            try ClientFactory.check(
                HTTP2TLSConfiguration(clientIdentity: .pkcs12(path: pkcs12, password: password)), passwordVariable: variable
            )
            return .certificate(pkcs12Path: pkcs12, password: password)
        }
        guard let certificate = self.certificate, let key = self.certificateKey else {
            throw ValidationError("--cert and --cert-key go together: the certificate (PEM) and its private key (PEM).")
        }
        try InputFiles.requireReadable(certificate, flag: "--cert")
        try InputFiles.requireReadable(key, flag: "--cert-key")
        try ClientFactory.check(HTTP2TLSConfiguration(clientIdentity: .pem(certificateFile: certificate, privateKeyFile: key)))
        return .certificate(certificateFile: certificate, privateKeyFile: key)
    }

    /// Loads and checks the credentials: ids first (cheap), then the key.
    /// - Throws: `ValidationError` (exit 64) for a missing flag, ``CLIFailure`` with 65 or 66 for bad data.
    func load() throws -> (key: APNSSigningKey, keyID: APNSKeyID, teamID: APNSTeamID) {
        guard self.resolvedKeyFile != nil || self.keyVariable != nil else {
            throw ValidationError("Missing --key-file (or APNS_KEY_FILE, or APNS_KEY): the .p8 key that signs provider tokens.")
        }
        guard let keyIDText = self.resolvedKeyID else {
            throw ValidationError("Missing --key-id (or APNS_KEY_ID): the 10-character id of the key.")
        }
        guard let teamIDText = self.resolvedTeamID else {
            throw ValidationError("Missing --team-id (or APNS_TEAM_ID): the 10-character id of your team.")
        }
        let keyID: APNSKeyID
        let teamID: APNSTeamID
        do {
            keyID = try APNSKeyID(keyIDText)
        } catch {
            throw CLIFailure.badData("--key-id", error, value: keyIDText)
        }
        do {
            teamID = try APNSTeamID(teamIDText)
        } catch {
            throw CLIFailure.badData("--team-id", error, value: teamIDText)
        }
        guard let path = self.resolvedKeyFile else { return (try Self.key(fromVariable: self.keyVariable ?? ""), keyID, teamID) }
        do {
            return (try APNSSigningKey(contentsOfFile: path), keyID, teamID)
        } catch {
            let exitCode = error.code == .fileNotFound ? CLIExit.noInput : CLIExit.dataError
            throw CLIFailure(message: "--key-file: \(error)", exitCode: exitCode)
        }
    }

    /// The key in `APNS_KEY`: the `.p8` file's PEM text, or base64 of it (as gorush's `key_base64`).
    /// - Throws: ``CLIFailure`` (65) naming the variable and the rule, never its content.
    static func key(fromVariable text: String) throws -> APNSSigningKey {
        var pem = Array(text.utf8)
        defer { _ = pem.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        if !text.contains("-----BEGIN") {
            let compact = text.filter { !$0.isWhitespace }
            guard let decoded = Data(base64Encoded: compact), decoded.starts(with: Array("-----BEGIN".utf8)) else {
                throw CLIFailure(
                    message: "APNS_KEY: must hold the .p8 key as PEM text (-----BEGIN PRIVATE KEY-----…) or as base64 of that text",
                    exitCode: CLIExit.dataError
                )
            }
            pem = Array(decoded)
        }
        do {
            return try APNSSigningKey(pemBytes: pem)
        } catch {
            throw CLIFailure(message: "APNS_KEY: \(error)", exitCode: CLIExit.dataError)
        }
    }

    /// Checks the credentials when given, by loading the key and signing a token that is never shown,
    /// or by loading the client certificate (and its password) as a send would.
    func dryRunAuthorization() throws -> String? {
        for spec in self.credentialSpecs { _ = try Self.credential(spec) }
        if self.usesCertificate {
            _ = try self.authentication()
            return nil
        }
        guard self.isPresent else {
            if !self.credentialSpecs.isEmpty { return "bearer <redacted>" }
            Output.diagnostic(
                "note: no --key-file/--key-id/--team-id given: a real send needs them (or a client certificate)."
            )
            return nil
        }
        let credentials = try self.load()
        do {
            _ = try APNSProviderToken.sign(
                keyID: credentials.keyID, teamID: credentials.teamID, issuedAt: Date(), key: credentials.key
            )
        } catch {
            throw CLIFailure(message: "--key-file: \(error)", exitCode: CLIExit.dataError)
        }
        return "bearer <redacted>"
    }
}
