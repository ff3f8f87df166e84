/// How a client sets up TLS. Secure by default: the system trust store, host name checks, TLS 1.2+,
/// ALPN `h2` required.
package struct HTTP2TLSConfiguration: Sendable {
    /// Which certificates the client trusts.
    package struct TrustRoots: Hashable, Sendable {
        enum Base: Hashable, Sendable {
            case system
            case file(String)
            case pem(String)
        }

        let base: Base

        /// The system's trust store.
        package static let system = TrustRoots(base: .system)
        /// The PEM certificates in `path` (for example a test CA).
        package static func file(_ path: String) -> TrustRoots { TrustRoots(base: .file(path)) }
        /// The certificates in PEM text, held in memory (for example ``LoopbackTLSIdentity/caCertificatePEM``).
        package static func pem(_ text: String) -> TrustRoots { TrustRoots(base: .pem(text)) }

        /// Where these roots come from, for a person: the file, PEM text, or where OpenSSL finds the
        /// system store (`SSL_CERT_FILE` and `SSL_CERT_DIR` when set, else its built-in paths).
        package var location: String {
            switch self.base {
            case .file(let path): return path
            case .pem: return "PEM text in memory"
            case .system: return "the system store (\(systemTrustStorePaths()))"
            }
        }
    }

    /// How strictly the server certificate is checked.
    package struct Verification: Hashable, Sendable {
        enum Base: Hashable, Sendable {
            case full
            case insecureLoopbackOnly
        }

        let base: Base

        /// Chain, validity and host name (or IP address) are checked. The default.
        package static let full = Verification(base: .full)
        /// No check at all, allowed only when connecting to a loopback address (`127.0.0.0/8`, `::1`,
        /// `localhost`); connecting anywhere else with it fails before a byte is sent.
        package static let insecureLoopbackOnly = Verification(base: .insecureLoopbackOnly)
    }

    /// A client certificate for APNs certificate authentication.
    package struct ClientIdentity: Hashable, Sendable {
        enum Base: Hashable, Sendable {
            case pem(certificate: TLSSource, privateKey: TLSSource)
            case pkcs12(TLSSource, password: String)
        }

        let base: Base

        /// A PEM certificate (chain) file and its PEM private key file.
        package static func pem(certificateFile: String, privateKeyFile: String) -> ClientIdentity {
            ClientIdentity(base: .pem(certificate: .file(certificateFile), privateKey: .file(privateKeyFile)))
        }

        /// A PEM certificate (chain) and its PEM private key, from memory (a secret store, an
        /// environment variable) instead of files.
        package static func pem(certificatePEM: [UInt8], privateKeyPEM: [UInt8]) -> ClientIdentity {
            ClientIdentity(base: .pem(certificate: .memory(certificatePEM), privateKey: .memory(privateKeyPEM)))
        }

        /// A PKCS#12 (`.p12`) file and its password.
        package static func pkcs12(path: String, password: String) -> ClientIdentity {
            ClientIdentity(base: .pkcs12(.file(path), password: password))
        }

        /// PKCS#12 (`.p12`) bytes from memory and their password.
        package static func pkcs12(bytes: [UInt8], password: String) -> ClientIdentity {
            ClientIdentity(base: .pkcs12(.memory(bytes), password: password))
        }
    }

    /// Whom to trust.
    package var trustRoots: TrustRoots
    /// How strictly to check.
    package var verification: Verification
    /// The certificate to present, if any.
    package var clientIdentity: ClientIdentity?
    /// The name sent as SNI and checked against the certificate; the connect host when `nil`.
    package var serverName: String?
    /// The TLS context ``prepared()`` built, with the settings it was built from.
    private var kept: PreparedContext?

    /// Creates a configuration; the defaults are the secure ones.
    package init(
        trustRoots: TrustRoots = .system,
        verification: Verification = .full,
        clientIdentity: ClientIdentity? = nil,
        serverName: String? = nil
    ) {
        self.trustRoots = trustRoots
        self.verification = verification
        self.clientIdentity = clientIdentity
        self.serverName = serverName
    }

    /// Loads and checks the trust roots and the client identity now, and keeps the TLS context
    /// they make: every connection made with the returned configuration reuses that context
    /// instead of reading the files again. Call it when the configuration is built, so a bad file
    /// or password is reported before anything connects.
    ///
    /// Changing ``trustRoots``, ``verification`` or ``clientIdentity`` afterwards drops the kept
    /// context (connections then load the files themselves again).
    /// - Returns: this configuration, carrying the context.
    /// - Throws: ``HTTP2TLSConfigurationError`` naming the field, the file and the rule it breaks:
    ///   trust roots that are not PEM certificates, a certificate or key that cannot be read or do
    ///   not match, a PKCS#12 file that is not one, or a wrong password.
    package func prepared() throws(HTTP2TLSConfigurationError) -> HTTP2TLSConfiguration {
        var copy = self
        copy.kept = nil
        let context: TLSContext
        do {
            context = try TLSContext.client(copy)
        } catch let error as HTTP2TLSConfigurationError {
            throw error
        } catch {
            // OpenSSL itself failed (out of memory): no field is to blame, but nothing can connect either.
            throw HTTP2TLSConfigurationError(field: .trustRoots, path: "", rule: "a TLS context must be possible", detail: "\(error)")
        }
        copy.kept = PreparedContext(context: context, key: copy.contextKey)
        return copy
    }

    /// Whether ``prepared()`` built a context that still matches these settings.
    package var isPrepared: Bool { self.preparedContext != nil }

    /// The context ``prepared()`` built, if the settings it depends on are unchanged.
    var preparedContext: TLSContext? {
        guard let kept = self.kept, kept.key == self.contextKey else { return nil }
        return kept.context
    }

    /// What a client context is made of (``serverName`` is per connection, not in the context).
    private var contextKey: ContextKey {
        ContextKey(trustRoots: self.trustRoots, verification: self.verification, clientIdentity: self.clientIdentity)
    }

    struct ContextKey: Hashable, Sendable {
        var trustRoots: TrustRoots
        var verification: Verification
        var clientIdentity: ClientIdentity?
    }

    /// A context built once and shared, read-only, by every connection of a configuration.
    final class PreparedContext: Sendable {
        let context: TLSContext
        let key: ContextKey

        init(context: TLSContext, key: ContextKey) {
            self.context = context
            self.key = key
        }
    }
}

