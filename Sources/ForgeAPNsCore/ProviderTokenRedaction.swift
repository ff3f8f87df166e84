internal import struct Foundation.Data
internal import class Foundation.JSONSerialization

/// Finds provider tokens in text that is about to be shown or written out, and replaces each with
/// its first 8 characters and a note: `eyJhbGci…(a provider token, redacted)`.
///
/// A provider token is recognised by its shape, wherever it is (a header value, a path, a payload
/// string, a query parameter): a JWT, three base64url parts joined by dots (RFC 7519 §7.2), whose
/// first part decodes to a JSON object with an `alg` member (RFC 7515 §4.1.1). Only the first part
/// is decoded; the signature is never read.
///
/// Cheap enough for every line a server prints: the scan looks for `eyJ` (`{"` in base64url, the
/// start of every JWT) and decodes nothing until it finds it; text without a token is returned as
/// it came, without a copy.
package enum ProviderTokenRedaction {
    /// What follows a token's first 8 characters in its place.
    package static let note = "…(a provider token, redacted)"

    /// Whether `text` holds a provider token anywhere.
    package static func containsProviderToken(_ text: String) -> Bool {
        Self.withUTF8(text) { Self.firstToken(in: $0, from: 0) != nil }
    }

    /// `text` with every provider token in it redacted; `text` itself when it holds none.
    package static func redacting(_ text: String) -> String {
        Self.withUTF8(text) { bytes in
            guard let first = Self.firstToken(in: bytes, from: 0) else { return text }
            return String(decoding: Self.redacting(bytes, from: first), as: UTF8.self)
        }
    }

    /// `bytes` (UTF-8 text, JSON) with every provider token in them redacted; `bytes` themselves
    /// when they hold none.
    package static func redacting(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBufferPointer { buffer in
            guard let first = Self.firstToken(in: buffer, from: 0) else { return bytes }
            return Self.redacting(buffer, from: first)
        }
    }

    private static func redacting(_ bytes: UnsafeBufferPointer<UInt8>, from first: Range<Int>) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var copied = 0
        var next: Range<Int>? = first
        while let token = next {
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[copied..<token.lowerBound + Self.keptCount]))
            output.append(contentsOf: Self.note.utf8)
            copied = token.upperBound
            next = Self.firstToken(in: bytes, from: copied)
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[copied...]))
        return output
    }

    /// How many characters of a token stay: `eyJhbGci`, the start of `{"alg"` (a header always
    /// decodes to at least `{"alg":0}`, 12 characters).
    private static let keptCount = 8

    private static func withUTF8<Result>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(text.utf8).withUnsafeBufferPointer(body)
    }

    /// The first provider token that starts at or after `start`.
    private static func firstToken(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Range<Int>? {
        var index = start
        while index + 2 < bytes.count {
            if bytes[index] == UInt8(ascii: "e"), bytes[index + 1] == UInt8(ascii: "y"), bytes[index + 2] == UInt8(ascii: "J"),
                let end = Self.tokenEnd(in: bytes, at: index)
            {
                return index..<end
            }
            index += 1
        }
        return nil
    }

    /// Where the provider token that starts at `start` (with `eyJ`) ends, or `nil` when there is
    /// none: fewer than three parts, or a first part that is not a JSON object with `alg`.
    private static func tokenEnd(in bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> Int? {
        let headerEnd = Self.partEnd(in: bytes, from: start)
        guard headerEnd < bytes.count, bytes[headerEnd] == UInt8(ascii: ".") else { return nil }
        let claimsEnd = Self.partEnd(in: bytes, from: headerEnd + 1)
        guard claimsEnd < bytes.count, bytes[claimsEnd] == UInt8(ascii: ".") else { return nil }
        guard let header = Base64URL.decode(bytes: UnsafeBufferPointer(rebasing: bytes[start..<headerEnd])),
            let object = (try? JSONSerialization.jsonObject(with: Data(header))) as? [String: Any], object["alg"] != nil
        else { return nil }
        return Self.partEnd(in: bytes, from: claimsEnd + 1)
    }

    /// The end of the run of base64url characters (`A-Z`, `a-z`, `0-9`, `-`, `_`) from `start`.
    private static func partEnd(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"):
                index += 1
            default:
                return index
            }
        }
        return index
    }
}
