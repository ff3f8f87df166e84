import ForgeAPNsCore
import ForgeTestSupport
import Foundation
import Testing

@Suite("Provider tokens found in text and redacted")
struct ProviderTokenRedactionTests {
    let token = try! ExampleProviderToken()

    /// `text` as base64url without padding.
    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test("A signed token is found alone, after bearer, in a path, a JSON string, a query parameter and glued to a word")
    func found() {
        for text in [
            self.token.jwt, "bearer \(self.token.jwt)", "/3/device/\(self.token.jwt)", #"{"aps":{"alert":"\#(self.token.jwt)"}}"#,
            "/api/v1/pushes?topic=\(self.token.jwt)&limit=1", "topic\(self.token.jwt).",
        ] {
            #expect(ProviderTokenRedaction.containsProviderToken(text), "\(text)")
            let redacted = ProviderTokenRedaction.redacting(text)
            #expect(!self.token.isShown(in: redacted), "\(redacted)")
            #expect(redacted.contains("eyJhbGci…(a provider token, redacted)"), "\(redacted)")
            #expect(Array(redacted.utf8) == ProviderTokenRedaction.redacting(Array(text.utf8)))
        }
    }

    @Test("What surrounds a token stays; every token in a text is redacted")
    func surroundings() {
        let text = "topic \(self.token.jwt) is not served; collapse id \(self.token.jwt)"
        #expect(ProviderTokenRedaction.redacting(text)
            == "topic eyJhbGci…(a provider token, redacted) is not served; collapse id eyJhbGci…(a provider token, redacted)")
        // Redacting again changes nothing.
        #expect(ProviderTokenRedaction.redacting(ProviderTokenRedaction.redacting(text)) == ProviderTokenRedaction.redacting(text))
    }

    @Test("Near misses are left alone", arguments: [
        ("two parts", "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJGT1JHRVRFQU0xIn0"),
        ("a header that is not JSON", "eyJub3QganNvbg.eyJpc3MiOiJYIn0.c2ln"),
        ("JSON without alg", Self.base64URL(#"{"kid":"FORGEKEY01"}"#) + ".eyJpc3MiOiJYIn0.c2ln"),
        ("a header that is a JSON array", Self.base64URL(#"["alg"]"#) + ".eyJpc3MiOiJYIn0.c2ln"),
        ("plain base64 text", Self.base64URL("a plain sentence, nothing more") + "." + Self.base64URL("and another")),
        ("a 64-hex device token", String(repeating: "ab", count: 32)),
        ("eyJ inside a word", "heyJude.was.here and keyJar.a.b"),
        ("eyJ at the very end", "the topic ends with eyJ"),
        ("empty", ""),
    ])
    func nearMisses(_ name: String, _ text: String) {
        #expect(!ProviderTokenRedaction.containsProviderToken(text), "\(name)")
        #expect(ProviderTokenRedaction.redacting(text) == text, "\(name)")
    }

    @Test("Bytes without a token come back as they were given: no copy")
    func noCopy() {
        let bytes = Array(#"{"aps":{"alert":"eyJ, hey Jude"}}"#.utf8)
        let redacted = ProviderTokenRedaction.redacting(bytes)
        let same = bytes.withUnsafeBufferPointer { given in redacted.withUnsafeBufferPointer { $0.baseAddress == given.baseAddress } }
        #expect(same)
    }
}
