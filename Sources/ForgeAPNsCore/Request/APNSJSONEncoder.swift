internal import Foundation

/// A streaming JSON encoder for payloads: writes bytes directly instead of building a tree.
///
/// Foundation's `JSONEncoder` spends about 6 µs on a five-key `aps` dictionary on Linux; a send path
/// that prepares a notification per request cannot afford that. This encoder produces the same
/// text as `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` and default strategies:
///
/// - object keys sorted by their UTF-8 bytes, so a payload always encodes to the same bytes (even a
///   `Dictionary`, whose order changes from one process to the next);
/// - `Date` with the default `deferredToDate` strategy (seconds since 2001, which an app's default
///   `JSONDecoder` reads back), `Data` as base64, `URL` as its absolute string, `Decimal` as a number;
/// - integral doubles without a fraction (`50`, not `50.0`); NaN and infinity are errors.
///
/// ## Implementation
/// One output buffer and a stack of open containers. A container is closed when a write happens at
/// a shallower depth or when the value that opened it finishes encoding. Each object records where
/// its entries start, so it can sort them in place when it closes.
struct APNSJSONEncoder {
    /// Encodes `value` as JSON text.
    /// - Throws: `EncodingError` when a value cannot be represented (NaN, a top-level value that
    ///   encodes nothing, a container used after its parent moved on).
    static func encode(_ value: some Encodable, with core: JSONWriterCore = JSONWriterCore()) throws -> [UInt8] {
        try core.encodeValue(value, depth: 0, codingPath: [])
        core.close(deeperThan: -1)
        guard !core.output.isEmpty else {
            throw EncodingError.invalidValue(
                value,
                .init(codingPath: [], debugDescription: "Top-level value did not encode anything.")
            )
        }
        return core.output
    }
}

/// The mutable state of one encoding: shared by the encoder and container views.
final class JSONWriterCore {
    struct Frame {
        var isObject: Bool
        var depth: Int
        /// Offset of the opening brace or bracket in `output`.
        var start: Int
        var count: Int
        /// Index into `entryStarts` of this object's first entry.
        var entriesBase: Int
    }

    // The core lives inside one `encode` call on one thread; dynamic exclusivity checks on these
    // properties cost more than the writes themselves.
    @exclusivity(unchecked) var output: [UInt8] = []
    @exclusivity(unchecked) var frames: [Frame] = []
    /// Offsets in `output` of each entry (key start) of the open objects.
    @exclusivity(unchecked) var entryStarts: [Int] = []
    /// A top-level key the caller reserved for itself (`aps`), and whether the value used it.
    var reservedTopLevelKey: String?
    @exclusivity(unchecked) var usedReservedKey = false

    init() {
        self.output.reserveCapacity(512)
        self.frames.reserveCapacity(8)
        self.entryStarts.reserveCapacity(32)
    }

    // MARK: Containers

    /// Closes every container opened deeper than `depth`.
    func close(deeperThan depth: Int) {
        while let frame = self.frames.last, frame.depth > depth {
            self.frames.removeLast()
            if frame.isObject {
                if frame.count > 1 { self.sortEntries(of: frame) }
                self.entryStarts.removeSubrange(frame.entriesBase...)
                self.output.append(UInt8(ascii: "}"))
            } else {
                self.output.append(UInt8(ascii: "]"))
            }
        }
    }

    /// Opens (or, for a second request by the same value, reuses) a container for the value at `depth`.
    func openContainer(isObject: Bool, depth: Int) {
        self.close(deeperThan: depth)
        if let frame = self.frames.last, frame.depth == depth, frame.isObject == isObject { return }
        self.frames.append(
            Frame(isObject: isObject, depth: depth, start: self.output.count, count: 0, entriesBase: self.entryStarts.count)
        )
        self.output.append(isObject ? UInt8(ascii: "{") : UInt8(ascii: "["))
    }

