/// An `aps` dictionary that writes itself in sorted key order.
protocol APNSWritable {
    func write(to object: inout APNSObjectWriter) throws
}

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
/// with default strategies). See ``APNSJSONEncoder`` for why Foundation's encoder is not used.
enum APNSPayloadEncoder {
    /// `{"aps":<aps>, …custom}`, written into one buffer: the custom object's opening brace becomes
    /// the comma after `aps`, and its closing brace closes the whole payload.
    static func encode(aps: some APNSWritable, custom: some Encodable) throws(APNSValidationError) -> [UInt8] {
        let core = JSONWriterCore()
        core.output.append(contentsOf: #"{"aps":"#.utf8)
        do {
            var object = APNSObjectWriter(core: core, depth: 1)
            try aps.write(to: &object)
            object.finish()
        } catch {
            throw APNSValidationError(.badPayload, field: "aps", rule: "could not be encoded as JSON: \(error)")
        }
        if custom is APNSNoCustomKeys {
            core.output.append(UInt8(ascii: "}"))
            return core.output
        }
        let customStart = core.output.count
        core.reservedTopLevelKey = "aps"
        do {
            try core.encodeValue(custom, depth: 0, codingPath: [])
            core.close(deeperThan: -1)
        } catch {
            throw APNSValidationError(.badPayload, field: "payload", rule: "could not be encoded as JSON: \(error)")
        }
        try Self.checkCustom(core, from: customStart, reservedKey: "aps")
        if core.output.count - customStart == 2 {  // "{}": no custom keys after all; close the payload
            core.output.removeLast(2)
            core.output.append(UInt8(ascii: "}"))
        } else {
            core.output[customStart] = UInt8(ascii: ",")
        }
        return core.output
    }

    /// A payload made only of custom keys (VoIP, File Provider, MDM and the like).
    static func encode(custom: some Encodable) throws(APNSValidationError) -> [UInt8] {
        try Self.encodeCustom(custom, reservedKey: nil)
    }

    private static func encodeCustom(
        _ value: some Encodable,
        reservedKey: String?
    ) throws(APNSValidationError) -> [UInt8] {
        let core = JSONWriterCore()
        core.reservedTopLevelKey = reservedKey
        do {
            try core.encodeValue(value, depth: 0, codingPath: [])
            core.close(deeperThan: -1)
        } catch {
            throw APNSValidationError(.badPayload, field: "payload", rule: "could not be encoded as JSON: \(error)")
        }
        try Self.checkCustom(core, from: 0, reservedKey: reservedKey)
        return core.output
    }

    /// The custom keys must form one object and must not use the reserved key.
    private static func checkCustom(_ core: JSONWriterCore, from start: Int, reservedKey: String?) throws(APNSValidationError) {
        guard core.output.count > start, core.output[start] == UInt8(ascii: "{") else {
            let text = String(decoding: core.output[start...].prefix(20), as: UTF8.self)
            throw APNSValidationError(
                .badPayload,
                field: "payload",
                rule: "custom keys must encode as a JSON object (got \(text.isEmpty ? "nothing" : text))"
            )
        }
        if core.usedReservedKey, let clash = reservedKey {
            throw APNSValidationError(
                .badPayload,
                field: "payload.\(clash)",
                rule: "a custom key must not be named '\(clash)'; ForgePush writes '\(clash)' from the notification's fields"
            )
        }
    }

}
