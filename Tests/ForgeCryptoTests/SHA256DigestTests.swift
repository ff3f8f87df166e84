import ForgeCrypto
import Foundation
import Testing

@Suite("SHA256Digest: one-shot and incremental")
struct SHA256DigestTests {
    /// FIPS 180-2's vector for "abc".
    private let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

    @Test("The incremental digest of pieces equals the one-shot digest of the whole, and FIPS 180-2's vector")
    func incrementalMatchesOneShot() throws {
        #expect(SHA256Digest.hex(Array("abc".utf8)) == self.abc)
        let digest = SHA256Digest()
        for piece in ["a", "", "bc"] { Array(piece.utf8).withUnsafeBytes { digest.update($0) } }
        #expect(digest.finalHex() == self.abc)
        // Taken once: a second read is refused rather than a digest of nothing.
        #expect(digest.finalHex() == nil)

        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let pieces = SHA256Digest()
        var start = 0
        for size in [1, 63, 64, 65, 4096, 95_711] {
            bytes[start..<start + size].withUnsafeBytes { pieces.update($0) }
            start += size
        }
        #expect(start == bytes.count)
        let whole = try #require(SHA256Digest.hex(bytes))
        #expect(pieces.finalHex() == whole)
    }
}
