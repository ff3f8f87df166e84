internal import CForgeOpenSSL

/// A TLS set-up failure, with OpenSSL's reasons.
struct TLSError: Error, CustomStringConvertible {
    var description: String
    /// The handshake completed but the peer selected no `h2`.
    var isALPNMismatch = false
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

    /// A client context: trust roots, verification, ALPN h2, optional client certificate.
    static func client(_ configuration: HTTP2TLSConfiguration) throws -> TLSContext {
        let context = try TLSContext(role: .client)
        let ctx = context.pointer
        switch configuration.trustRoots.base {
        case .system:
            guard SSL_CTX_set_default_verify_paths(ctx) == 1 else {
                throw TLSError(description: "cannot load the system trust store: \(tlsErrorReasons())")
            }
        case .file(let path):
            guard SSL_CTX_load_verify_locations(ctx, path, nil) == 1 else {
                throw TLSError(description: "cannot load trust roots from '\(path)': \(tlsErrorReasons())")
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
        guard SSL_CTX_use_certificate_chain_file(ctx, configuration.certificateChainFile) == 1 else {
            throw TLSError(description: "cannot load the certificate '\(configuration.certificateChainFile)': \(tlsErrorReasons())")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, configuration.privateKeyFile, SSL_FILETYPE_PEM) == 1,
            SSL_CTX_check_private_key(ctx) == 1
        else {
            throw TLSError(description: "cannot load the private key '\(configuration.privateKeyFile)': \(tlsErrorReasons())")
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

    private func useIdentity(_ identity: HTTP2TLSConfiguration.ClientIdentity) throws {
        switch identity.base {
        case .pem(let certificate, let privateKey):
            guard SSL_CTX_use_certificate_chain_file(self.pointer, certificate) == 1 else {
                throw TLSError(description: "cannot load the client certificate '\(certificate)': \(tlsErrorReasons())")
            }
            guard SSL_CTX_use_PrivateKey_file(self.pointer, privateKey, SSL_FILETYPE_PEM) == 1,
                SSL_CTX_check_private_key(self.pointer) == 1
            else {
                throw TLSError(description: "cannot load the client key '\(privateKey)': \(tlsErrorReasons())")
            }
        case .pkcs12(let path, let password):
            guard let bio = BIO_new_file(path, "rb") else {
                throw TLSError(description: "cannot open the PKCS#12 file '\(path)': \(tlsErrorReasons())")
            }
            defer { BIO_free(bio) }
            guard let p12 = d2i_PKCS12_bio(bio, nil) else {
                throw TLSError(description: "'\(path)' is not a PKCS#12 file: \(tlsErrorReasons())")
            }
            defer { PKCS12_free(p12) }
            var key: OpaquePointer? = nil
            var certificate: OpaquePointer? = nil
            var chain: OpaquePointer? = nil
            guard PKCS12_parse(p12, password, &key, &certificate, &chain) == 1, let key, let certificate else {
                throw TLSError(description: "cannot open '\(path)' (wrong password?): \(tlsErrorReasons())")
            }
            defer {
                EVP_PKEY_free(key)
                X509_free(certificate)
                if let chain { OPENSSL_sk_pop_free(chain, { X509_free(OpaquePointer($0)) }) }
            }
            guard SSL_CTX_use_certificate(self.pointer, certificate) == 1, SSL_CTX_use_PrivateKey(self.pointer, key) == 1,
                SSL_CTX_check_private_key(self.pointer) == 1
            else {
                throw TLSError(description: "cannot use the identity in '\(path)': \(tlsErrorReasons())")
            }
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
