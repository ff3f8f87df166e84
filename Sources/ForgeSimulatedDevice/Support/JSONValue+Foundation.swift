package import ForgeNotificationTypes
package import Foundation

extension JSONValue {
    /// The value as `JSONSerialization` objects; whole numbers become integers so that
    /// `JSONDecoder` reads them into `Int` properties.
    var foundationObject: Any {
        switch self {
        case .object(let object): return object.mapValues(\.foundationObject)
        case .array(let array): return array.map(\.foundationObject)
        case .string(let string): return string
        case .number(let number):
            if number.rounded() == number, abs(number) < 9e15 { return Int(number) }
            return number
        case .bool(let bool): return bool
        case .null: return NSNull()
        }
    }

    /// The value as JSON text (keys sorted).
    package var jsonData: Data {
        // JSONSerialization only throws for objects it cannot represent; JSONValue has none.
        (try? JSONSerialization.data(withJSONObject: self.foundationObject, options: [.fragmentsAllowed, .sortedKeys]))
            ?? Data("null".utf8)
    }
}

/// Decodes `type` from `data` with a default `JSONDecoder` (the check a Live Activity type makes).
func decodeJSON<Value: Decodable>(_ type: Value.Type, from data: Data) throws {
    _ = try JSONDecoder().decode(type, from: data)
}
