internal import Foundation

/// No custom keys: the payload is the `aps` dictionary alone.
public struct APNSNoCustomKeys: Encodable, Hashable, Sendable {
    /// Creates the empty set of custom keys.
    public init() {}
}

/// Encodes payloads as `{"aps":{…}, <custom keys>}`.
///
/// The `aps` dictionary and the custom keys are encoded separately and joined, so a custom key named
/// `aps` is caught instead of silently replacing the real one, and a custom payload that is not a
/// JSON object gets a clear error. Keys are sorted, so one notification always encodes to the same
/// bytes; slashes are not escaped. Dates inside custom values use `JSONEncoder`'s default strategy,
/// which is what an app's default `JSONDecoder` expects (a Live Activity `ContentState` must decode
/// with default strategies).
enum APNSPayloadEncoder {
    static func makeJSONEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// `{"aps":<aps>, …custom}`.
    static func encode(aps: some Encodable, custom: some Encodable) throws(APNSValidationError) -> [UInt8] {
        let encoder = Self.makeJSONEncoder()
        let apsBytes = try Self.encodeValue(aps, with: encoder, field: "aps")
        let customBytes = try Self.encodeCustom(custom, with: encoder, reservedKeys: ["aps"])
        var body = [UInt8]()
        body.reserveCapacity(apsBytes.count + customBytes.count + 8)
        body.append(contentsOf: #"{"aps":"#.utf8)
        body.append(contentsOf: apsBytes)
        if customBytes.count > 2 {  // more than "{}"
            body.append(UInt8(ascii: ","))
            body.append(contentsOf: customBytes.dropFirst().dropLast())
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    /// A payload made only of custom keys (VoIP, File Provider, MDM and the like).
    static func encode(custom: some Encodable) throws(APNSValidationError) -> [UInt8] {
        try Self.encodeCustom(custom, with: Self.makeJSONEncoder(), reservedKeys: [])
    }

    private static func encodeCustom(
        _ value: some Encodable,
        with encoder: JSONEncoder,
        reservedKeys: Set<String>
    ) throws(APNSValidationError) -> [UInt8] {
        let bytes = try Self.encodeValue(value, with: encoder, field: "payload")
        var scanner = JSONShapeScanner(bytes)
        if let problem = scanner.validateObject() {
            throw APNSValidationError(
                .badPayload,
                field: "payload",
                rule: "custom keys must encode as a JSON object (\(problem))"
            )
        }
        if let clash = scanner.topLevelKeys.first(where: reservedKeys.contains) {
            throw APNSValidationError(
                .badPayload,
                field: "payload.\(clash)",
                rule: "a custom key must not be named '\(clash)'; ForgePush writes '\(clash)' from the notification's fields"
            )
        }
        return bytes
    }

    private static func encodeValue(
        _ value: some Encodable,
        with encoder: JSONEncoder,
        field: String
    ) throws(APNSValidationError) -> [UInt8] {
        do {
            return Array(try encoder.encode(value))
        } catch {
            throw APNSValidationError(.badPayload, field: field, rule: "could not be encoded as JSON: \(error)")
        }
    }
}