    /// Prepares the output for the next entry of the container at `depth`: closes deeper containers,
    /// writes the separator and, for objects, the key.
    func beginEntry(depth: Int, key: String?, codingPath: [any CodingKey]) throws {
        self.close(deeperThan: depth)
        guard var frame = self.frames.last, frame.depth == depth else {
            throw EncodingError.invalidValue(
                key ?? "",
                .init(codingPath: codingPath, debugDescription: "A container was used after its value finished encoding.")
            )
        }
        if frame.count > 0 { self.output.append(UInt8(ascii: ",")) }
        frame.count += 1
        self.frames[self.frames.count - 1] = frame
        if let key {
            if depth == 0, let reserved = self.reservedTopLevelKey, key == reserved { self.usedReservedKey = true }
            self.entryStarts.append(self.output.count)
            self.writeString(key)
            self.output.append(UInt8(ascii: ":"))
        }
    }

    /// Sorts the entries of a closing object by key bytes, in place.
    private func sortEntries(of frame: Frame) {
        let starts = self.entryStarts[frame.entriesBase...]
        if self.isSorted(starts) { return }
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(frame.count)
        var index = starts.startIndex
        while index < starts.endIndex {
            let start = starts[index]
            let next = index + 1 < starts.endIndex ? starts[index + 1] - 1 : self.output.count  // minus the comma
            ranges.append(start..<next)
            index += 1
        }
        let output = self.output
        let sorted = ranges.map { ($0, Self.unescapedKey(at: $0.lowerBound, in: output)) }
            .sorted { $0.1.lexicographicallyPrecedes($1.1) }
            .map(\.0)
        var reordered: [UInt8] = []
        reordered.reserveCapacity(self.output.count - ranges[0].lowerBound)
        for (offset, range) in sorted.enumerated() {
            if offset > 0 { reordered.append(UInt8(ascii: ",")) }
            reordered.append(contentsOf: output[range])
        }
        self.output.replaceSubrange(ranges[0].lowerBound..<self.output.count, with: reordered)
    }

    /// The UTF-8 bytes of the key whose opening quote is at `start`, with its escapes undone:
    /// `JSONEncoder` sorts keys by their own bytes, and an escape (`\u0001`, `\"`) sorts otherwise
    /// than the character it stands for.
    private static func unescapedKey(at start: Int, in output: [UInt8]) -> ArraySlice<UInt8> {
        var end = start + 1
        while output[end] != UInt8(ascii: "\"") {
            if output[end] == UInt8(ascii: "\\") { return Self.unescape(from: start + 1, in: output) }
            end += 1
        }
        return output[(start + 1)..<end]
    }

