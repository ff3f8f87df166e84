internal import CForgeOpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// Owns one `EVP_PKEY*` and frees it exactly once.
///
/// `@unchecked Sendable`: after `init` the key is only read. OpenSSL documents `EVP_PKEY` as safe
/// to use concurrently for signing and verification once it is fully set up; nothing here mutates
/// it. `EVP_PKEY_free` clears the private scalar (`BN_clear_free`) when the last reference goes.
final class EVPKey: @unchecked Sendable {
    private let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(self.pointer)
    }

    /// Runs `body` with the raw key; the pointer must not escape the closure.
    func withUnsafeKey<Result>(_ body: (OpaquePointer) throws -> Result) rethrows -> Result {
        try body(self.pointer)
    }

    /// Whether the key holds a private part (and so can sign).
    var hasPrivateKey: Bool {
        // EVP_PKEY_get_bn_param fails for "priv" on a public-only key.
        var bignum: OpaquePointer? = nil
        let ok = EVP_PKEY_get_bn_param(self.pointer, OSSL_PKEY_PARAM_PRIV_KEY, &bignum) == 1
        if let bignum { BN_clear_free(bignum) }
        return ok
    }

    /// Checks the key is EC on P-256, with an error that names what it is instead.
    func checkP256(path: String?) throws(APNSKeyError) {
        let type = EVP_PKEY_get_base_id(self.pointer)
        if type == EVP_PKEY_RSA || type == EVP_PKEY_RSA_PSS {
            throw APNSKeyError(
                .rsaKey, path: path,
                detail: "this is an RSA key; APNs provider tokens are signed with an EC P-256 (ES256) key: "
                    + "download the .p8 file from developer.apple.com (Certificates, Identifiers & Profiles > Keys)"
            )
        }
        guard type == EVP_PKEY_EC else {
            let name = OBJ_nid2sn(type).map { String(cString: $0) } ?? "type \(type)"
            throw APNSKeyError(
                .notECKey, path: path,
                detail: "this is a \(name) key; APNs provider tokens need an EC P-256 (ES256) key (an Apple .p8 file)"
            )
        }
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        let ok = buffer.withUnsafeMutableBufferPointer { chars in
            EVP_PKEY_get_utf8_string_param(self.pointer, OSSL_PKEY_PARAM_GROUP_NAME, chars.baseAddress, chars.count, &length)
        }
        let group = ok == 1 ? String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        guard group == "prime256v1" else {
            let curve: String
            switch group {
            case "secp384r1": curve = "P-384"
            case "secp521r1": curve = "P-521"
            case "secp224r1": curve = "P-224"
            default: curve = group
            }
            throw APNSKeyError(
                .wrongCurve, path: path,
                detail: "the key is on curve \(curve); APNs provider tokens need P-256 (ES256): "
                    + "download the .p8 file from developer.apple.com again"
            )
        }
    }
}

/// The reasons OpenSSL queued on this thread, joined; the queue is emptied.
func drainOpenSSLErrors() -> String {
    var reasons: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        if let reason = ERR_reason_error_string(code) {
            reasons.append(String(cString: reason))
        } else {
            reasons.append("error \(code)")
        }
    }
    return reasons.isEmpty ? "no reason given" : reasons.joined(separator: "; ")
}

/// Overwrites `bytes` with zeros in a way the optimiser cannot remove.
func cleanse(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        if let base = buffer.baseAddress { OPENSSL_cleanse(base, buffer.count) }
    }
}

/// OpenSSL initialized without its exit-time cleanup (`CForgeOpenSSL_initWithoutExitCleanup`):
/// every entry point of this module that calls OpenSSL reads it first.
let openSSLReady: Void = CForgeOpenSSL_initWithoutExitCleanup()
