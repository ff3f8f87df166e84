internal import Foundation

/// The lints that look at a payload's JSON values as Foundation reads them (`NSNull` for `null`).
extension APNSLinter {
    /// LA012: every `null` inside `content-state`, in objects and arrays, by path.
    static func nulls(in value: Any, path: String, into lints: inout [APNSLint]) {
        if value is NSNull {
            lints.append(APNSLint(
                id: "LA012",
                message: "\(path) is null: iOS drops an update whose content-state holds null; leave an optional's key out instead",
                path: path
            ))
        } else if let object = value as? [String: Any] {
            for (key, value) in object.sorted(by: { $0.key < $1.key }) { Self.nulls(in: value, path: "\(path).\(key)", into: &lints) }
        } else if let array = value as? [Any] {
            for (index, element) in array.enumerated() { Self.nulls(in: element, path: "\(path)[\(index)]", into: &lints) }
        }
    }

    /// Whether two JSON objects as `JSONSerialization` reads them are equal, key for key.
    static func sameObject(_ first: [String: Any], _ second: [String: Any]) -> Bool {
        NSDictionary(dictionary: first).isEqual(NSDictionary(dictionary: second))
    }
}
