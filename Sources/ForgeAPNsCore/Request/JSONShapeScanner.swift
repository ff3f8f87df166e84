/// What is wrong with a JSON text, and where.
package struct JSONShapeProblem: Error, Hashable, CustomStringConvertible {
    package enum Kind: Hashable, Sendable {
        /// Not JSON: a syntax error, or an escape for half a UTF-16 surrogate pair.
        case syntax
        /// Valid JSON, but not an object.
        case notObject
        /// A byte sequence that is not UTF-8 (RFC 8259 §8.1: JSON exchanged between systems is UTF-8).
        case encoding
        /// A number too large for a 64-bit double: it would be read as infinity, or refused.
        case number
    }

    package var kind: Kind
    /// Where and what, for example `unexpected '}' at column 12`.
    package var detail: String

    package var description: String { self.detail }
}

/// A small, allocation-free JSON validator (RFC 8259).
///
/// Payload bodies are checked before sending (a raw `--payload` file, or the custom keys of a typed
/// notification); Foundation's `JSONSerialization` would build a whole object graph only to throw it
/// away, and could not say where the text went wrong. It refuses what `JSONSerialization`, and so a
/// device, refuses: bytes that are not UTF-8, an escape for half a surrogate pair, and a number that
/// overflows a double (`1e999`).
package struct JSONShapeScanner {
    private let bytes: [UInt8]
    private var index = 0
    private let maximumDepth = 256

    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Validates that the input is exactly one JSON object; returns the first problem, or `nil`
    /// when the input is valid.
    package mutating func validateObject() -> JSONShapeProblem? {
        self.skipWhitespace()
        guard self.peek() == UInt8(ascii: "{") else {
            guard self.index < self.bytes.count else { return JSONShapeProblem(kind: .syntax, detail: "no JSON value") }
            let start = self.index
            if let problem = self.value(depth: 0) { return problem }
            self.skipWhitespace()
            if self.index != self.bytes.count {
                return JSONShapeProblem(kind: .syntax, detail: "unexpected text after the value at \(self.place(self.index))")
            }
            return JSONShapeProblem(kind: .notObject, detail: "the top level is \(Self.kindOfValue(self.bytes[start]))")
        }
        if let problem = self.value(depth: 0) { return problem }
        self.skipWhitespace()
        if self.index != self.bytes.count {
            if self.bytes[self.index] >= 0x80, case .failure(let problem) = self.utf8Sequence(at: self.index) { return problem }
            return JSONShapeProblem(kind: .syntax, detail: "unexpected text after the object at \(self.place(self.index))")
        }
        return nil
    }

    /// Validates that the input is exactly one JSON value, of any kind; returns the first problem,
    /// or `nil` when the input is valid.
    package mutating func validateValue() -> JSONShapeProblem? {
        self.skipWhitespace()
        guard self.index < self.bytes.count else { return JSONShapeProblem(kind: .syntax, detail: "no JSON value") }
        if let problem = self.value(depth: 0) { return problem }
        self.skipWhitespace()
        guard self.index == self.bytes.count else {
            if self.bytes[self.index] >= 0x80, case .failure(let problem) = self.utf8Sequence(at: self.index) { return problem }
            return JSONShapeProblem(kind: .syntax, detail: "unexpected text after the value at \(self.place(self.index))")
        }
        return nil
    }

    private static func kindOfValue(_ first: UInt8) -> String {
        switch first {
        case UInt8(ascii: "["): return "an array, not an object"
        case UInt8(ascii: "\""): return "a string, not an object"
        case UInt8(ascii: "n"): return "null, not an object"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "a boolean, not an object"
        default: return "a number, not an object"
        }
    }

    /// Where the byte at `index` (0-based) is, for a person: `column C` in a text of one line (a
    /// final newline aside), `line L, column C` otherwise, both counted from 1 and in characters
    /// (UTF-8 sequences), as an editor counts them.
    private func place(_ index: Int) -> String {
        var line = 1
        var column = 1
        for position in 0..<min(index, self.bytes.count) {
            let byte = self.bytes[position]
            if byte == 0x0a {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        // A newline only at the end (a file's last line) does not make a second line.
        let content = self.bytes.lastIndex { ![0x20, 0x09, 0x0a, 0x0d].contains($0) } ?? 0
        let multiline = self.bytes[..<content].contains(0x0a)
        return multiline ? "line \(line), column \(column)" : "column \(column)"
    }

    private func peek() -> UInt8? { self.index < self.bytes.count ? self.bytes[self.index] : nil }

    private mutating func skipWhitespace() {
        while let byte = self.peek(), byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d {
            self.index += 1
        }
    }

    private func syntax(_ detail: String) -> JSONShapeProblem { JSONShapeProblem(kind: .syntax, detail: detail) }

    private func unexpected(_ expected: String = "") -> JSONShapeProblem {
        guard let byte = self.peek() else { return self.syntax("unexpected end of input" + expected) }
        if byte >= 0x80, case .failure(let problem) = self.utf8Sequence(at: self.index) { return problem }
        return self.syntax("unexpected \(DeviceToken.describe(byte)) at \(self.place(self.index))" + expected)
    }

    /// The length of the UTF-8 sequence that starts at `start` (a byte of 0x80 or more), or why it is
    /// not one (RFC 3629 §4: no overlong forms, no surrogates, nothing above U+10FFFF).
    private func utf8Sequence(at start: Int) -> Result<Int, JSONShapeProblem> {
        let lead = self.bytes[start]
        let length: Int
        var second: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; second = 0xA0...0xBF
        case 0xED: length = 3; second = 0x80...0x9F
        case 0xE1...0xEF: length = 3
        case 0xF0: length = 4; second = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; second = 0x80...0x8F
        default: return .failure(self.notUTF8(start, count: 1))
        }
        for offset in 1..<length {
            guard start + offset < self.bytes.count else { return .failure(self.notUTF8(start, count: offset)) }
            guard (offset == 1 ? second : 0x80...0xBF).contains(self.bytes[start + offset]) else {
                return .failure(self.notUTF8(start, count: offset + 1))
            }
        }
        return .success(length)
    }

    private func notUTF8(_ start: Int, count: Int) -> JSONShapeProblem {
        let shown = self.bytes[start..<(start + count)].map { "0x" + String($0, radix: 16) }.joined(separator: " ")
        let detail = count == 1 ? "byte \(shown) at \(self.place(start)) is not UTF-8" : "bytes \(shown) at \(self.place(start)) are not UTF-8"
        return JSONShapeProblem(kind: .encoding, detail: detail)
    }

    private mutating func value(depth: Int) -> JSONShapeProblem? {
        guard depth < self.maximumDepth else { return self.syntax("nested deeper than \(self.maximumDepth) levels") }
        self.skipWhitespace()
        guard let byte = self.peek() else { return self.syntax("unexpected end of input") }
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

    private mutating func object(depth: Int) -> JSONShapeProblem? {
        self.index += 1  // {
        self.skipWhitespace()
        if self.peek() == UInt8(ascii: "}") {
            self.index += 1
            return nil
        }
        while true {
            self.skipWhitespace()
            guard self.peek() == UInt8(ascii: "\"") else { return self.unexpected(" (expected a key)") }
            if let problem = self.string() { return problem }
            self.skipWhitespace()
            guard self.peek() == UInt8(ascii: ":") else { return self.unexpected(" (expected ':')") }
            self.index += 1
            if let problem = self.value(depth: depth + 1) { return problem }
            self.skipWhitespace()
            switch self.peek() {
            case UInt8(ascii: ","): self.index += 1
            case UInt8(ascii: "}"):
                self.index += 1
                return nil
            default: return self.unexpected(" (expected ',' or '}')")
            }
        }
    }

    private mutating func array(depth: Int) -> JSONShapeProblem? {
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
            default: return self.unexpected(" (expected ',' or ']')")
            }
        }
    }

    /// Scans a string, checking its escapes and its UTF-8.
    private mutating func string() -> JSONShapeProblem? {
        let start = self.index
        self.index += 1  // opening quote
        while let byte = self.peek() {
            self.index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return nil
            case UInt8(ascii: "\\"):
                guard let escape = self.peek() else { return self.syntax("unterminated string starting at \(self.place(start))") }
                self.index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"):
                    let escapeStart = self.index - 1
                    guard let unit = self.hex4() else { return self.syntax("bad \\u escape at \(self.place(self.index - 1))") }
                    if let problem = self.surrogatePair(unit, escapeStart: escapeStart) { return problem }
                default:
                    return self.syntax("bad escape at \(self.place(self.index - 2))")
                }
            case 0x00..<0x20:
                return self.syntax("control character in a string at \(self.place(self.index - 1))")
            case 0x80...0xFF:
                switch self.utf8Sequence(at: self.index - 1) {
                case .success(let length): self.index += length - 1
                case .failure(let problem): return problem
                }
            default:
                continue
            }
        }
        return self.syntax("unterminated string starting at \(self.place(start))")
    }

    /// A `\uD800`-`\uDBFF` escape must be followed by a `\uDC00`-`\uDFFF` one, and a low half must not
    /// stand alone: a lone surrogate is no character, and `JSONSerialization` refuses it.
    private mutating func surrogatePair(_ unit: UInt32, escapeStart: Int) -> JSONShapeProblem? {
        func unpaired() -> JSONShapeProblem {
            self.syntax("\\u\(String(unit, radix: 16, uppercase: true)) at \(self.place(escapeStart - 1)) is half a surrogate pair")
        }
        switch unit {
        case 0xDC00...0xDFFF:
            return unpaired()
        case 0xD800...0xDBFF:
            guard self.index + 1 < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "\\"),
                self.bytes[self.index + 1] == UInt8(ascii: "u")
            else { return unpaired() }
            self.index += 2
            guard let low = self.hex4(), (0xDC00...0xDFFF).contains(low) else { return unpaired() }
            return nil
        default:
            return nil
        }
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

    private mutating func literal(_ word: StaticString) -> JSONShapeProblem? {
        let count = word.utf8CodeUnitCount
        guard self.index + count <= self.bytes.count else { return self.syntax("unexpected end of input") }
        let matches = word.withUTF8Buffer { expected in
            self.bytes[self.index..<self.index + count].elementsEqual(expected)
        }
        guard matches else { return self.unexpected() }
        self.index += count
        return nil
    }

    private mutating func number() -> JSONShapeProblem? {
        let start = self.index
        if self.peek() == UInt8(ascii: "-") { self.index += 1 }
        guard let first = self.peek(), (0x30...0x39).contains(first) else { return self.unexpected() }
        if first == UInt8(ascii: "0") {
            self.index += 1
        } else {
            self.skipDigits()
        }
        let integerDigits = self.index - start
        if self.peek() == UInt8(ascii: ".") {
            self.index += 1
            guard let byte = self.peek(), (0x30...0x39).contains(byte) else { return self.syntax("bad number at \(self.place(start))") }
            self.skipDigits()
        }
        var hasExponent = false
        if let byte = self.peek(), byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            hasExponent = true
            self.index += 1
            if let sign = self.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { self.index += 1 }
            guard let byte = self.peek(), (0x30...0x39).contains(byte) else { return self.syntax("bad number at \(self.place(start))") }
            self.skipDigits()
        }
        // Only an exponent or more than 308 integer digits can overflow: parse just those.
        if hasExponent || integerDigits > 308 {
            let text = String(decoding: self.bytes[start..<self.index], as: UTF8.self)
            if let value = Double(text), !value.isFinite {
                let shown = text.count > 24 ? String(text.prefix(20)) + "…" : text
                return JSONShapeProblem(
                    kind: .number, detail: "the number \(shown) at \(self.place(start)) is too large for a 64-bit double"
                )
            }
        }
        return nil
    }

    private mutating func skipDigits() {
        while let byte = self.peek(), (0x30...0x39).contains(byte) { self.index += 1 }
    }
}
