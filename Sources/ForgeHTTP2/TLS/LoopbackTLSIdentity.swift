internal import CForgeOpenSSL

/// A certificate authority made in memory for one run, and a server certificate it issued for
/// `localhost`, `127.0.0.1` and `::1`: TLS on loopback with no file on disk.
///
/// A server uses it through ``HTTP2ServerTLSConfiguration/init(identity:requestsClientCertificate:clientCertificateTrustRoots:)``;
/// a client trusts it with ``HTTP2TLSConfiguration/TrustRoots/pem(_:)`` and ``caCertificatePEM``,
/// and a tool such as curl with that PEM written to a file (`--cacert`). Both keys are P-256 and
/// stay in memory: the CA's key is freed once it signed the server certificate, the server's key
/// lives in this object and is never printed or written. Each run makes a new CA, so a client
/// trusts only the server of that run.
///
/// `@unchecked Sendable`: the certificate and key are made in `init` and only read afterwards
/// (`SSL_CTX_use_certificate` and `SSL_CTX_use_PrivateKey` take their own references), which
/// OpenSSL allows from several threads.
package final class LoopbackTLSIdentity: @unchecked Sendable, CustomStringConvertible {
    /// The CA certificate (PEM, `CA:TRUE`): what a client trusts.
    package let caCertificatePEM: String
    /// The server certificate (PEM), issued by the CA, for `DNS:localhost`, `IP:127.0.0.1`, `IP:::1`.
    package let certificatePEM: String
    /// The server certificate (`X509*`), owned.
    let certificate: OpaquePointer
    /// The server's private key (`EVP_PKEY*`), owned.
    let privateKey: OpaquePointer

    /// The names the server certificate is valid for.
    package static let subjectAlternativeNames = "DNS:localhost,IP:127.0.0.1,IP:::1"

    /// Makes a CA and a server certificate valid from an hour ago (a client's clock may lag a
    /// little) for `validDays` days.
    /// - Parameter validDays: how long both certificates stay valid, 1...3650 days (default 7).
    /// - Throws: ``HTTP2TLSConfigurationError`` with field `serverCertificate` when OpenSSL cannot
    ///   make a key or a certificate.
    package init(validDays: Int = 7) throws(HTTP2TLSConfigurationError) {
        precondition((1...3650).contains(validDays), "validDays must be 1...3650")
        openSSLReady
        ERR_clear_error()
        let lifetime = validDays * 86_400
        let caKey = try Self.makeKey()
        defer { EVP_PKEY_free(caKey) }
        let ca = try Self.makeCertificate(
            commonName: "ForgePush ephemeral loopback CA", key: caKey, issuer: nil, lifetime: lifetime,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
            ]
        )
        defer { X509_free(ca) }
        let caPEM = try Self.pem(ca)
        let serverKey = try Self.makeKey()
        let server: OpaquePointer
        let serverPEM: String
        do {
            server = try Self.makeCertificate(
                commonName: "localhost", key: serverKey, issuer: (ca, caKey), lifetime: lifetime,
                extensions: [
                    (NID_basic_constraints, "critical,CA:FALSE"),
                    (NID_key_usage, "critical,digitalSignature"),
                    (NID_ext_key_usage, "serverAuth"),
                    (NID_subject_alt_name, Self.subjectAlternativeNames),
                    (NID_subject_key_identifier, "hash"),
                    (NID_authority_key_identifier, "keyid:always"),
                ]
            )
        } catch {
            EVP_PKEY_free(serverKey)
            throw error
        }
        do {
            serverPEM = try Self.pem(server)
        } catch {
            X509_free(server)
            EVP_PKEY_free(serverKey)
            throw error
        }
        self.certificate = server
        self.privateKey = serverKey
        self.caCertificatePEM = caPEM
        self.certificatePEM = serverPEM
    }

    deinit {
        X509_free(self.certificate)
        EVP_PKEY_free(self.privateKey)
    }

    /// Names the certificate, never the key.
    package var description: String { "LoopbackTLSIdentity(\(Self.subjectAlternativeNames), private key not shown)" }

    private static func failure(_ step: String) -> HTTP2TLSConfigurationError {
        HTTP2TLSConfigurationError(
            field: .serverCertificate, path: "", rule: "an ephemeral loopback certificate must be possible (\(step))",
            detail: tlsErrorReasons()
        )
    }

    /// A new P-256 key, owned by the caller.
    private static func makeKey() throws(HTTP2TLSConfigurationError) -> OpaquePointer {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw Self.failure("key context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw Self.failure("P-256 key") }
        return key
    }

    /// A signed X.509 v3 certificate for `key`, owned by the caller: self-signed when `issuer` is nil.
    private static func makeCertificate(
        commonName: String, key: OpaquePointer, issuer: (certificate: OpaquePointer, key: OpaquePointer)?, lifetime: Int,
        extensions: [(Int32, String)]
    ) throws(HTTP2TLSConfigurationError) -> OpaquePointer {
        guard let certificate = X509_new() else { throw Self.failure("X509_new") }
        var done = false
        defer { if !done { X509_free(certificate) } }
        guard let serial = BN_new() else { throw Self.failure("serial") }
        defer { BN_free(serial) }
        // 127 random bits: unique serials without a counter, and positive as RFC 5280 asks.
        guard X509_set_version(certificate, 2) == 1,  // v3, for the extensions
            BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1,
            BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(certificate)) != nil,
            X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil,
            X509_gmtime_adj(X509_getm_notAfter(certificate), lifetime) != nil
        else { throw Self.failure("serial and validity") }
        let subject = X509_get_subject_name(certificate)
        let name = Array(commonName.utf8)
        guard X509_NAME_add_entry_by_txt(subject, "CN", CForgeOpenSSL_MBSTRING_ASC, name, Int32(name.count), -1, 0) == 1,
            X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0.certificate) } ?? subject) == 1,
            X509_set_pubkey(certificate, key) == 1
        else { throw Self.failure("names and package key") }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.certificate ?? certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions {
            guard let `extension` = X509V3_EXT_conf_nid(nil, &context, nid, value) else { throw Self.failure("extension \(value)") }
            defer { X509_EXTENSION_free(`extension`) }
            guard X509_add_ext(certificate, `extension`, -1) == 1 else { throw Self.failure("extension \(value)") }
        }
        guard X509_sign(certificate, issuer?.key ?? key, EVP_sha256()) > 0 else { throw Self.failure("signature") }
        done = true
        return certificate
    }

    private static func pem(_ certificate: OpaquePointer) throws(HTTP2TLSConfigurationError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw Self.failure("memory BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, certificate) == 1 else { throw Self.failure("PEM") }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = CForgeOpenSSL_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { throw Self.failure("PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}

/// Calls `body` with each certificate (`X509*`, freed after the call) of the PEM text `pem`;
/// returns how many there were.
func forEachPEMCertificate(_ pem: String, _ body: (OpaquePointer) -> Bool) -> Int? {
    pem.withCString { text -> Int? in
        guard let bio = BIO_new_mem_buf(text, -1) else { return nil }
        defer { BIO_free(bio) }
        var count = 0
        while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
            defer { X509_free(certificate) }
            guard body(certificate) else { return nil }
            count += 1
        }
        // The loop ends with "no start line" at the end of the text: expected, not an error.
        ERR_clear_error()
        return count
    }
}
