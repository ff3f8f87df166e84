/// How a client sets up TLS. Secure by default: the system trust store, host name checks, TLS 1.2+,
/// ALPN `h2` required.
public struct HTTP2TLSConfiguration: Sendable {
    /// Which certificates the client trusts.
    public struct TrustRoots: Hashable, Sendable {
        enum Base: Hashable, Sendable {
            case system
            case file(String)
        }

        let base: Base

        /// The system's trust store.
        public static let system = TrustRoots(base: .system)
        /// The PEM certificates in `path` (for example a test CA).
        public static func file(_ path: String) -> TrustRoots { TrustRoots(base: .file(path)) }
    }

    /// How strictly the server certificate is checked.
    public struct Verification: Hashable, Sendable {
        enum Base: Hashable, Sendable {
            case full
            case insecureLoopbackOnly
        }

        let base: Base

        /// Chain, validity and host name (or IP address) are checked. The default.
        public static let full = Verification(base: .full)
        /// No check at all, allowed only when connecting to a loopback address (`127.0.0.0/8`, `::1`,
        /// `localhost`); connecting anywhere else with it fails before a byte is sent.
        public static let insecureLoopbackOnly = Verification(base: .insecureLoopbackOnly)
    }

    /// A client certificate for APNs certificate authentication.
    public struct ClientIdentity: Hashable, Sendable {
        enum Base: Hashable, Sendable {
            case pem(certificate: String, privateKey: String)
            case pkcs12(path: String, password: String)
        }

        let base: Base

        /// A PEM certificate (chain) file and its PEM private key file.
        public static func pem(certificateFile: String, privateKeyFile: String) -> ClientIdentity {
            ClientIdentity(base: .pem(certificate: certificateFile, privateKey: privateKeyFile))
        }

        /// A PKCS#12 (`.p12`) file and its password.
        public static func pkcs12(path: String, password: String) -> ClientIdentity {
            ClientIdentity(base: .pkcs12(path: path, password: password))
        }
    }

    /// Whom to trust.
    public var trustRoots: TrustRoots
    /// How strictly to check.
    public var verification: Verification
    /// The certificate to present, if any.
    public var clientIdentity: ClientIdentity?
    /// The name sent as SNI and checked against the certificate; the connect host when `nil`.
    public var serverName: String?

    /// Creates a configuration; the defaults are the secure ones.
    public init(
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
}

/// How a server sets up TLS: its certificate and, optionally, a request for client certificates.
public struct HTTP2ServerTLSConfiguration: Sendable {
    /// The PEM certificate chain file.
    public var certificateChainFile: String
    /// The PEM private key file.
    public var privateKeyFile: String
    /// Ask clients for a certificate. Any certificate is accepted by the handshake; whether it
    /// verified against ``clientCertificateTrustRoots`` is reported with the request.
    public var requestsClientCertificate: Bool
    /// The CA that client certificates are checked against, when requested.
    public var clientCertificateTrustRoots: String?

    /// Creates a configuration.
    public init(
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
}
