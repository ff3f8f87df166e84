import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import Foundation
import Logging

/// Builds the library's client from apnsctl's flags, so every command authenticates and connects
/// the same way.
enum ClientFactory {
    /// A client configuration from the credential and endpoint flags.
    /// - Parameter credentials: instead of the credential flags' (a token file's source).
    /// - Throws: `ValidationError` (64) for missing or conflicting flags, ``CLIFailure`` (65, 66) for bad data.
    static func configuration(
        auth: AuthOptions, endpoint: APNSEndpointOptions<some ApplePortFlag>, concurrency: Int? = nil, verbose: Bool = false,
        credentials: [APNSClient.Credential]? = nil
    ) throws -> APNSClient.Configuration {
        let environment = try endpoint.resolved()
        let tls = try endpoint.tls()
        let credentials = try credentials ?? auth.credentials()
        var logger = Logger(label: "apnsctl")
        // Errors only by default: send reports failures itself, per token and with a plain message.
        logger.logLevel = verbose ? .debug : .error
        var pool = APNSClient.Pool()
        if let concurrency { pool.maxStreamsPerConnection = max(1, concurrency) }
        return APNSClient.Configuration(
            credentials: credentials, environment: environment, tls: tls, pool: pool, logger: logger,
            proxy: try endpoint.proxy(for: environment.host)
        )
    }

    /// A client, or a ``CLIFailure`` naming the configuration problem.
    static func client(_ configuration: APNSClient.Configuration) throws -> APNSClient {
        do {
            return try APNSClient(configuration: configuration)
        } catch let error as APNSError {
            throw CLIFailure(message: error.detail.isEmpty ? "\(error)" : error.detail, exitCode: CLIExit.dataError)
        }
    }

    /// Loads a client identity or trust roots as a connection will, so that a corrupt file or a
    /// wrong password is bad input (65) named by its flag, before anything connects (and in
    /// `--dry-run`), instead of a TLS failure at every connect.
    /// - Parameter passwordVariable: the environment variable the `--p12` password came from.
    static func check(_ tls: HTTP2TLSConfiguration, passwordVariable: String? = nil) throws {
        do {
            _ = try tls.prepared()
        } catch {
            let flag: String
            var rule = error.rule
            switch error.field {
            case .trustRoots: flag = "--ca-file"
            case .clientCertificate: flag = "--cert"
            case .clientPrivateKey: flag = "--cert-key"
            case .pkcs12Password:
                flag = "--p12"
                rule = "cannot be opened with the password in \(passwordVariable ?? "--p12-password-env"): wrong password"
            default: flag = "--p12"
            }
            let path = error.path.isEmpty ? "" : " '\(error.path)'"
            let detail = error.detail.isEmpty ? "" : " (\(error.detail))"
            throw CLIFailure(message: "\(flag)\(path): \(rule)\(detail)", exitCode: CLIExit.dataError)
        }
    }

    /// The exit code an error that ended a send maps to: 69 when nothing could reach the endpoint
    /// (refused, unresolvable, TLS failure), 65 for data the client refused, 1 for a rejection.
    static func exitCode(for error: APNSError) -> Int32 {
        switch error.kind {
        case .rejected: return 1
        case .invalidNotification, .credentials: return CLIExit.dataError
        case .transport, .unreachable, .deadlineExceeded: return CLIExit.unavailable
        case .cancelled: return CLIExit.interrupted
        case .shutdown: return CLIExit.software
        }
    }
}
