internal import ForgeNotificationTypes
internal import Foundation

/// What an app's Live Activity types decode, as Swift's `Codable` sees them, written as JSON so that a
/// test in any language can give it to the simulated phone:
///
/// ```json
/// {"attributes_type": "ScoreAttributes", "version": 1,
///  "content_state": {"home": {"type": "int"}, "eta": {"type": "date", "optional": true},
///                    "scorer": {"type": "object", "fields": {"name": {"type": "string"}}},
///                    "events": {"type": "array", "items": {"type": "string"}}},
///  "attributes": {"match": {"type": "string"}}}
/// ```
///
/// Types: `int`, `double`, `bool`, `string`, `date` (`strategy`: `deferredToDate`, the default and
/// what ActivityKit decodes with; `secondsSince1970`, `millisecondsSince1970`, `iso8601`), `object`
/// (`fields`), `array` (`items`); `optional` is false unless given. A phone decodes a push's
/// `content-state` (and a start's `attributes`) against it with Foundation's `JSONDecoder`, walking
/// the contract as a synthesized `init(from:)` walks the app's type: an `Int` from `1.5` fails, a
/// missing required key fails, `null` into a field that is not optional fails, unknown keys are
/// ignored.
public struct LiveActivityContract: Hashable, Sendable {
    /// A field's type.
    public indirect enum Kind: Hashable, Sendable {
        case int
        case double
        case bool
        case string
        case date(DateStrategy)
        case object([String: Field])
        case array(Field)

        /// The Swift type it stands for, as an error names it.
        public var swiftName: String {
            switch self {
            case .int: "Int"
            case .double: "Double"
            case .bool: "Bool"
            case .string: "String"
            case .date(let strategy): "Date (\(strategy.rawValue))"
            case .object: "an object"
            case .array(let item): "[\(item.kind.swiftName)\(item.optional ? "?" : "")]"
            }
        }
    }

    /// A field: its type, and whether it is optional (absent or `null` reads as `nil`).
    public struct Field: Hashable, Sendable {
        public var kind: Kind
        public var optional: Bool

        public init(_ kind: Kind, optional: Bool = false) {
            self.kind = kind
            self.optional = optional
        }
    }

    /// How a `Date` field is written (`JSONDecoder.DateDecodingStrategy`).
    public enum DateStrategy: String, Hashable, Sendable, CaseIterable {
        /// Seconds since 2001-01-01, a number: `JSONDecoder`'s default, and ActivityKit's.
        case deferredToDate
        /// Seconds since 1970, a number.
        case secondsSince1970
        /// Milliseconds since 1970, a number.
        case millisecondsSince1970
        /// An ISO 8601 date-time string with a time zone, without fractional seconds.
        case iso8601
    }

    /// A contract that is not readable, with the JSON path of what is wrong.
    public struct Invalid: Error, Hashable, Sendable, CustomStringConvertible {
        /// Where: `content_state.scorer.fields.name.type`.
        public var path: String
        public var rule: String
        public var description: String { "\(self.path): \(self.rule)" }
    }

    /// A payload the contract does not decode: where, what was expected and what was there.
    public struct Mismatch: Error, Hashable, Sendable, CustomStringConvertible {
        /// The field's path in the payload: `content-state.scorer.name`, `content-state.events[2]`.
        public var path: String
        /// What the app's type expects there.
        public var expected: String
        /// What the payload has there, as JSON (`missing` when absent).
        public var found: String
        public var description: String {
            "\(self.path): expected \(self.expected), found \(self.found)"
        }
    }

    public var attributesType: String
    public var version: Int
    public var contentState: [String: Field]
    /// The attributes' fields, when the contract describes them.
    public var attributes: [String: Field]?

    public init(
        attributesType: String, version: Int = 1, contentState: [String: Field],
        attributes: [String: Field]? = nil
    ) {
        self.attributesType = attributesType
        self.version = version
        self.contentState = contentState
        self.attributes = attributes
    }

