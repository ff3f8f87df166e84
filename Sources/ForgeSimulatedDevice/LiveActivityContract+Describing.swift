internal import Foundation

extension LiveActivityContract {
    /// The contract of the app's own types, read from their `init(from:)`: a decoder that answers
    /// every request with a placeholder and notes what was asked (`decode` a required field,
    /// `decodeIfPresent` an optional one, a nested container an object or an array, `Date` a date in
    /// JSONDecoder's default strategy). Call it from the app's tests and write ``json`` to a file that
    /// `apnsctl serve --activity-type` and tests in other languages read:
    ///
    /// ```swift
    /// let contract = try LiveActivityContract(describing: ScoreAttributes.ContentState.self,
    ///                                         attributes: ScoreAttributes.self, attributesType: "ScoreAttributes")
    /// try Data(contract.json).write(to: URL(fileURLWithPath: "ScoreAttributes.contract.json"))
    /// ```
    ///
    /// A type whose `init(from:)` branches on the values it reads is described along the path the
    /// placeholders take (`0`, `false`, `""`, an empty array, a date of 0).
    /// - Throws: what the type's `init(from:)` throws on the placeholders.
    public init<ContentState: Decodable, Attributes: Decodable>(
        describing contentState: ContentState.Type, attributes: Attributes.Type, attributesType: String, version: Int = 1
    ) throws {
        self.init(
            attributesType: attributesType, version: version, contentState: try Self.fields(of: ContentState.self),
            attributes: try Self.fields(of: Attributes.self)
        )
    }

    /// The contract of a content state alone (the attributes are not checked).
    public init<ContentState: Decodable>(describing contentState: ContentState.Type, attributesType: String, version: Int = 1) throws {
        self.init(attributesType: attributesType, version: version, contentState: try Self.fields(of: ContentState.self))
    }

    private static func fields<T: Decodable>(of type: T.Type) throws -> [String: Field] {
        let probe = Probe()
        _ = try T(from: ProbeDecoder(probe: probe, path: []))
        guard case .object(let fields) = probe.kind(at: []) else { return [:] }
        return fields
    }

    /// The contract as JSON, keys sorted: what ``init(json:)`` reads.
    public var json: [UInt8] {
        func describe(_ field: Field) -> [String: Any] {
            var object: [String: Any] = [:]
            switch field.kind {
            case .int: object["type"] = "int"
            case .double: object["type"] = "double"
            case .bool: object["type"] = "bool"
            case .string: object["type"] = "string"
            case .date(let strategy):
                object["type"] = "date"
                if strategy != .deferredToDate { object["strategy"] = strategy.rawValue }
            case .object(let fields):
                object["type"] = "object"
                object["fields"] = fields.mapValues(describe)
            case .array(let item):
                object["type"] = "array"
                object["items"] = describe(item)
            }
            if field.optional { object["optional"] = true }
            return object
        }
        var object: [String: Any] = [
            "attributes_type": self.attributesType, "version": self.version, "content_state": self.contentState.mapValues(describe),
        ]
        if let attributes = self.attributes { object["attributes"] = attributes.mapValues(describe) }
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data())
    }
}

/// What a probing decode found: the kind asked for at each path, and whether it was optional.
private final class Probe {
    var kinds: [[String]: LiveActivityContract.Kind] = [:]
    var optional: Set<[String]> = []
    var order: [[String]] = []

    func note(_ path: [String], _ kind: LiveActivityContract.Kind, optional: Bool) {
        if let existing = self.kinds[path] {
            // A container noted once stays (its fields are noted below it).
            if !Self.isContainer(existing) { self.kinds[path] = kind }
        } else {
            self.order.append(path)
            self.kinds[path] = kind
        }
        if optional { self.optional.insert(path) }
    }

    private static func isContainer(_ kind: LiveActivityContract.Kind) -> Bool {
        switch kind {
        case .object, .array: true
        default: false
        }
    }

    /// The kind at `path`, its containers filled with what was asked below them.
    func kind(at path: [String]) -> LiveActivityContract.Kind {
        switch self.kinds[path] ?? .object([:]) {
        case .object:
            var fields: [String: LiveActivityContract.Field] = [:]
            for child in self.order where child.count == path.count + 1 && Array(child.prefix(path.count)) == path && child.last != "[]" {
                fields[child.last!] = LiveActivityContract.Field(self.kind(at: child), optional: self.optional.contains(child))
            }
            return .object(fields)
        case .array:
            let item = path + ["[]"]
            return .array(LiveActivityContract.Field(self.kind(at: item), optional: self.optional.contains(item)))
        case let other:
            return other
        }
    }
}

private struct ProbeKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

