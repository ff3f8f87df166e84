internal import CForgeOpenSSL

/// An ES256 (EC P-256) private key that signs provider tokens: the `.p8` file from Apple.
///
/// ```swift
/// let key = try APNSSigningKey(contentsOfFile: "AuthKey_ABC123DEFG.p8")
/// ```
///
/// The file's bytes are wiped as soon as they are parsed; the parsed key is freed (and cleared by
/// OpenSSL) when the last copy of this value goes. Neither `description` nor any error shows key
/// material.
public struct APNSSigningKey: Sendable, CustomStringConvertible {
    let key: EVPKey

    /// Loads a PEM key file (PKCS#8 `BEGIN PRIVATE KEY`, as Apple issues, or SEC1 `BEGIN EC PRIVATE KEY`).
    /// - Throws: ``APNSKeyError`` saying what is wrong: missing or unreadable file, not PEM,
    ///   encrypted, a public key or certificate, RSA, another key type, another curve, damaged.
    public init(contentsOfFile path: String) throws(APNSKeyError) {
        var bytes = try PEMLoading.readFile(path)
        try self.init(parsing: &bytes, path: path)
    }

    /// Parses PEM text. The caller's `String` cannot be wiped; prefer ``init(pemBytes:)`` with a buffer
    /// you clear afterwards.
    public init(pemRepresentation: String) throws(APNSKeyError) {
        var bytes = Array(pemRepresentation.utf8)
        try self.init(parsing: &bytes, path: nil)
    }

    /// Parses PEM bytes; the copy made here is wiped after parsing.
    public init(pemBytes: [UInt8]) throws(APNSKeyError) {
        var bytes = pemBytes
        try self.init(parsing: &bytes, path: nil)
    }

    private init(parsing bytes: inout [UInt8], path: String?) throws(APNSKeyError) {
        let key = try PEMLoading.parse(&bytes, kind: .privateKey, path: path)
        try key.checkP256(path: path)
        guard key.hasPrivateKey else {
            throw APNSKeyError(.publicKeyOnly, path: path, detail: "holds no private key; signing needs the .p8 file")
        }
        self.key = key
    }

    /// A new random P-256 key, for tests and benchmarks.
    public static func generate() throws(APNSKeyError) -> APNSSigningKey {
        openSSLReady
        ERR_clear_error()
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else {
            throw APNSKeyError(.signingFailed, detail: "cannot create a key context: \(drainOpenSSLErrors())")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_keygen_init(context) == 1,
            EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &pkey) == 1,
            let pkey
        else {
            throw APNSKeyError(.signingFailed, detail: "cannot generate a P-256 key: \(drainOpenSSLErrors())")
        }
        return APNSSigningKey(key: EVPKey(taking: pkey))
    }

    private init(key: EVPKey) { self.key = key }

    /// The matching public key, to verify this key's signatures.
    public var publicKey: APNSVerificationKey { APNSVerificationKey(key: self.key) }

    /// Signs `message` (SHA-256, ECDSA P-256) and returns the 64-byte raw `r‖s` signature.
    /// - Throws: ``APNSKeyError/Code/signingFailed`` if OpenSSL fails.
    public func signature(for message: [UInt8]) throws(APNSKeyError) -> [UInt8] {
        try ECDSA.sign(message, with: self.key)
    }

    public var description: String { "APNSSigningKey(P-256, private key redacted)" }
}

/// An ES256 public key that verifies provider tokens (the local APNs server uses it).
public struct APNSVerificationKey: Sendable, CustomStringConvertible {
    let key: EVPKey

    init(key: EVPKey) { self.key = key }

    /// Parses a PEM public key (`BEGIN PUBLIC KEY`), or a private key from which the public one is taken.
    /// - Throws: ``APNSKeyError`` as for ``APNSSigningKey``.
    public init(pemRepresentation: String) throws(APNSKeyError) {
        var bytes = Array(pemRepresentation.utf8)
        try self.init(parsing: &bytes, path: nil)
    }

    /// Loads a PEM public key file, or a private key file from which the public key is taken.
    public init(contentsOfFile path: String) throws(APNSKeyError) {
        var bytes = try PEMLoading.readFile(path)
        try self.init(parsing: &bytes, path: path)
    }

    private init(parsing bytes: inout [UInt8], path: String?) throws(APNSKeyError) {
        let text = String(decoding: bytes.prefix(4096), as: UTF8.self)
        let kind: PEMLoading.Kind = text.contains("PRIVATE KEY-----") ? .privateKey : .publicKey
        let key = try PEMLoading.parse(&bytes, kind: kind, path: path)
        try key.checkP256(path: path)
        self.key = key
    }

    /// Whether `signature` is a valid ES256 signature of `message` by this key.
    /// - Parameter format: ``APNSSignatureFormat/raw`` (64 bytes, what JWS requires) or DER.
    package func isValidSignature(_ signature: [UInt8], for message: [UInt8], format: APNSSignatureFormat = .raw) -> Bool {
        ECDSA.verify(signature, format: format, message: message, with: self.key)
    }

    /// The key as PEM `SubjectPublicKeyInfo` (`BEGIN PUBLIC KEY`).
    public var pemRepresentation: String {
        self.key.withUnsafeKey { pkey in
            guard let bio = BIO_new(BIO_s_mem()) else { return "" }
            defer { BIO_free(bio) }
            guard PEM_write_bio_PUBKEY(bio, pkey) == 1 else { return "" }
            var data: UnsafeMutablePointer<CChar>? = nil
            let length = CForgeOpenSSL_BIO_get_mem_data(bio, &data)
            guard length > 0, let data else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
        }
    }

    public var description: String { "APNSVerificationKey(P-256)" }
}
