internal import CForgeOpenSSL

/// A TLS set-up failure, with OpenSSL's reasons.
struct TLSError: Error, CustomStringConvertible {
    var description: String
    /// The handshake completed but the peer selected no `h2`.
    var isALPNMismatch = false
    /// The peer's certificate failed verification (unknown CA, host name mismatch, expired): no
    /// retry can help within a run.
    var isCertificateRejected = false
    /// The peer does not speak TLS (its first bytes are not a TLS record): the wrong scheme or
    /// port, which no retry can mend.
    var isProtocolMismatch = false

    /// What ``description`` starts with for a rejected certificate.
    static let certificateRejectedPrefix = "certificate verification failed: "

    /// The peer's certificate failed with `verifyResult` (an `X509_V_ERR_*` code).
    static func certificateRejected(verifyResult: Int) -> TLSError {
        let reason = X509_verify_cert_error_string(verifyResult).map { String(cString: $0) } ?? "error \(verifyResult)"
        var description = "\(Self.certificateRejectedPrefix)\(reason) (\(verifyResult))"
        // Chains that end at a CA the trust roots do not hold: say so in words, since OpenSSL's
        // "unable to get local issuer certificate" does not tell a user what to change.
        let untrusted: Set<Int32> = [
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE,
        ]
        if untrusted.contains(Int32(truncatingIfNeeded: verifyResult)) {
            description += ": the certificate chain is not trusted (its CA is not among the trust roots)"
        }
        return TLSError(description: description, isCertificateRejected: true)
    }
}

/// Owns one `SSL_CTX*` and frees it exactly once.
///
/// `@unchecked Sendable`: the context is configured in `init` and only read afterwards (`SSL_new`),
/// which OpenSSL allows from several threads.
final class TLSContext: @unchecked Sendable {
    enum Role { case client, server }

    let pointer: OpaquePointer
    let role: Role

