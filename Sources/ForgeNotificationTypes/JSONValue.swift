internal import Foundation

/// A JSON value, `Sendable`: the portable stand-in for the `[AnyHashable: Any]` payloads that
/// UIKit hands an app.
///
/// ```swift
/// payload["type"]?.stringValue == "task_sync"     // as `payload["type"] as? String == "task_sync"`
/// payload["aps"]?["content-available"]?.intValue == 1
/// ```
public enum JSONValue: Hashable, Sendable, CustomStringConvertible {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    /// A JSON text that cannot be read, with where and why.
    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// What is wrong.
        public var reason: String
        public var description: String { "not a JSON value: \(self.reason)" }
    }

    /// Parses JSON text.
    /// - Throws: ``ParseError`` saying what is wrong.
    public init(parsing bytes: some Collection<UInt8>) throws(ParseError) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        } catch {
            throw ParseError(reason: (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)")
        }
        self = JSONValue(foundation: object)
    }

    /// Converts what `JSONSerialization` produced.
    public init(foundation value: Any) {
        switch value {
        case let dictionary as [String: Any]: self = .object(dictionary.mapValues(JSONValue.init(foundation:)))
        case let array as [Any]: self = .array(array.map(JSONValue.init(foundation:)))
        case let string as String: self = .string(string)
        case let number as NSNumber:
            // JSON true/false arrive as NSNumber; their type code "c" tells them from 0 and 1.
            self = String(cString: number.objCType) == "c" ? .bool(number.boolValue) : .number(number.doubleValue)
        case is NSNull: self = .null
        default: self = .null
        }
    }

    /// The member called `key`, for objects.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The element at `index`, for arrays.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let array) = self, array.indices.contains(index) { return array[index] }
        return nil
    }

    /// The string, if this is one.
    public var stringValue: String? { if case .string(let value) = self { return value } else { return nil } }
    /// The number, if this is one.
    public var doubleValue: Double? { if case .number(let value) = self { return value } else { return nil } }
    /// The number as an integer, if this is a whole number.
    public var intValue: Int? {
        guard case .number(let value) = self, value.rounded() == value, abs(value) < 9e15 else { return nil }
        return Int(value)
    }
    /// The boolean, if this is one.
    public var boolValue: Bool? { if case .bool(let value) = self { return value } else { return nil } }
    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? { if case .object(let value) = self { return value } else { return nil } }
    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let value) = self { return value } else { return nil } }

    public var description: String {
        switch self {
        case .object(let object):
            return "{" + object.sorted(by: { $0.key < $1.key }).map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}"
        case .array(let array): return "[" + array.map(\.description).joined(separator: ",") + "]"
        case .string(let string): return "\"\(string)\""
        case .number(let number): return number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .bool(let bool): return String(bool)
        case .null: return "null"
        }
    }
}