    /// Undoes the escapes ``writeString(_:)`` writes, up to the closing quote.
    private static func unescape(from start: Int, in output: [UInt8]) -> ArraySlice<UInt8> {
        var key: [UInt8] = []
        var index = start
        while output[index] != UInt8(ascii: "\"") {
            guard output[index] == UInt8(ascii: "\\") else {
                key.append(output[index])
                index += 1
                continue
            }
            let escape = output[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "n"): key.append(0x0a)
            case UInt8(ascii: "r"): key.append(0x0d)
            case UInt8(ascii: "t"): key.append(0x09)
            case UInt8(ascii: "b"): key.append(0x08)
            case UInt8(ascii: "f"): key.append(0x0c)
            case UInt8(ascii: "u"):
                // Only control characters are written as \u00XX.
                let hex = output[index..<(index + 4)].reduce(0) { value, digit in
                    value << 4 | Int(digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10)
                }
                key.append(UInt8(truncatingIfNeeded: hex))
                index += 4
            default: key.append(escape)  // \" and \\
            }
        }
        return key[...]
    }

    /// Whether the entries starting at `starts` are already in key order (each start is an opening quote).
    private func isSorted(_ starts: ArraySlice<Int>) -> Bool {
        self.output.withUnsafeBufferPointer { bytes in
            var previous = starts[starts.startIndex]
            for start in starts.dropFirst() {
                // Compare the two keys byte by byte; a closing quote ends a key.
                var a = previous + 1
                var b = start + 1
                while true {
                    let x = bytes[a]
                    let y = bytes[b]
                    // An escape sorts as the character it stands for: leave it to the full sort.
                    if x == UInt8(ascii: "\\") || y == UInt8(ascii: "\\") { return false }
                    if x == y {
                        if x == UInt8(ascii: "\"") { return false }  // equal keys: leave them to the full sort
                        a += 1
                        b += 1
                        continue
                    }
                    if x == UInt8(ascii: "\"") { break }  // a is a prefix of b: in order
                    if y == UInt8(ascii: "\"") || x > y { return false }
                    break
                }
                previous = start
            }
            return true
        }
    }

    // MARK: Values

    /// Encodes a value that is the content of the slot at `depth` (an entry or the top level).
    func encodeValue<T: Encodable>(_ value: T, depth: Int, codingPath: [any CodingKey]) throws {
        // Foundation's default strategies for the types JSONEncoder treats specially.
        if T.self == Date.self {
            try self.writeDouble((value as! Date).timeIntervalSinceReferenceDate, codingPath: codingPath)
            return
        }
        if T.self == URL.self {
            self.writeString((value as! URL).absoluteString)
            return
        }
        if T.self == Data.self {
            self.writeString((value as! Data).base64EncodedString())
            return
        }
        if T.self == Decimal.self {
            self.output.append(contentsOf: (value as! Decimal).description.utf8)
            return
        }
        let mark = self.output.count
        try value.encode(to: JSONValueEncoder(core: self, depth: depth, codingPath: codingPath))
        self.close(deeperThan: depth - 1)
        if self.output.count == mark {
            self.output.append(contentsOf: [UInt8(ascii: "{"), UInt8(ascii: "}")])  // as JSONEncoder: an empty object
        }
    }

    func writeNull() { self.output.append(contentsOf: "null".utf8) }

    func writeBool(_ value: Bool) { self.output.append(contentsOf: value ? "true".utf8 : "false".utf8) }

    func writeInteger<I: BinaryInteger>(_ value: I) {
        if value == 0 {
            self.output.append(UInt8(ascii: "0"))
            return
        }
        var magnitude = value.magnitude
        if value < 0 { self.output.append(UInt8(ascii: "-")) }
        let start = self.output.count
        while magnitude > 0 {
            let digit = UInt8(truncatingIfNeeded: magnitude % 10)
            self.output.append(UInt8(ascii: "0") + digit)
            magnitude /= 10
        }
        self.output[start...].reverse()
    }

    func writeDouble(_ value: Double, codingPath: [any CodingKey]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value,
                .init(codingPath: codingPath, debugDescription: "JSON has no representation for \(value).")
            )
        }
        if value.rounded(.towardZero) == value, abs(value) < 1e15 {
            if value == 0 && value.sign == .minus {
                self.output.append(contentsOf: "-0".utf8)
            } else {
                self.writeInteger(Int64(value))
            }
            return
        }
        // As Foundation's JSONEncoder: Swift's shortest description, without a trailing ".0".
        let text = value.description
        self.output.append(contentsOf: text.hasSuffix(".0") ? text.utf8.dropLast(2) : text.utf8[...])
    }

    /// A `Float` as `JSONEncoder` writes it: its own shortest description (`0.1`, not the
    /// `0.10000000149011612` of the `Double` it converts to), without a trailing `.0`.
    func writeFloat(_ value: Float, codingPath: [any CodingKey]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value,
                .init(codingPath: codingPath, debugDescription: "JSON has no representation for \(value).")
            )
        }
        let text = value.description
        self.output.append(contentsOf: text.hasSuffix(".0") ? text.utf8.dropLast(2) : text.utf8[...])
    }

    func writeString(_ string: String) {
        JSONString.append(string, to: &self.output)
    }
}