    /// Reads a contract's JSON.
    /// - Throws: ``Invalid`` naming the JSON path and the rule.
    public init(json: some Collection<UInt8>) throws(Invalid) {
        guard let parsed = try? JSONValue(parsing: json), let object = parsed.objectValue else {
            throw Invalid(path: "$", rule: "must be a JSON object")
        }
        for key in object.keys.sorted()
        where !["attributes_type", "version", "content_state", "attributes"].contains(key) {
            throw Invalid(
                path: key,
                rule: "is not a contract key (attributes_type, version, content_state, attributes)")
        }
        guard let type = object["attributes_type"]?.stringValue, !type.isEmpty else {
            throw Invalid(
                path: "attributes_type", rule: "is required: the Swift name of the attributes type")
        }
        var version = 1
        if let value = object["version"] {
            guard let number = value.intValue, number >= 1 else {
                throw Invalid(path: "version", rule: "must be a whole number from 1")
            }
            version = number
        }
        guard let state = object["content_state"] else {
            throw Invalid(path: "content_state", rule: "is required: the ContentState's fields")
        }
        self.init(
            attributesType: type, version: version,
            contentState: try Self.fields(state, path: "content_state"),
            attributes: try object["attributes"].map { value throws(Invalid) in
                try Self.fields(value, path: "attributes")
            }
        )
    }

    private static func fields(_ value: JSONValue, path: String) throws(Invalid) -> [String: Field] {
        guard let object = value.objectValue else {
            throw Invalid(path: path, rule: "must be an object of fields")
        }
        var fields: [String: Field] = [:]
        for (name, spec) in object.sorted(by: { $0.key < $1.key }) {
            fields[name] = try Self.field(spec, path: "\(path).\(name)")
        }
        return fields
    }

    private static func field(_ value: JSONValue, path: String) throws(Invalid) -> Field {
        guard let spec = value.objectValue else {
            throw Invalid(path: path, rule: "must be an object with a type")
        }
        for key in spec.keys.sorted()
        where !["type", "optional", "strategy", "fields", "items"].contains(key) {
            throw Invalid(
                path: "\(path).\(key)", rule: "is not a field key (type, optional, strategy, fields, items)"
            )
        }
        var optional = false
        if let flag = spec["optional"] {
            guard let bool = flag.boolValue else {
                throw Invalid(path: "\(path).optional", rule: "must be true or false")
            }
            optional = bool
        }
        guard let name = spec["type"]?.stringValue else {
            throw Invalid(
                path: "\(path).type", rule: "is required: int, double, bool, string, date, object or array")
        }
        if spec["strategy"] != nil, name != "date" {
            throw Invalid(path: "\(path).strategy", rule: "goes with type date only")
        }
        if spec["fields"] != nil, name != "object" {
            throw Invalid(path: "\(path).fields", rule: "goes with type object only")
        }
        if spec["items"] != nil, name != "array" {
            throw Invalid(path: "\(path).items", rule: "goes with type array only")
        }
        let kind: Kind
        switch name {
        case "int": kind = .int
        case "double": kind = .double
        case "bool": kind = .bool
        case "string": kind = .string
        case "date":
            var strategy = DateStrategy.deferredToDate
            if let raw = spec["strategy"] {
                guard let text = raw.stringValue, let chosen = DateStrategy(rawValue: text) else {
                    throw Invalid(
                        path: "\(path).strategy",
                        rule: "must be deferredToDate, secondsSince1970, millisecondsSince1970 or iso8601")
                }
                strategy = chosen
            }
            kind = .date(strategy)
        case "object":
            guard let fields = spec["fields"] else {
                throw Invalid(path: "\(path).fields", rule: "is required for an object")
            }
            kind = .object(try Self.fields(fields, path: "\(path).fields"))
        case "array":
            guard let items = spec["items"] else {
                throw Invalid(path: "\(path).items", rule: "is required for an array")
            }
            kind = .array(try Self.field(items, path: "\(path).items"))
        default:
            throw Invalid(
                path: "\(path).type",
                rule: "must be int, double, bool, string, date, object or array (got \(name))")
        }
        return Field(kind, optional: optional)
    }

    // MARK: Decoding

    /// Decodes a push's `content-state` (its JSON) as the app's `ContentState` would.
    /// - Throws: ``Mismatch`` naming the field, the type and the value.
    public func checkContentState(_ json: some Collection<UInt8>) throws(Mismatch) {
        try Self.check(Data(json), fields: self.contentState, root: "content-state")
    }

