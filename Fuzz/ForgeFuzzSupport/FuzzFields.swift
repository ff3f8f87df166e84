/// Cuts one fuzz input into the fields an entry point needs (a method, a path and a query; a header
/// and claims), so libFuzzer mutates each field as plain bytes.
public enum FuzzFields {
    /// The input split at its first `count - 1` newlines: always `count` fields, empty ones at the end
    /// when there are fewer newlines. The last field keeps any further newlines.
    public static func split(_ bytes: [UInt8], into count: Int) -> [[UInt8]] {
        var fields: [[UInt8]] = []
        var rest = bytes[...]
        while fields.count < count - 1, let newline = rest.firstIndex(of: 0x0a) {
            fields.append(Array(rest[..<newline]))
            rest = rest[(newline + 1)...]
        }
        fields.append(Array(rest))
        while fields.count < count { fields.append([]) }
        return fields
    }

    /// The bytes as text, each invalid UTF-8 sequence replaced by U+FFFD (as a server decodes a header).
    public static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
