/// JSON string literals written straight into bytes, escaped as Foundation's `JSONEncoder`
/// escapes them: the quote, the backslash and the control characters (`\n`, `\r`, `\t`, `\b`, `\f`,
/// else `\u00XX`); everything else, `/` and non-ASCII included, as it is. One escaper for the
/// payload encoder, `apnsctl`'s hand-written lines and campaign reports, which tests compare with
/// Foundation's output byte for byte.
package enum JSONString {
    /// Appends `string` as a JSON string literal, quotes included. Runs without an escape (every
    /// token, apns-id and outcome) are copied whole.
    package static func append(_ string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { bytes in
            var runStart = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): output.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\\"): output.append(contentsOf: #"\\"#.utf8)
                case 0x0a: output.append(contentsOf: #"\n"#.utf8)
                case 0x0d: output.append(contentsOf: #"\r"#.utf8)
                case 0x09: output.append(contentsOf: #"\t"#.utf8)
                case 0x08: output.append(contentsOf: #"\b"#.utf8)
                case 0x0c: output.append(contentsOf: #"\f"#.utf8)
                default:
                    output.append(contentsOf: #"\u00"#.utf8)
                    output.append(Self.hexDigits[Int(byte >> 4)])
                    output.append(Self.hexDigits[Int(byte & 0xf)])
                }
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
        output.append(UInt8(ascii: "\""))
    }

    /// `value` in decimal (a small string: no allocation).
    package static func append(_ value: Int, to output: inout [UInt8]) {
        output.append(contentsOf: String(value).utf8)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
