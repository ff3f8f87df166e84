import ForgeAPNsCore
import ForgeCrypto
import Foundation
import Testing

@Suite("Signing keys")
struct SigningKeyTests {
    @Test(
        "A PKCS#8 P-256 .p8 (OpenSSL's layout and Apple's, MIGTAgEA…) and a SEC1 P-256 key load",
        arguments: ["good-p256.p8", "apple-layout-p256.p8", "good-p256-sec1.pem"]
    )
    func goodKeys(_ name: String) throws {
        let key = try APNSSigningKey(contentsOfFile: Fixtures.path(name))
        let signature = try key.signature(for: Array("hello".utf8))
        #expect(signature.count == 64)
        #expect(key.publicKey.isValidSignature(signature, for: Array("hello".utf8)))
    }

    @Test("The public key of a .p8 matches the one openssl derives")
    func publicKeyPEM() throws {
        let key = try APNSSigningKey(contentsOfFile: Fixtures.path("good-p256.p8"))
        #expect(key.publicKey.pemRepresentation == (try Fixtures.text("good-p256.pub.pem")))
    }

    struct BadKey: Sendable, CustomTestStringConvertible {
        var file: String
        var code: APNSKeyError.Code
        var mentions: String
        var testDescription: String { self.file }
    }

    static let badKeys: [BadKey] = [
        BadKey(file: "p384.p8", code: .wrongCurve, mentions: "P-384"),
        BadKey(file: "secp256k1.p8", code: .wrongCurve, mentions: "secp256k1"),
        BadKey(file: "rsa2048.p8", code: .rsaKey, mentions: "RSA"),
        BadKey(file: "rsa-traditional.pem", code: .rsaKey, mentions: "RSA"),
        BadKey(file: "ed25519.p8", code: .notECKey, mentions: "ED25519"),
        BadKey(file: "encrypted-p256.p8", code: .encrypted, mentions: "password"),
        BadKey(file: "truncated-p256.p8", code: .damaged, mentions: "truncated or damaged"),
        BadKey(file: "damaged-p256.p8", code: .damaged, mentions: "truncated or damaged"),
        BadKey(file: "corrupt-der-p256.p8", code: .damaged, mentions: "truncated or damaged"),
        BadKey(file: "not-pem.p8", code: .notPEM, mentions: "not PEM"),
        BadKey(file: "empty.p8", code: .notPEM, mentions: "empty"),
        BadKey(file: "good-p256.pub.pem", code: .publicKeyOnly, mentions: "public key"),
        BadKey(file: "certificate.pem", code: .publicKeyOnly, mentions: "certificate"),
    ]

    @Test("Each bad key has its own error, which shows no key material", arguments: badKeys)
    func badKey(_ bad: BadKey) throws {
        let path = Fixtures.path(bad.file)
        do {
            _ = try APNSSigningKey(contentsOfFile: path)
            Issue.record("\(bad.file) loaded")
        } catch {
            #expect(error.code == bad.code, "\(error)")
            #expect(error.path == path)
            #expect(error.description.contains(bad.mentions), "\(error)")
            let content = (try? Fixtures.text(bad.file)) ?? ""
            for line in content.split(separator: "\n") where !line.hasPrefix("-----") && line.count >= 16 {
                #expect(!error.description.contains(line), "error shows key material")
                #expect(!error.description.contains(line.prefix(16)), "error shows key material")
            }
        }
    }

    @Test("Errors from PEM text behave as errors from files")
    func fromText() throws {
        #expect(throws: APNSKeyError(.wrongCurve, detail: "")) { try APNSSigningKey(pemRepresentation: Fixtures.text("p384.p8")) }
        _ = try APNSSigningKey(pemBytes: Array(try Fixtures.text("good-p256.p8").utf8))
    }

    @Test("A missing file and a directory are told apart")
    func files() {
        #expect(throws: APNSKeyError(.fileNotFound, detail: "")) { try APNSSigningKey(contentsOfFile: "/nonexistent/AuthKey_X.p8") }
        #expect(throws: APNSKeyError(.fileUnreadable, detail: "")) { try APNSSigningKey(contentsOfFile: Fixtures.directory.path) }
    }

    @Test("descriptions never show key material")
    func descriptions() throws {
        let key = try APNSSigningKey(contentsOfFile: Fixtures.path("good-p256.p8"))
        #expect(key.description == "APNSSigningKey(P-256, private key redacted)")
        #expect("\(key)".contains("redacted"))
    }

    @Test("Generated keys sign and verify; other keys do not verify")
    func generated() throws {
        let key = try APNSSigningKey.generate()
        let other = try APNSSigningKey.generate()
        let message = Array("message".utf8)
        let signature = try key.signature(for: message)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        #expect(!other.publicKey.isValidSignature(signature, for: message))
        #expect(!key.publicKey.isValidSignature(signature, for: Array("massage".utf8)))
        var tampered = signature
        tampered[10] ^= 1
        #expect(!key.publicKey.isValidSignature(tampered, for: message))
        #expect(!key.publicKey.isValidSignature(Array(signature.prefix(63)), for: message))
    }

    @Test("Verification keys load from public PEM, and refuse other curves")
    func verificationKeys() throws {
        let key = try APNSVerificationKey(contentsOfFile: Fixtures.path("good-p256.pub.pem"))
        let signer = try APNSSigningKey(contentsOfFile: Fixtures.path("good-p256.p8"))
        #expect(key.isValidSignature(try signer.signature(for: [1, 2, 3]), for: [1, 2, 3]))
        #expect(throws: APNSKeyError(.wrongCurve, detail: "")) { try APNSVerificationKey(contentsOfFile: Fixtures.path("p384.p8")) }
    }
}
