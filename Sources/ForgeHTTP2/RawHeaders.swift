/// Header names and values as received, in one buffer: for each header a 2-byte name length, a
/// 4-byte value length (big-endian), the name, the value.
///
/// A short list (an APNs answer's `apns-id` and `apns-unique-id`, with a `content-type` on an
/// error) is kept inline, a longer one in an array. The I/O thread fills it and the caller's thread
/// drops it: an array here was one allocation per response freed by another thread, into the I/O
/// thread's malloc arena under its lock.
struct RawHeaders: Sendable {
    static let inlineCapacity = 160
    private var inline = InlineArray<160, UInt8>(repeating: 0)
    private var inlineCount = 0
    private var spilled: [UInt8]?

    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameCount = min(name.count, Int(UInt16.max))
        let valueCount = min(value.count, Int(UInt32.max))
        let lengths = (
            UInt8(truncatingIfNeeded: nameCount >> 8), UInt8(truncatingIfNeeded: nameCount),
            UInt8(truncatingIfNeeded: valueCount >> 24), UInt8(truncatingIfNeeded: valueCount >> 16),
            UInt8(truncatingIfNeeded: valueCount >> 8), UInt8(truncatingIfNeeded: valueCount)
        )
        let name = UnsafeBufferPointer(rebasing: name[0..<nameCount])
        let value = UnsafeBufferPointer(rebasing: value[0..<valueCount])
        if self.spilled == nil, self.inlineCount + 6 + nameCount + valueCount <= Self.inlineCapacity {
            let start = self.inlineCount
            withUnsafeMutableBytes(of: &self.inline) { inline in
                withUnsafeBytes(of: lengths) { inline.baseAddress!.advanced(by: start).copyMemory(from: $0.baseAddress!, byteCount: 6) }
                if nameCount > 0 { inline.baseAddress!.advanced(by: start + 6).copyMemory(from: name.baseAddress!, byteCount: nameCount) }
                if valueCount > 0 {
                    inline.baseAddress!.advanced(by: start + 6 + nameCount).copyMemory(from: value.baseAddress!, byteCount: valueCount)
                }
            }
            self.inlineCount += 6 + nameCount + valueCount
            return
        }
        if self.spilled == nil {
            var spilled: [UInt8] = []
            spilled.reserveCapacity(2 * Self.inlineCapacity)
            self.withBytes { spilled.append(contentsOf: $0) }
            self.spilled = spilled
        }
        withUnsafeBytes(of: lengths) { self.spilled!.append(contentsOf: $0) }
        self.spilled!.append(contentsOf: name)
        self.spilled!.append(contentsOf: value)
    }

    /// Whether the headers are kept inline (no allocation).
    var isInline: Bool { self.spilled == nil }

    /// Runs `body` with the encoded headers.
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let spilled = self.spilled { return spilled.withUnsafeBufferPointer(body) }
        return withUnsafeBytes(of: self.inline) { raw in
            body(UnsafeBufferPointer(rebasing: raw.assumingMemoryBound(to: UInt8.self)[0..<self.inlineCount]))
        }
    }

    /// Calls `body` with each header's name and value bytes until it returns `false`.
    private func forEach(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool) {
        self.withBytes { bytes in
            var index = 0
            while index + 6 <= bytes.count {
                let nameCount = Int(bytes[index]) << 8 | Int(bytes[index + 1])
                let valueCount = Int(bytes[index + 2]) << 24 | Int(bytes[index + 3]) << 16
                    | Int(bytes[index + 4]) << 8 | Int(bytes[index + 5])
                let nameStart = index + 6
                let valueStart = nameStart + nameCount
                index = valueStart + valueCount
                guard index <= bytes.count else { return }
                if !body(UnsafeBufferPointer(rebasing: bytes[nameStart..<valueStart]), UnsafeBufferPointer(rebasing: bytes[valueStart..<index])) {
                    return
                }
            }
        }
    }

    func fields() -> [HTTP2HeaderField] {
        var fields: [HTTP2HeaderField] = []
        self.forEach { name, value in
            fields.append(HTTP2HeaderField(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            return true
        }
        return fields
    }

    /// The first value of `name` (lower-case), found without allocating anything but the result.
    func value(of name: String) -> String? {
        var name = name
        return name.withUTF8 { wanted in
            var found: String?
            self.forEach { headerName, value in
                guard headerName.count == wanted.count, headerName.elementsEqual(wanted) else { return true }
                found = String(decoding: value, as: UTF8.self)
                return false
            }
            return found
        }
    }
}
