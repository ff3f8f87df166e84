import Foundation

/// Any JSON value, read from the command line (`--data KEY=JSON`) or a tokens file's NDJSON line, and
/// written back through the library's payload encoder (sorted keys, slashes unescaped).
enum CommandLineJSON: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([CommandLineJSON])
    case object([String: CommandLineJSON])

    /// Parses one JSON text (a scalar is allowed).
    /// - Throws: the decoder's error when `bytes` is not JSON.
    init(parsing bytes: [UInt8]) throws {
        self = try JSONDecoder().decode(CommandLineJSON.self, from: Data(bytes))
    }

    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var values: [CommandLineJSON] = []
            while !array.isAtEnd { values.append(try array.decode(CommandLineJSON.self)) }
            self = .array(values)
            return
        }
        if let object = try? decoder.container(keyedBy: DynamicKey.self) {
            var values: [String: CommandLineJSON] = [:]
            for key in object.allKeys { values[key.stringValue] = try object.decode(CommandLineJSON.self, forKey: key) }
            self = .object(values)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? single.decode(Double.self) {
            self = .double(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .object(let values):
            var container = encoder.container(keyedBy: DynamicKey.self)
            for (key, value) in values { try container.encode(value, forKey: DynamicKey(key)) }
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .int(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .double(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    struct DynamicKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { self.stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
