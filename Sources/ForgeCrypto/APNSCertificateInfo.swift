internal import CForgeOpenSSL
package import struct Foundation.Date

/// What APNs reads from a push certificate: its fingerprint, the bundle id in its subject, and
/// its validity. Used by the local server to authenticate certificate connections (C7) and by
/// the client to check a certificate before connecting.
package struct APNSCertificateInfo: Hashable, Sendable {
    /// SHA-256 of the DER encoding, lower-case hex: a stable identity for registries.
    package var sha256Fingerprint: String
    /// The subject's `UID`: the bundle id on Apple's push certificates.
    package var subjectUserID: String?
    /// The subject's common name (`Apple Push Services: <bundle id>` on Apple's certificates).
    package var subjectCommonName: String?
    /// The start of the validity period.
    package var notBefore: Date
    /// The end of the validity period.
    package var notAfter: Date

    /// The bundle id the certificate is for: the subject `UID`, else what follows
    /// `Apple Push Services: ` in the common name, else the common name.
    package var bundleID: String? {
        if let uid = self.subjectUserID, !uid.isEmpty { return uid }
        guard let name = self.subjectCommonName else { return nil }
        let prefix = "Apple Push Services: "
        return name.hasPrefix(prefix) ? String(name.dropFirst(prefix.count)) : name
    }

    /// Reads a DER-encoded certificate (what a TLS peer presented).
    /// - Throws: ``APNSKeyError`` with code `damaged` when the bytes are not a certificate.
    package init(der: [UInt8]) throws(APNSKeyError) {
        openSSLReady
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let certificate = parsed else {
            throw APNSKeyError(.damaged, path: nil, detail: "is not a DER-encoded X.509 certificate")
        }
        defer { X509_free(certificate) }
        try self.init(certificate: certificate, der: der)
    }

    /// Reads the first certificate of a PEM file.
    /// - Throws: ``APNSKeyError``: file missing or unreadable, not PEM, or not a certificate.
    package init(pemFile path: String) throws(APNSKeyError) {
        var bytes = try PEMLoading.readFile(path)
        openSSLReady
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        bytes.removeAll()
        guard let certificate = parsed else {
            throw APNSKeyError(.notPEM, path: path, detail: "holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        defer { X509_free(certificate) }
        var output: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(certificate, &output)
        guard length > 0, let output else {
            throw APNSKeyError(.damaged, path: path, detail: "cannot be re-encoded as DER")
        }
        defer { CForgeOpenSSL_free(output) }
        try self.init(certificate: certificate, der: Array(UnsafeBufferPointer(start: output, count: Int(length))))
    }

    private init(certificate: OpaquePointer, der: [UInt8]) throws(APNSKeyError) {
        guard let fingerprint = SHA256Digest.hex(der) else {
            throw APNSKeyError(.damaged, path: nil, detail: "cannot be hashed")
        }
        self.sha256Fingerprint = fingerprint
        let subject = X509_get_subject_name(certificate)
        self.subjectUserID = Self.entry(NID_userId, in: subject)
        self.subjectCommonName = Self.entry(NID_commonName, in: subject)
        guard let notBefore = Self.date(X509_get0_notBefore(certificate)),
            let notAfter = Self.date(X509_get0_notAfter(certificate))
        else {
            throw APNSKeyError(.damaged, path: nil, detail: "has an unreadable validity period")
        }
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    private static func entry(_ nid: Int32, in name: OpaquePointer?) -> String? {
        guard let name else { return nil }
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else {
            return nil
        }
        var utf8: UnsafeMutablePointer<UInt8>? = nil
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { CForgeOpenSSL_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: Double(timegm(&parts)))
    }
}
