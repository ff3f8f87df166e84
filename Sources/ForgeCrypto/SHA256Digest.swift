internal import CForgeOpenSSL

/// SHA-256 over OpenSSL's `EVP_Digest*`: a certificate's fingerprint, a campaign's inputs.
///
/// One-shot with ``hex(_:)``; or incremental, for input read in pieces (a tokens file streamed
/// once): ``init()``, ``update(_:)`` for each piece, then ``finalHex()``.
package final class SHA256Digest {
    /// OpenSSL's digest context; nil once finished (or if OpenSSL could not make one).
    private var context: OpaquePointer?

    /// A digest of nothing yet.
    package init() {
        openSSLReady
        let context = EVP_MD_CTX_new()
        if let context, EVP_DigestInit_ex(context, EVP_sha256(), nil) != 1 {
            EVP_MD_CTX_free(context)
            self.context = nil
        } else {
            self.context = context
        }
    }

    deinit { EVP_MD_CTX_free(self.context) }

    /// Adds `bytes` to the digest.
    package func update(_ bytes: UnsafeRawBufferPointer) {
        guard let context = self.context, bytes.count > 0 else { return }
        if EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) != 1 {
            EVP_MD_CTX_free(context)
            self.context = nil
        }
    }

    /// The digest of every byte added, as 64 lowercase hex digits; `nil` if OpenSSL failed or it
    /// was already taken.
    package func finalHex() -> String? {
        guard let context = self.context else { return nil }
        defer {
            EVP_MD_CTX_free(context)
            self.context = nil
        }
        var digest = [UInt8](repeating: 0, count: 32)
        var digestLength: UInt32 = 0
        let ok = digest.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &digestLength) }
        guard ok == 1, digestLength == 32 else { return nil }
        return Self.hexDigits(digest)
    }

    /// The digest of `bytes` as 64 lowercase hex digits; `nil` only if OpenSSL fails.
    package static func hex(_ bytes: [UInt8]) -> String? {
        openSSLReady
        var digest = [UInt8](repeating: 0, count: 32)
        var digestLength: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBytes { out in
                EVP_Digest(input.baseAddress, input.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                           &digestLength, EVP_sha256(), nil)
            }
        }
        guard ok == 1, digestLength == 32 else { return nil }
        return Self.hexDigits(digest)
    }

    private static func hexDigits(_ digest: [UInt8]) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in digest {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
