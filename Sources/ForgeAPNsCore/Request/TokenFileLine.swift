/// What one line of a tokens file (`apnsctl send --tokens-file`) is, read from its bytes alone: a line
/// to skip, an NDJSON object `{"token":"…","payload":{…}}`, or a hex token. The line's bytes and
/// the ranges below share indices; each range is trimmed of spaces, tabs and line ends.
package enum TokenFileLine: Hashable, Sendable {
    /// A blank line or a `#` comment.
    case skipped
    /// A line that starts with `{`: the object's bytes.
    case object(Range<Int>)
    /// Any other line: the token's bytes, not yet checked.
    case token(Range<Int>)

    /// Reads one line (with or without its newline).
    /// - Parameter isFirst: whether it is the file's first line, where a UTF-8 byte order mark
    ///   (editors on Windows write one) is dropped.
    package init<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, isFirst: Bool) where Bytes.Index == Int {
        var start = bytes.startIndex
        var end = bytes.endIndex
        if isFirst, bytes.count >= 3, bytes[start] == 0xEF, bytes[start + 1] == 0xBB, bytes[start + 2] == 0xBF { start += 3 }
        while start < end, Self.isSpace(bytes[start]) { start += 1 }
        while end > start, Self.isSpace(bytes[end - 1]) { end -= 1 }
        if start == end || bytes[start] == UInt8(ascii: "#") {
            self = .skipped
        } else if bytes[start] == UInt8(ascii: "{") {
            self = .object(start..<end)
        } else {
            self = .token(start..<end)
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d }
}
