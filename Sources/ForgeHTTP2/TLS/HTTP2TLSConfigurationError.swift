/// Why a TLS configuration cannot be used, found when it is prepared
/// (``HTTP2TLSConfiguration/prepared()``) rather than at each connect: a trust-roots file that
/// holds no certificate, a client certificate or key that cannot be read or do not match, a file
/// that is not PKCS#12, or a password that does not open it.
///
/// Errors compare equal when their ``field`` is equal.
package struct HTTP2TLSConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Which setting is wrong.
    package struct Field: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case trustRoots, clientCertificate, clientPrivateKey, pkcs12, pkcs12Password, serverCertificate
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// ``HTTP2TLSConfiguration/trustRoots``: the CA file (or the system store).
        package static let trustRoots = Field(.trustRoots)
        /// The certificate file of a PEM ``HTTP2TLSConfiguration/ClientIdentity``.
        package static let clientCertificate = Field(.clientCertificate)
        /// The private key file of a PEM ``HTTP2TLSConfiguration/ClientIdentity``.
        package static let clientPrivateKey = Field(.clientPrivateKey)
        /// The file of a PKCS#12 ``HTTP2TLSConfiguration/ClientIdentity``.
        package static let pkcs12 = Field(.pkcs12)
        /// The password of a PKCS#12 ``HTTP2TLSConfiguration/ClientIdentity``.
        package static let pkcs12Password = Field(.pkcs12Password)
        /// A server's certificate, such as a ``LoopbackTLSIdentity`` that could not be made.
        package static let serverCertificate = Field(.serverCertificate)

        package var description: String {
            switch self.base {
            case .trustRoots: return "trustRoots"
            case .clientCertificate: return "clientIdentity certificate"
            case .clientPrivateKey: return "clientIdentity private key"
            case .pkcs12: return "clientIdentity PKCS#12 file"
            case .pkcs12Password: return "clientIdentity PKCS#12 password"
            case .serverCertificate: return "server certificate"
            }
        }
    }

    /// The setting at fault.
    package var field: Field
    /// The file concerned (empty for the system trust store).
    package var path: String
    /// The rule it breaks, such as "must be a readable PEM file of CA certificates".
    package var rule: String
    /// OpenSSL's reasons.
    package var detail: String
    /// Where the error was made.
    package var file: String
    /// The line it was made on.
    package var line: Int

    /// Creates an error.
    package init(field: Field, path: String, rule: String, detail: String = "", file: String = #fileID, line: Int = #line) {
        self.field = field
        self.path = path
        self.rule = rule
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// `<field> '<path>' <rule> (<OpenSSL's reasons>)`; never a password.
    package var description: String {
        var text = "\(self.field)"
        if !self.path.isEmpty { text += " '\(self.path)'" }
        text += " \(self.rule)"
        if !self.detail.isEmpty { text += " (\(self.detail))" }
        return text
    }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.field == rhs.field }
    package func hash(into hasher: inout Hasher) { hasher.combine(self.field) }
}