/// The `Encoder` handed to a value's `encode(to:)`: a view of the core at one depth.
struct JSONValueEncoder: Encoder {
    let core: JSONWriterCore
    let depth: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        self.core.openContainer(isObject: true, depth: self.depth)
        return KeyedEncodingContainer(JSONKeyedContainer<Key>(core: self.core, depth: self.depth, codingPath: self.codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        self.core.openContainer(isObject: false, depth: self.depth)
        return JSONUnkeyedContainer(core: self.core, depth: self.depth, codingPath: self.codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONSingleValueContainer(core: self.core, depth: self.depth, codingPath: self.codingPath)
    }
}

struct JSONKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let core: JSONWriterCore
    let depth: Int
    let codingPath: [any CodingKey]

    private func begin(_ key: Key) throws { try self.core.beginEntry(depth: self.depth, key: key.stringValue, codingPath: self.codingPath) }

    mutating func encodeNil(forKey key: Key) throws { try self.begin(key); self.core.writeNull() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try self.begin(key); self.core.writeBool(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { try self.begin(key); self.core.writeString(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        try self.begin(key)
        try self.core.writeDouble(value, codingPath: self.codingPath)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try self.begin(key)
        try self.core.writeFloat(value, codingPath: self.codingPath)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try self.begin(key); self.core.writeInteger(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try self.begin(key)
        try self.core.encodeValue(value, depth: self.depth + 1, codingPath: self.codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        // Errors cannot be thrown here; a misuse surfaces at the next write of this container.
        try? self.begin(key)
        return JSONValueEncoder(core: self.core, depth: self.depth + 1, codingPath: self.codingPath)
            .container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        try? self.begin(key)
        return JSONValueEncoder(core: self.core, depth: self.depth + 1, codingPath: self.codingPath)
            .unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        self.superEncoder(forKey: Key(stringValue: "super")!)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        try? self.begin(key)
        return JSONValueEncoder(core: self.core, depth: self.depth + 1, codingPath: self.codingPath)
    }
}

struct JSONUnkeyedContainer: UnkeyedEncodingContainer {
    let core: JSONWriterCore
    let depth: Int
    let codingPath: [any CodingKey]
    private(set) var count = 0

    init(core: JSONWriterCore, depth: Int, codingPath: [any CodingKey]) {
        self.core = core
        self.depth = depth
        self.codingPath = codingPath
    }

    private mutating func begin() throws {
        try self.core.beginEntry(depth: self.depth, key: nil, codingPath: self.codingPath)
        self.count += 1
    }

    mutating func encodeNil() throws { try self.begin(); self.core.writeNull() }
    mutating func encode(_ value: Bool) throws { try self.begin(); self.core.writeBool(value) }
    mutating func encode(_ value: String) throws { try self.begin(); self.core.writeString(value) }
    mutating func encode(_ value: Double) throws { try self.begin(); try self.core.writeDouble(value, codingPath: self.codingPath) }
    mutating func encode(_ value: Float) throws {
        try self.begin()
        try self.core.writeFloat(value, codingPath: self.codingPath)
    }
    mutating func encode(_ value: Int) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode(_ value: Int8) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode(_ value: Int16) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode(_ value: Int32) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode(_ value: Int64) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt8) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt16) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt32) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode(_ value: UInt64) throws { try self.begin(); self.core.writeInteger(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try self.begin()
        try self.core.encodeValue(value, depth: self.depth + 1, codingPath: self.codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        try? self.begin()
        return JSONValueEncoder(core: self.core, depth: self.depth + 1, codingPath: self.codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        try? self.begin()
        return JSONValueEncoder(core: self.core, depth: self.depth + 1, codingPath: self.codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        try? self.begin()
        return JSONValueEncoder(core: self.core, depth: self.depth + 1, codingPath: self.codingPath)
    }
}

struct JSONSingleValueContainer: SingleValueEncodingContainer {
    let core: JSONWriterCore
    let depth: Int
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { self.core.writeNull() }
    mutating func encode(_ value: Bool) throws { self.core.writeBool(value) }
    mutating func encode(_ value: String) throws { self.core.writeString(value) }
    mutating func encode(_ value: Double) throws { try self.core.writeDouble(value, codingPath: self.codingPath) }
    mutating func encode(_ value: Float) throws { try self.core.writeFloat(value, codingPath: self.codingPath) }
    mutating func encode(_ value: Int) throws { self.core.writeInteger(value) }
    mutating func encode(_ value: Int8) throws { self.core.writeInteger(value) }
    mutating func encode(_ value: Int16) throws { self.core.writeInteger(value) }
    mutating func encode(_ value: Int32) throws { self.core.writeInteger(value) }
    mutating func encode(_ value: Int64) throws { self.core.writeInteger(value) }
    mutating func encode(_ value: UInt) throws { self.core.writeInteger(value) }
    mutating func encode(_ value: UInt8) throws { self.core.writeInteger(value) }
    mutating func encode(_ value: UInt16) throws { self.core.writeInteger(value) }
    mutating func encode(_ value: UInt32) throws { self.core.writeInteger(value) }
    mutating func encode(_ value: UInt64) throws { self.core.writeInteger(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try self.core.encodeValue(value, depth: self.depth, codingPath: self.codingPath)
    }
}
