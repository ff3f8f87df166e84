internal import Foundation

/// Any JSON value, as `Codable` sees it: read from the command line (`--data KEY=JSON`), a tokens
/// file's NDJSON line or a stored content state, and written back through any encoder (the
/// library's payload encoder: sorted keys, slashes unescaped). Integers stay integers.
package enum CodableJSON: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    /// An integer above `Int64.max`, kept exact instead of rounded to a double.
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([CodableJSON])
    case object([String: CodableJSON])

    /// Parses one JSON text (a scalar is allowed).
    /// - Throws: when `bytes` is not JSON, the library's `JSONShapeProblem`, which says what and
    ///   where in the words payload errors use (`unexpected '}' at column 12 (expected a key)`),
    ///   so every flag and file reads alike; Foundation's errors say it differently on each platform.
    package init(parsing bytes: [UInt8]) throws {
        var scanner = JSONShapeScanner(bytes)
        if let problem = scanner.validateValue() { throw problem }
        self = try JSONDecoder().decode(CodableJSON.self, from: Data(bytes))
    }

    package init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var values: [CodableJSON] = []
            while !array.isAtEnd { values.append(try array.decode(CodableJSON.self)) }
            self = .array(values)
            return
        }
        if let object = try? decoder.container(keyedBy: DynamicKey.self) {
            var values: [String: CodableJSON] = [:]
            for key in object.allKeys { values[key.stringValue] = try object.decode(CodableJSON.self, forKey: key) }
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
        } else if let value = try? single.decode(UInt64.self) {
            self = .uint(value)
        } else if let value = try? single.decode(Double.self) {
            self = .double(value)
        } else if let value = try? single.decode(String.self) {
            self = .string(value)
        } else {
            // Neither: a number that fits nothing (1e999). The Double attempt's error says so.
            self = .double(try single.decode(Double.self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
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
        case .uint(let value):
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

    /// What a parser said was wrong with the text (`Number 1e999 is not representable in Swift`),
    /// without a final period, to fit inside a message.
    package static func describe(_ error: any Error) -> String {
        if let problem = error as? JSONShapeProblem { return problem.detail }
        let text: String
        if case DecodingError.dataCorrupted(let context) = error {
            text = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String ?? context.debugDescription
        } else if error is DecodingError {
            text = "\(error)"
        } else {
            text = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
        }
        return text.hasSuffix(".") ? String(text.dropLast()) : text
    }

    struct DynamicKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { self.stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
