internal import CForgeOpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// Reads PEM key files and text into `EVPKey`s, classifying every failure.
enum PEMLoading {
    enum Kind {
        case privateKey
        case publicKey
    }

    /// The bytes of `path`, read with POSIX calls so the buffer is ours to wipe.
    static func readFile(_ path: String) throws(APNSKeyError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let error = errno
            if error == ENOENT || error == ENOTDIR {
                throw APNSKeyError(.fileNotFound, path: path, detail: "the file does not exist")
            }
            throw APNSKeyError(.fileUnreadable, path: path, detail: "cannot be opened: \(String(cString: strerror(error)))")
        }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        defer { cleanse(&chunk) }
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                let error = errno
                if error == EINTR { continue }
                cleanse(&bytes)
                let reason = error == EISDIR ? "is a directory, not a key file" : "cannot be read: \(String(cString: strerror(error)))"
                throw APNSKeyError(.fileUnreadable, path: path, detail: reason)
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > 1 << 20 {
                cleanse(&bytes)
                throw APNSKeyError(.notPEM, path: path, detail: "is larger than 1 MiB; a .p8 key is a few hundred bytes")
            }
        }
        return bytes
    }

    /// Parses PEM `bytes` as a key of `kind`, then wipes them.
    static func parse(_ bytes: inout [UInt8], kind: Kind, path: String?) throws(APNSKeyError) -> EVPKey {
        defer { cleanse(&bytes) }
        try Self.classify(bytes, kind: kind, path: path)
        openSSLReady
        ERR_clear_error()
        // BIO_new_mem_buf does not copy (OpenSSL's BIO_s_mem(3)): everything that reads the BIO
        // happens inside this closure, while the bytes are alive.
        let key: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            switch kind {
            case .privateKey:
                // A callback that supplies no password, so OpenSSL never prompts on a terminal.
                return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
            case .publicKey:
                return PEM_read_bio_PUBKEY(bio, nil, { _, _, _, _ in 0 }, nil)
            }
        }
        guard let key else {
            let reason = drainOpenSSLErrors()
            throw APNSKeyError(
                .damaged, path: path,
                detail: "the key is truncated or damaged (OpenSSL: \(reason)); download the .p8 file again"
            )
        }
        ERR_clear_error()
        return EVPKey(taking: key)
    }

    /// Names what the PEM text is before OpenSSL parses it, for errors OpenSSL cannot phrase.
    private static func classify(_ bytes: [UInt8], kind: Kind, path: String?) throws(APNSKeyError) {
        let text = String(decoding: bytes.prefix(4096), as: UTF8.self)
        guard !bytes.isEmpty else {
            throw APNSKeyError(.notPEM, path: path, detail: "is empty; a .p8 key starts with -----BEGIN PRIVATE KEY-----")
        }
        guard text.contains("-----BEGIN ") else {
            throw APNSKeyError(
                .notPEM, path: path,
                detail: "is not PEM text; a .p8 key starts with -----BEGIN PRIVATE KEY----- (convert DER with `openssl pkey -inform DER`)"
            )
        }
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw APNSKeyError(
                .encrypted, path: path,
                detail: "the key is encrypted with a password; Apple's .p8 keys are not: decrypt it with `openssl pkey -in KEY -out AuthKey.p8`"
            )
        }
        if text.contains("-----BEGIN RSA PRIVATE KEY-----") || text.contains("-----BEGIN RSA PUBLIC KEY-----") {
            throw APNSKeyError(
                .rsaKey, path: path,
                detail: "this is an RSA key; APNs provider tokens are signed with an EC P-256 (ES256) key from developer.apple.com"
            )
        }
        if kind == .privateKey, text.contains("-----BEGIN PUBLIC KEY-----"), !text.contains("PRIVATE KEY-----") {
            throw APNSKeyError(
                .publicKeyOnly, path: path,
                detail: "holds a public key; signing provider tokens needs the private key (the .p8 file)"
            )
        }
        if kind == .privateKey, text.contains("-----BEGIN CERTIFICATE-----"), !text.contains("PRIVATE KEY-----") {
            throw APNSKeyError(
                .publicKeyOnly, path: path,
                detail: "holds a certificate; token authentication needs the .p8 private key (certificates are for certificate authentication)"
            )
        }
    }
}
