internal import CForgeOpenSSL

/// ES256 signing and verification over OpenSSL, with JWS (raw r‖s) and DER signature forms.
enum ECDSA {
    /// Signs `message` with SHA-256 and returns the 64-byte raw `r‖s` form JWS requires.
    static func sign(_ message: [UInt8], with key: EVPKey) throws(APNSKeyError) -> [UInt8] {
        ERR_clear_error()
        let der: [UInt8]? = key.withUnsafeKey { pkey in
            guard let context = EVP_MD_CTX_new() else { return nil }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey) == 1 else { return nil }
            var length = 0
            guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1
            else { return nil }
            var signature = [UInt8](repeating: 0, count: length)
            let ok = signature.withUnsafeMutableBufferPointer { output in
                message.withUnsafeBufferPointer { input in
                    EVP_DigestSign(context, output.baseAddress, &length, input.baseAddress, input.count)
                }
            }
            guard ok == 1 else { return nil }
            return Array(signature.prefix(length))
        }
        guard let der, let raw = Self.rawSignature(fromDER: der) else {
            throw APNSKeyError(.signingFailed, detail: "OpenSSL could not sign: \(drainOpenSSLErrors())")
        }
        return raw
    }

    /// Verifies `signature` over `message`.
    static func verify(_ signature: [UInt8], format: APNSSignatureFormat, message: [UInt8], with key: EVPKey) -> Bool {
        let der: [UInt8]
        switch format {
        case .der:
            der = signature
        case .raw:
            guard signature.count == 64, let converted = Self.derSignature(fromRaw: signature) else { return false }
            der = converted
        }
        ERR_clear_error()
        defer { ERR_clear_error() }
        return key.withUnsafeKey { pkey in
            guard let context = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
            return der.withUnsafeBufferPointer { sig in
                message.withUnsafeBufferPointer { msg in
                    EVP_DigestVerify(context, sig.baseAddress, sig.count, msg.baseAddress, msg.count) == 1
                }
            }
        }
    }

    /// DER `ECDSA-Sig-Value` → 64-byte `r‖s`, each half left-padded to 32 bytes.
    static func rawSignature(fromDER der: [UInt8]) -> [UInt8]? {
        der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { return nil }
            defer { ECDSA_SIG_free(signature) }
            var r: OpaquePointer? = nil
            var s: OpaquePointer? = nil
            ECDSA_SIG_get0(signature, &r, &s)
            guard let r, let s else { return nil }
            var raw = [UInt8](repeating: 0, count: 64)
            let ok = raw.withUnsafeMutableBufferPointer { out in
                BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
            }
            return ok ? raw : nil
        }
    }

    /// 64-byte `r‖s` → DER `ECDSA-Sig-Value`.
    static func derSignature(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (BN_bin2bn(buffer.baseAddress, 32, nil), BN_bin2bn(buffer.baseAddress! + 32, 32, nil))
        }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {  // takes ownership of r and s on success
            BN_free(r)
            BN_free(s)
            return nil
        }
        var output: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_ECDSA_SIG(signature, &output)
        guard length > 0, let output else { return nil }
        defer { CForgeOpenSSL_free(output) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}

/// How an ES256 signature is laid out.
package enum APNSSignatureFormat: Hashable, Sendable {
    /// JWS form: 64 bytes, `r‖s`, each 32 bytes big-endian. What APNs documents.
    case raw
    /// ASN.1 DER `ECDSA-Sig-Value`, as OpenSSL and Java produce; some clients send it.
    case der
}
