internal import Foundation

/// A JSON value as the store keeps a content state (bytes written by Foundation's `JSONEncoder`,
/// as ActivityKit's `JSONDecoder` reads them), decoded again to be sent later: a held update, an
/// end without a new state. Integers stay integers; key order is not kept (JSON objects have none).
enum StoredJSON: Codable, Hashable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([StoredJSON])
    case object([String: StoredJSON])

    /// The JSON encoding of `value` with default strategies (a `Date` as seconds since 2001, as
    /// ActivityKit decodes it).
    static func encode(_ value: some Encodable, field: String) throws(LiveActivityError) -> [UInt8] {
        do {
            return Array(try JSONEncoder().encode(value))
        } catch {
            throw LiveActivityError(.invalidInput, field: field, rule: "cannot be encoded as JSON: \(error)")
        }
    }

    /// The value `bytes` hold (written by ``encode(_:field:)``).
    init(bytes: [UInt8]) throws(LiveActivityError) {
        do {
            self = try JSONDecoder().decode(StoredJSON.self, from: Data(bytes))
        } catch {
            throw LiveActivityError(.store, rule: "a stored content state is not JSON: \(error)")
        }
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        if let object = try? decoder.container(keyedBy: Key.self) {
            var values: [String: StoredJSON] = [:]
            for key in object.allKeys { values[key.stringValue] = try object.decode(StoredJSON.self, forKey: key) }
            self = .object(values)
        } else if var array = try? decoder.unkeyedContainer() {
            var values: [StoredJSON] = []
            while !array.isAtEnd { values.append(try array.decode(StoredJSON.self)) }
            self = .array(values)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let value = try? single.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? single.decode(Int64.self) {
                self = .integer(value)
            } else if let value = try? single.decode(Double.self) {
                self = .number(value)
            } else {
                self = .string(try single.decode(String.self))
            }
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let values):
            var object = encoder.container(keyedBy: Key.self)
            for (key, value) in values.sorted(by: { $0.key < $1.key }) { try object.encode(value, forKey: Key(stringValue: key)) }
        case .array(let values):
            var array = encoder.unkeyedContainer()
            for value in values { try array.encode(value) }
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .integer(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .number(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .string(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        }
    }
}