    private init(role: Role) throws {
        openSSLReady
        ERR_clear_error()
        guard let context = SSL_CTX_new(role == .client ? TLS_client_method() : TLS_server_method()) else {
            throw TLSError(description: "SSL_CTX_new failed: \(tlsErrorReasons())")
        }
        self.pointer = context
        self.role = role
        guard CForgeOpenSSL_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw TLSError(description: "cannot require TLS 1.2: \(tlsErrorReasons())")
        }
        SSL_CTX_set_options(context, CForgeOpenSSL_SSL_OP_NO_COMPRESSION | CForgeOpenSSL_SSL_OP_NO_RENEGOTIATION)
        _ = CForgeOpenSSL_SSL_CTX_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
    }

    deinit { SSL_CTX_free(self.pointer) }

    /// A client context: trust roots, verification, ALPN h2, optional client certificate. Reuses the
    /// context ``HTTP2TLSConfiguration/prepared()`` built, when `configuration` carries one.
    /// - Throws: ``HTTP2TLSConfigurationError`` for trust roots or a client identity that cannot be
    ///   used; ``TLSError`` when OpenSSL itself fails.
    static func client(_ configuration: HTTP2TLSConfiguration) throws -> TLSContext {
        if let context = configuration.preparedContext { return context }
        let context = try TLSContext(role: .client)
        let ctx = context.pointer
        switch configuration.trustRoots.base {
        case .system:
            guard SSL_CTX_set_default_verify_paths(ctx) == 1 else {
                throw HTTP2TLSConfigurationError(
                    field: .trustRoots, path: "", rule: "the system trust store must load", detail: tlsErrorReasons()
                )
            }
        case .file(let path):
            guard SSL_CTX_load_verify_locations(ctx, path, nil) == 1 else {
                throw HTTP2TLSConfigurationError(
                    field: .trustRoots, path: path, rule: "must be a readable PEM file of CA certificates",
                    detail: tlsErrorReasons()
                )
            }
        case .pem(let text):
            let store = SSL_CTX_get_cert_store(ctx)
            let count = forEachPEMCertificate(text) { X509_STORE_add_cert(store, $0) == 1 }
            guard let count, count > 0 else {
                throw HTTP2TLSConfigurationError(
                    field: .trustRoots, path: "", rule: "must be PEM text of one or more CA certificates", detail: tlsErrorReasons()
                )
            }
        }
        let verify = configuration.verification == .full ? SSL_VERIFY_PEER : SSL_VERIFY_NONE
        SSL_CTX_set_verify(ctx, verify, nil)
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        guard alpn.withUnsafeBufferPointer({ SSL_CTX_set_alpn_protos(ctx, $0.baseAddress, UInt32($0.count)) }) == 0 else {
            throw TLSError(description: "cannot offer ALPN h2: \(tlsErrorReasons())")
        }
        if let identity = configuration.clientIdentity {
            try context.useIdentity(identity)
        }
        return context
    }

    /// A server context: certificate and key, ALPN h2 only, optional client-certificate request.
    static func server(_ configuration: HTTP2ServerTLSConfiguration) throws -> TLSContext {
        let context = try TLSContext(role: .server)
        let ctx = context.pointer
        if let identity = configuration.identity {
            guard SSL_CTX_use_certificate(ctx, identity.certificate) == 1, SSL_CTX_use_PrivateKey(ctx, identity.privateKey) == 1,
                SSL_CTX_check_private_key(ctx) == 1
            else {
                throw TLSError(description: "cannot use the in-memory loopback certificate: \(tlsErrorReasons())")
            }
        } else {
            guard SSL_CTX_use_certificate_chain_file(ctx, configuration.certificateChainFile) == 1 else {
                throw TLSError(description: "cannot load the certificate '\(configuration.certificateChainFile)': \(tlsErrorReasons())")
            }
            guard SSL_CTX_use_PrivateKey_file(ctx, configuration.privateKeyFile, SSL_FILETYPE_PEM) == 1,
                SSL_CTX_check_private_key(ctx) == 1
            else {
                throw TLSError(description: "cannot load the private key '\(configuration.privateKeyFile)': \(tlsErrorReasons())")
            }
        }
        SSL_CTX_set_alpn_select_cb(ctx, selectH2, nil)
        if configuration.requestsClientCertificate {
            if let roots = configuration.clientCertificateTrustRoots {
                guard SSL_CTX_load_verify_locations(ctx, roots, nil) == 1 else {
                    throw TLSError(description: "cannot load client trust roots '\(roots)': \(tlsErrorReasons())")
                }
            }
            // Accept any certificate in the handshake; the verification result travels with the request.
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, { _, _ in 1 })
        }
        return context
    }

    private func useIdentity(_ identity: HTTP2TLSConfiguration.ClientIdentity) throws(HTTP2TLSConfigurationError) {
        switch identity.base {
        case .pem(let certificate, let privateKey):
            guard self.useCertificateChain(certificate) else {
                throw HTTP2TLSConfigurationError(
                    field: .clientCertificate, path: certificate.label, rule: "must be a readable PEM certificate (chain)",
                    detail: tlsErrorReasons()
                )
            }
            // Read apart from SSL_CTX_use_PrivateKey, which would report a key of another certificate
            // as unreadable; and with a password callback that gives none, so an encrypted key fails
            // instead of OpenSSL asking for its password on the terminal.
            guard let file = privateKey.openBIO() else {
                throw HTTP2TLSConfigurationError(
                    field: .clientPrivateKey, path: privateKey.label, rule: "must be a readable, unencrypted PEM private key",
                    detail: tlsErrorReasons()
                )
            }
            defer { BIO_free(file) }
            guard let key = PEM_read_bio_PrivateKey(file, nil, { _, _, _, _ in 0 }, nil) else {
                throw HTTP2TLSConfigurationError(
                    field: .clientPrivateKey, path: privateKey.label, rule: "must be a readable, unencrypted PEM private key",
                    detail: tlsErrorReasons()
                )
            }
            defer { EVP_PKEY_free(key) }
            guard SSL_CTX_use_PrivateKey(self.pointer, key) == 1, SSL_CTX_check_private_key(self.pointer) == 1 else {
                throw HTTP2TLSConfigurationError(
                    field: .clientPrivateKey, path: privateKey.label,
                    rule: "must be the private key of the certificate '\(certificate.label)'", detail: tlsErrorReasons()
                )
            }
        case .pkcs12(let source, let password):
            let path = source.label
            guard let bio = source.openBIO() else {
                throw HTTP2TLSConfigurationError(
                    field: .pkcs12, path: path, rule: "must be a readable PKCS#12 (.p12) file", detail: tlsErrorReasons()
                )
            }
            defer { BIO_free(bio) }
            guard let p12 = d2i_PKCS12_bio(bio, nil) else {
                throw HTTP2TLSConfigurationError(
                    field: .pkcs12, path: path, rule: "must be a PKCS#12 (.p12) file", detail: tlsErrorReasons()
                )
            }
            defer { PKCS12_free(p12) }
            // Checked on its own first: PKCS12_parse reports a wrong password as "mac verify failure".
            if PKCS12_mac_present(p12) == 1, PKCS12_verify_mac(p12, password, -1) != 1 {
                ERR_clear_error()  // OpenSSL adds nothing useful to "the MAC does not verify"
                throw HTTP2TLSConfigurationError(
                    field: .pkcs12Password, path: path, rule: "must open the file: wrong password"
                )
            }
            var key: OpaquePointer? = nil
            var certificate: OpaquePointer? = nil
            var chain: OpaquePointer? = nil
            let parsed = PKCS12_parse(p12, password, &key, &certificate, &chain) == 1
            defer {
                if let key { EVP_PKEY_free(key) }
                if let certificate { X509_free(certificate) }
                if let chain { OPENSSL_sk_pop_free(chain, { X509_free(OpaquePointer($0)) }) }
            }
            guard parsed, let key, let certificate else {
                throw HTTP2TLSConfigurationError(
                    field: .pkcs12, path: path, rule: "must hold a certificate and its private key", detail: tlsErrorReasons()
                )
            }
            guard SSL_CTX_use_certificate(self.pointer, certificate) == 1, SSL_CTX_use_PrivateKey(self.pointer, key) == 1,
                SSL_CTX_check_private_key(self.pointer) == 1
            else {
                throw HTTP2TLSConfigurationError(
                    field: .pkcs12, path: path, rule: "must hold a certificate and the private key that matches it",
                    detail: tlsErrorReasons()
                )
            }
        }
    }

    /// Uses the first PEM certificate of `source` and the rest as its chain (what
    /// `SSL_CTX_use_certificate_chain_file` does for a file). - Returns: whether a certificate loaded.
    private func useCertificateChain(_ source: TLSSource) -> Bool {
        if case .file(let path) = source { return SSL_CTX_use_certificate_chain_file(self.pointer, path) == 1 }
        guard let bio = source.openBIO() else { return false }
        defer { BIO_free(bio) }
        guard let leaf = PEM_read_bio_X509_AUX(bio, nil, nil, nil) else { return false }
        defer { X509_free(leaf) }
        guard SSL_CTX_use_certificate(self.pointer, leaf) == 1 else { return false }
        while let intermediate = PEM_read_bio_X509(bio, nil, nil, nil) {
            // SSL_CTX_add0_chain_cert (a macro): the context takes the certificate on success.
            guard SSL_CTX_ctrl(self.pointer, SSL_CTRL_CHAIN_CERT, 0, UnsafeMutableRawPointer(intermediate)) == 1 else {
                X509_free(intermediate)
                return false
            }
        }
        // The loop ends at the end of the text, which OpenSSL queues as an error.
        ERR_clear_error()
        return true
    }
}