    /// Decodes a start's `attributes` as the app's attributes type would (nothing to check when the
    /// contract does not describe them).
    /// - Throws: ``Mismatch``.
    public func checkAttributes(_ json: some Collection<UInt8>) throws(Mismatch) {
        guard let attributes = self.attributes else { return }
        try Self.check(Data(json), fields: attributes, root: "attributes")
    }

    /// Decodes a whole push payload's `aps.content-state` and, for a start, `aps.attributes`, as
    /// the app would (each when present), from the payload's own bytes: what `apnsctl lint
    /// --contract` reports. Paths start at the payload: `aps.content-state.home`.
    /// - Throws: ``Mismatch``.
    public func checkPayload(_ payload: some Collection<UInt8>) throws(Mismatch) {
        var aps: [String: Field] = ["content-state": Field(.object(self.contentState), optional: true)]
        if let attributes = self.attributes { aps["attributes"] = Field(.object(attributes), optional: true) }
        do {
            try Self.check(Data(payload), fields: ["aps": Field(.object(aps), optional: true)], root: "")
        } catch {
            var trimmed = error
            if trimmed.path.hasPrefix(".") { trimmed.path.removeFirst() }
            if trimmed.path.isEmpty { trimmed.path = "$" }
            throw trimmed
        }
    }

    private static func check(_ json: Data, fields: [String: Field], root: String) throws(Mismatch) {
        let decoder = JSONDecoder()
        decoder.userInfo[Walker.fieldsKey] = FieldsBox(fields)
        do {
            _ = try decoder.decode(Walker.self, from: json)
        } catch let error as DecodingError {
            throw Self.mismatch(error, in: json, fields: fields, root: root)
        } catch {
            throw Mismatch(path: root, expected: "an object", found: "unreadable JSON (\(error))")
        }
    }

    /// The mismatch a decoding error says: the path, the contract's type there, the value there.
    private static func mismatch(
        _ error: DecodingError, in json: Data, fields: [String: Field], root: String
    ) -> Mismatch {
        let path: [any CodingKey]
        var expected: String?
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            path = context.codingPath
        case .keyNotFound(let key, let context):
            path = context.codingPath + [key]
        @unknown default:
            path = []
        }
        // The contract's type at the path.
        var current: Kind = .object(fields)
        var optional = false
        for key in path {
            switch current {
            case .object(let nested):
                guard let field = nested[key.stringValue] else { break }
                (current, optional) = (field.kind, field.optional)
            case .array(let item):
                (current, optional) = (item.kind, item.optional)
            default: break
            }
        }
        expected = current.swiftName + (optional ? "?" : "")
        let text = path.reduce(root) { text, key in
            key.intValue.map { "\(text)[\($0)]" } ?? "\(text).\(key.stringValue)"
        }
        var value: Any? = try? JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed])
        for key in path {
            if let index = key.intValue, let array = value as? [Any] {
                value = index < array.count ? array[index] : nil
            } else {
                value = (value as? [String: Any])?[key.stringValue]
            }
        }
        let found: String
        if let value {
            if value is NSNull {
                found = "null"
            } else if let data = try? JSONSerialization.data(
                withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys])
            {
                found = String(decoding: data, as: UTF8.self)
            } else {
                found = "\(value)"
            }
        } else {
            found = "missing"
        }
        var detail = ""
        if case .dataCorrupted(let context) = error, !context.debugDescription.isEmpty {
            detail = " (\(context.debugDescription))"
        }
        if case .typeMismatch(_, let context) = error, context.debugDescription.contains("does not fit") {
            detail = " (\(context.debugDescription))"
        }
        return Mismatch(path: text, expected: (expected ?? "a value") + detail, found: found)
    }
}

/// The fields a ``Walker`` decodes, handed to it through the decoder's `userInfo`.
private final class FieldsBox: Sendable {
    let fields: [String: LiveActivityContract.Field]
    init(_ fields: [String: LiveActivityContract.Field]) { self.fields = fields }
}