/// A decoder that answers every request with a placeholder and notes it in a ``Probe``.
private struct ProbeDecoder: Decoder {
    let probe: Probe
    let path: [String]
    var codingPath: [any CodingKey] { self.path.map { ProbeKey(stringValue: $0) } }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        self.probe.note(self.path, .object([:]), optional: false)
        return KeyedDecodingContainer(ProbeKeyed<Key>(probe: self.probe, path: self.path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        self.probe.note(self.path, .array(.init(.int)), optional: false)
        return ProbeUnkeyed(probe: self.probe, path: self.path + ["[]"])
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        ProbeSingle(probe: self.probe, path: self.path)
    }

    /// A placeholder of `T`, noting its kind at `path`.
    static func placeholder<T: Decodable>(_ type: T.Type, probe: Probe, path: [String], optional: Bool) throws -> T {
        switch type {
        case is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type, is UInt.Type, is UInt8.Type, is UInt16.Type,
            is UInt32.Type, is UInt64.Type:
            probe.note(path, .int, optional: optional)
        case is Double.Type, is Float.Type: probe.note(path, .double, optional: optional)
        case is Bool.Type: probe.note(path, .bool, optional: optional)
        case is String.Type: probe.note(path, .string, optional: optional)
        case is Date.Type:
            probe.note(path, .date(.deferredToDate), optional: optional)
            return Date(timeIntervalSinceReferenceDate: 0) as! T
        default:
            // An enum of raw values: its first case (a placeholder would be no case of it).
            if let cases = T.self as? any CaseIterable.Type, let first = Self.firstCase(of: cases) as? T {
                let raw = (first as? any RawRepresentable).map { Self.rawValue(of: $0) }
                probe.note(path, raw is Int ? .int : raw is Double ? .double : .string, optional: optional)
                return first
            }
            // A type of its own (a nested struct, an array): its init(from:) says.
            let value = try T(from: ProbeDecoder(probe: probe, path: path))
            if optional { probe.optional.insert(path) }
            return value
        }
        return try T(from: PlaceholderDecoder())
    }
}

extension ProbeDecoder {
    static func firstCase<C: CaseIterable>(of type: C.Type) -> Any? { type.allCases.first }
    static func rawValue<R: RawRepresentable>(of value: R) -> Any { value.rawValue }
}

/// Decodes the placeholder of a plain value: 0, false or "" from a single value container.
private struct PlaceholderDecoder: Decoder, SingleValueDecodingContainer {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw DecodingError.typeMismatch(type, .init(codingPath: [], debugDescription: "a placeholder is a plain value"))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "a placeholder is a plain value"))
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
    func decodeNil() -> Bool { false }
    func decode(_ type: Bool.Type) throws -> Bool { false }
    func decode(_ type: String.Type) throws -> String { "" }
    func decode(_ type: Double.Type) throws -> Double { 0 }
    func decode(_ type: Float.Type) throws -> Float { 0 }
    func decode(_ type: Int.Type) throws -> Int { 0 }
    func decode(_ type: Int8.Type) throws -> Int8 { 0 }
    func decode(_ type: Int16.Type) throws -> Int16 { 0 }
    func decode(_ type: Int32.Type) throws -> Int32 { 0 }
    func decode(_ type: Int64.Type) throws -> Int64 { 0 }
    func decode(_ type: UInt.Type) throws -> UInt { 0 }
    func decode(_ type: UInt8.Type) throws -> UInt8 { 0 }
    func decode(_ type: UInt16.Type) throws -> UInt16 { 0 }
    func decode(_ type: UInt32.Type) throws -> UInt32 { 0 }
    func decode(_ type: UInt64.Type) throws -> UInt64 { 0 }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: self) }
}

private struct ProbeKeyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let probe: Probe
    let path: [String]
    var codingPath: [any CodingKey] { self.path.map { ProbeKey(stringValue: $0) } }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool {
        // Asked by `decodeIfPresent` (its default for plain values) before the value: optional.
        self.probe.optional.insert(self.path + [key.stringValue])
        return false
    }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try ProbeDecoder.placeholder(type, probe: self.probe, path: self.path + [key.stringValue], optional: false)
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try ProbeDecoder.placeholder(type, probe: self.probe, path: self.path + [key.stringValue], optional: true)
    }
    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ProbeDecoder(probe: self.probe, path: self.path + [key.stringValue]).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ProbeDecoder(probe: self.probe, path: self.path + [key.stringValue]).unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder { ProbeDecoder(probe: self.probe, path: self.path) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(probe: self.probe, path: self.path + [key.stringValue]) }
}

/// An array with one element: enough to learn its item's kind.
private struct ProbeUnkeyed: UnkeyedDecodingContainer {
    let probe: Probe
    let path: [String]
    var codingPath: [any CodingKey] { self.path.dropLast().map { ProbeKey(stringValue: $0) } }
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { self.currentIndex >= 1 }

    init(probe: Probe, path: [String]) {
        self.probe = probe
        self.path = path
    }

    mutating func decodeNil() throws -> Bool {
        // Asked before an element: the items may be null.
        self.probe.optional.insert(self.path)
        return false
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        self.currentIndex += 1
        return try ProbeDecoder.placeholder(type, probe: self.probe, path: self.path, optional: false)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        self.currentIndex += 1
        return try ProbeDecoder(probe: self.probe, path: self.path).container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        self.currentIndex += 1
        return try ProbeDecoder(probe: self.probe, path: self.path).unkeyedContainer()
    }
    mutating func superDecoder() throws -> any Decoder {
        self.currentIndex += 1
        return ProbeDecoder(probe: self.probe, path: self.path)
    }
}

/// A single value: a plain value's placeholder, or a type of its own read through it.
private struct ProbeSingle: SingleValueDecodingContainer {
    let probe: Probe
    let path: [String]
    var codingPath: [any CodingKey] { self.path.map { ProbeKey(stringValue: $0) } }

    func decodeNil() -> Bool {
        // `Optional<T>` asks first: its value may be null.
        self.probe.optional.insert(self.path)
        return false
    }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try ProbeDecoder.placeholder(type, probe: self.probe, path: self.path, optional: false)
    }
}
