/// A small, allocation-free JSON validator (RFC 8259).
///
/// Payload bodies are checked before sending (a raw `--payload` file, or the custom keys of a typed
/// notification); Foundation's `JSONSerialization` would build a whole object graph only to throw it
/// away, and could not say where the text went wrong.
struct JSONShapeScanner {
    private let bytes: [UInt8]
    private var index = 0
    private let maximumDepth = 256

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Validates that the input is exactly one JSON object; returns a description of the first
    /// problem, or `nil` when the input is valid.
    mutating func validateObject() -> String? {
        self.skipWhitespace()
        guard self.peek() == UInt8(ascii: "{") else {
            return self.index < self.bytes.count ? "the top level is not an object" : "no JSON value"
        }
        if let problem = self.value(depth: 0) { return problem }
        self.skipWhitespace()
        if self.index != self.bytes.count { return "unexpected text after the object at byte \(self.index + 1)" }
        return nil
    }

    private func peek() -> UInt8? { self.index < self.bytes.count ? self.bytes[self.index] : nil }

    private mutating func skipWhitespace() {
        while let byte = self.peek(), byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d {
            self.index += 1
        }
    }

    private func unexpected() -> String {
        guard let byte = self.peek() else { return "unexpected end of input" }
        return "unexpected \(DeviceToken.describe(byte)) at byte \(self.index + 1)"
    }

    private mutating func value(depth: Int) -> String? {
        guard depth < self.maximumDepth else { return "nested deeper than \(self.maximumDepth) levels" }
        self.skipWhitespace()
        guard let byte = self.peek() else { return "unexpected end of input" }
        switch byte {
        case UInt8(ascii: "{"): return self.object(depth: depth)
        case UInt8(ascii: "["): return self.array(depth: depth)
        case UInt8(ascii: "\""): return self.string()
        case UInt8(ascii: "t"): return self.literal("true")
        case UInt8(ascii: "f"): return self.literal("false")
        case UInt8(ascii: "n"): return self.literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return self.number()
        default: return self.unexpected()
        }
    }

    private mutating func object(depth: Int) -> String? {
        self.index += 1  // {
        self.skipWhitespace()
        if self.peek() == UInt8(ascii: "}") {
            self.index += 1
            return nil
        }
        while true {
            self.skipWhitespace()
            guard self.peek() == UInt8(ascii: "\"") else { return self.unexpected() + " (expected a key)" }
            if let problem = self.string() { return problem }
            self.skipWhitespace()
            guard self.peek() == UInt8(ascii: ":") else { return self.unexpected() + " (expected ':')" }
            self.index += 1
            if let problem = self.value(depth: depth + 1) { return problem }
            self.skipWhitespace()
            switch self.peek() {
            case UInt8(ascii: ","): self.index += 1
            case UInt8(ascii: "}"):
                self.index += 1
                return nil
            default: return self.unexpected() + " (expected ',' or '}')"
            }
        }
    }

    private mutating func array(depth: Int) -> String? {
        self.index += 1  // [
        self.skipWhitespace()
        if self.peek() == UInt8(ascii: "]") {
            self.index += 1
            return nil
        }
        while true {
            if let problem = self.value(depth: depth + 1) { return problem }
            self.skipWhitespace()
            switch self.peek() {
            case UInt8(ascii: ","): self.index += 1
            case UInt8(ascii: "]"):
                self.index += 1
                return nil
            default: return self.unexpected() + " (expected ',' or ']')"
            }
        }
    }

    /// Scans a string, checking its escapes.
    private mutating func string() -> String? {
        let start = self.index
        self.index += 1  // opening quote
        while let byte = self.peek() {
            self.index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return nil
            case UInt8(ascii: "\\"):
                guard let escape = self.peek() else { return "unterminated string starting at byte \(start + 1)" }
                self.index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"):
                    guard self.hex4() != nil else { return "bad \\u escape at byte \(self.index)" }
                default:
                    return "bad escape at byte \(self.index - 1)"
                }
            case 0x00..<0x20:
                return "control character in a string at byte \(self.index)"
            default:
                continue
            }
        }
        return "unterminated string starting at byte \(start + 1)"
    }

    private mutating func hex4() -> UInt32? {
        guard self.index + 4 <= self.bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = self.bytes[self.index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            self.index += 1
        }
        return value
    }

    private mutating func literal(_ word: StaticString) -> String? {
        let count = word.utf8CodeUnitCount
        guard self.index + count <= self.bytes.count else { return "unexpected end of input" }
        let matches = word.withUTF8Buffer { expected in
            self.bytes[self.index..<self.index + count].elementsEqual(expected)
        }
        guard matches else { return self.unexpected() }
        self.index += count
        return nil
    }

    private mutating func number() -> String? {
        let start = self.index
        if self.peek() == UInt8(ascii: "-") { self.index += 1 }
        guard let first = self.peek(), (0x30...0x39).contains(first) else { return self.unexpected() }
        if first == UInt8(ascii: "0") {
            self.index += 1
        } else {
            self.skipDigits()
        }
        if self.peek() == UInt8(ascii: ".") {
            self.index += 1
            guard let byte = self.peek(), (0x30...0x39).contains(byte) else { return "bad number at byte \(start + 1)" }
            self.skipDigits()
        }
        if let byte = self.peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            self.index += 1
            if let sign = self.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { self.index += 1 }
            guard let byte = self.peek(), (0x30...0x39).contains(byte) else { return "bad number at byte \(start + 1)" }
            self.skipDigits()
        }
        return nil
    }

    private mutating func skipDigits() {
        while let byte = self.peek(), (0x30...0x39).contains(byte) { self.index += 1 }
    }
}
