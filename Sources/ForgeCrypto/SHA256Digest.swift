internal import CForgeOpenSSL

/// SHA-256 over OpenSSL's one-shot `EVP_Digest`: a certificate's fingerprint, a campaign's inputs.
public enum SHA256Digest {
    /// The digest of `bytes` as 64 lowercase hex digits; `nil` only if OpenSSL fails.
    public static func hex(_ bytes: [UInt8]) -> String? {
        var digest = [UInt8](repeating: 0, count: 32)
        var digestLength: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBytes { out in
                EVP_Digest(input.baseAddress, input.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self),
                           &digestLength, EVP_sha256(), nil)
            }
        }
        guard ok == 1, digestLength == 32 else { return nil }
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