/// Where TLS material comes from: a file, or bytes in memory (named `(in memory)` in errors; the
/// bytes themselves are never shown).
enum TLSSource: Hashable, Sendable {
    case file(String)
    case memory([UInt8])

    /// How errors name it.
    var label: String {
        switch self {
        case .file(let path): path
        case .memory: "(in memory)"
        }
    }

    /// A BIO reading the file or a copy of the bytes; the caller frees it.
    func openBIO() -> OpaquePointer? {
        switch self {
        case .file(let path):
            return BIO_new_file(path, "rb")
        case .memory(let bytes):
            guard let bio = BIO_new(BIO_s_mem()) else { return nil }
            let written = bytes.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32($0.count)) }
            guard written == Int32(bytes.count) || bytes.isEmpty else {
                BIO_free(bio)
                return nil
            }
            return bio
        }
    }
}

/// The server picks `h2` or refuses the handshake: an APNs server speaks nothing else.
private let selectH2: SSL_CTX_alpn_select_cb_func = { _, out, outLength, input, inputLength, _ in
    guard let out, let outLength, let input else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    var index = 0
    while index < Int(inputLength) {
        let length = Int(input[index])
        if length == 2, index + 2 < Int(inputLength), input[index + 1] == UInt8(ascii: "h"), input[index + 2] == UInt8(ascii: "2") {
            out.pointee = input + index + 1
            outLength.pointee = 2
            return SSL_TLSEXT_ERR_OK
        }
        index += 1 + length
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL
}

/// OpenSSL's queued reasons on this thread, joined; the queue is emptied.
func tlsErrorReasons() -> String {
    var reasons: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        reasons.append(ERR_reason_error_string(code).map { String(cString: $0) } ?? "error \(code)")
    }
    return reasons.isEmpty ? "no reason given" : reasons.joined(separator: "; ")
}

/// OpenSSL initialized without its exit-time cleanup (`CForgeOpenSSL_initWithoutExitCleanup`):
/// a connection's I/O thread may still be ending its TLS session when its process exits. Every
/// entry point of this module that calls OpenSSL reads it first.
let openSSLReady: Void = CForgeOpenSSL_initWithoutExitCleanup()

/// The files OpenSSL's default verify paths read (`SSL_CTX_set_default_verify_paths`): the
/// variables `SSL_CERT_FILE` and `SSL_CERT_DIR` when set, else the paths it was built with.
func systemTrustStorePaths() -> String {
    func path(variable: UnsafePointer<CChar>?, builtIn: UnsafePointer<CChar>?) -> String {
        let name = variable.map { String(cString: $0) } ?? ""
        if !name.isEmpty, let value = getenv(name), value.pointee != 0 { return "\(name)=\(String(cString: value))" }
        return builtIn.map { String(cString: $0) } ?? "?"
    }
    let file = path(variable: X509_get_default_cert_file_env(), builtIn: X509_get_default_cert_file())
    let directory = path(variable: X509_get_default_cert_dir_env(), builtIn: X509_get_default_cert_dir())
    return "\(file), \(directory)"
}