/// Any key.
private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { self.stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

/// Decodes a JSON value by a contract, as a synthesized `init(from:)` of the type it describes
/// would: `decode` for a required field, `decodeIfPresent` for an optional one, Foundation's
/// `JSONDecoder` reading each value (so its rules on numbers, strings and `null` are the ones applied).
private struct Walker: Decodable {
    static let fieldsKey = CodingUserInfoKey(rawValue: "forge.contract.fields")!

    init(from decoder: any Decoder) throws {
        let fields = (decoder.userInfo[Self.fieldsKey] as? FieldsBox)?.fields ?? [:]
        try Self.decode(fields, in: try decoder.container(keyedBy: AnyKey.self))
    }

    private static func decode(
        _ fields: [String: LiveActivityContract.Field], in container: KeyedDecodingContainer<AnyKey>
    ) throws {
        // In the order of the names: a type's declaration order is not in the contract.
        for (name, field) in fields.sorted(by: { $0.key < $1.key }) {
            let key = AnyKey(name)
            do {
                try Self.decode(field, forKey: key, in: container)
            } catch let error as DecodingError {
                throw error
            } catch {
                // JSONDecoder's own error for a number that does not fit names no field (it becomes
                // "not valid JSON" at the top): this field is it.
                throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: container.codingPath + [key], debugDescription: "\(error)"))
            }
        }
    }

    private static func decode(
        _ field: LiveActivityContract.Field, forKey key: AnyKey,
        in container: KeyedDecodingContainer<AnyKey>
    ) throws {
        if field.optional, try !container.contains(key) || container.decodeNil(forKey: key) { return }
        switch field.kind {
        case .int: _ = try container.decode(Int.self, forKey: key)
        case .double: _ = try container.decode(Double.self, forKey: key)
        case .bool: _ = try container.decode(Bool.self, forKey: key)
        case .string: _ = try container.decode(String.self, forKey: key)
        case .date(.deferredToDate): _ = try container.decode(Date.self, forKey: key)
        case .date(.secondsSince1970), .date(.millisecondsSince1970):
            _ = try container.decode(Double.self, forKey: key)
        case .date(.iso8601):
            let text = try container.decode(String.self, forKey: key)
            guard Self.iso8601(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: container,
                    debugDescription: "Expected date string to be ISO8601-formatted.")
            }
        case .object(let nested):
            try Self.decode(nested, in: try container.nestedContainer(keyedBy: AnyKey.self, forKey: key))
        case .array(let item):
            var elements = try container.nestedUnkeyedContainer(forKey: key)
            try Self.decode(item, in: &elements)
        }
    }

    private static func decode(
        _ item: LiveActivityContract.Field, in elements: inout any UnkeyedDecodingContainer
    ) throws {
        while !elements.isAtEnd {
            let index = elements.currentIndex
            do {
                try Self.decodeElement(item, in: &elements)
            } catch let error as DecodingError {
                throw error
            } catch {
                throw DecodingError.dataCorrupted(DecodingError.Context(
                    codingPath: elements.codingPath + [AnyKey(intValue: index)!], debugDescription: "\(error)"
                ))
            }
        }
    }

    private static func decodeElement(
        _ item: LiveActivityContract.Field, in elements: inout any UnkeyedDecodingContainer
    ) throws {
        if item.optional, try elements.decodeNil() { return }
        switch item.kind {
        case .int: _ = try elements.decode(Int.self)
        case .double: _ = try elements.decode(Double.self)
        case .bool: _ = try elements.decode(Bool.self)
        case .string: _ = try elements.decode(String.self)
        case .date(.deferredToDate): _ = try elements.decode(Date.self)
        case .date(.secondsSince1970), .date(.millisecondsSince1970):
            _ = try elements.decode(Double.self)
        case .date(.iso8601):
            let index = elements.currentIndex
            let text = try elements.decode(String.self)
            guard Self.iso8601(text) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: elements.codingPath + [AnyKey(intValue: index)!],
                        debugDescription: "Expected date string to be ISO8601-formatted."
                    ))
            }
        case .object(let nested):
            try Self.decode(nested, in: try elements.nestedContainer(keyedBy: AnyKey.self))
        case .array(let inner):
            var nested = try elements.nestedUnkeyedContainer()
            try Self.decode(inner, in: &nested)
        }
    }

    /// As `JSONDecoder.DateDecodingStrategy.iso8601` reads a date: Foundation's ISO 8601 parse
    /// style (a date-time with a time zone; fractional seconds are taken).
    private static func iso8601(_ text: String) -> Bool {
        (try? Date.ISO8601FormatStyle().parse(text)) != nil
    }
}
