/// Writes a JSON object whose keys the caller gives in sorted order: the `aps` dictionaries, whose
/// shape ForgePush owns, are written this way instead of through `Encodable`, which costs several
/// microseconds of generic dispatch per payload.
struct APNSObjectWriter {
    let core: JSONWriterCore
    /// The nesting depth of this object, for values encoded through `Encodable` inside it.
    let depth: Int
    private var count = 0
    #if DEBUG
    private var lastKey = ""
    #endif

    init(core: JSONWriterCore, depth: Int) {
        self.core = core
        self.depth = depth
        core.output.append(UInt8(ascii: "{"))
    }

    private mutating func key(_ key: StaticString) {
        #if DEBUG
        let text = key.description
        assert(self.count == 0 || self.lastKey < text, "keys must be written in sorted order: \(self.lastKey), \(text)")
        self.lastKey = text
        #endif
        if self.count > 0 { self.core.output.append(UInt8(ascii: ",")) }
        self.count += 1
        self.core.output.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { self.core.output.append(contentsOf: $0) }
        self.core.output.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    mutating func string(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        self.key(key)
        self.core.writeString(value)
    }

    mutating func strings(_ key: StaticString, _ values: [String]?) {
        guard let values else { return }
        self.key(key)
        self.core.output.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { self.core.output.append(UInt8(ascii: ",")) }
            self.core.writeString(value)
        }
        self.core.output.append(UInt8(ascii: "]"))
    }

    mutating func int(_ key: StaticString, _ value: Int?) {
        guard let value else { return }
        self.key(key)
        self.core.writeInteger(value)
    }

    mutating func double(_ key: StaticString, _ value: Double?) throws {
        guard let value else { return }
        self.key(key)
        try self.core.writeDouble(value, codingPath: [])
    }

    mutating func bool(_ key: StaticString, _ value: Bool?) {
        guard let value else { return }
        self.key(key)
        self.core.writeBool(value)
    }

    /// A nested object written by `body`.
    mutating func object(_ key: StaticString, _ body: (inout APNSObjectWriter) throws -> Void) rethrows {
        self.key(key)
        var nested = APNSObjectWriter(core: self.core, depth: self.depth + 1)
        try body(&nested)
        nested.finish()
    }

    /// A value of the caller's own type, through `Encodable` (sorted keys, default strategies).
    mutating func encodable<T: Encodable>(_ key: StaticString, _ value: T?) throws {
        guard let value else { return }
        self.key(key)
        try self.core.encodeValue(value, depth: self.depth + 1, codingPath: [])
    }

    func finish() { self.core.output.append(UInt8(ascii: "}")) }
}