/// How a server sets up TLS: its certificate (PEM files, or a ``LoopbackTLSIdentity`` in memory)
/// and, optionally, a request for client certificates.
package struct HTTP2ServerTLSConfiguration: Sendable {
    /// The PEM certificate chain file (unused, and empty, when ``identity`` is set).
    package var certificateChainFile: String
    /// The PEM private key file (unused, and empty, when ``identity`` is set).
    package var privateKeyFile: String
    /// A certificate and key in memory, used instead of the files.
    package var identity: LoopbackTLSIdentity?
    /// Ask clients for a certificate. Any certificate is accepted by the handshake; whether it
    /// verified against ``clientCertificateTrustRoots`` is reported with the request.
    package var requestsClientCertificate: Bool
    /// The CA that client certificates are checked against, when requested.
    package var clientCertificateTrustRoots: String?

    /// Creates a configuration.
    package init(
        certificateChainFile: String,
        privateKeyFile: String,
        requestsClientCertificate: Bool = false,
        clientCertificateTrustRoots: String? = nil
    ) {
        self.certificateChainFile = certificateChainFile
        self.privateKeyFile = privateKeyFile
        self.requestsClientCertificate = requestsClientCertificate
        self.clientCertificateTrustRoots = clientCertificateTrustRoots
    }

    /// Creates a configuration that serves `identity`'s certificate, with no file on disk.
    package init(
        identity: LoopbackTLSIdentity,
        requestsClientCertificate: Bool = false,
        clientCertificateTrustRoots: String? = nil
    ) {
        self.init(
            certificateChainFile: "", privateKeyFile: "", requestsClientCertificate: requestsClientCertificate,
            clientCertificateTrustRoots: clientCertificateTrustRoots
        )
        self.identity = identity
    }
}
