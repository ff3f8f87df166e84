/// Checks shared by every payload: size limits and the JSON-object shape.
enum APNSPayloadCheck {
    /// Throws ``APNSValidationError/Code/payloadTooLarge`` when `size` exceeds `limit`.
    static func checkSize(_ size: Int, limit: Int, what: String) throws(APNSValidationError) {
        guard size <= limit else {
            throw APNSValidationError(
                .payloadTooLarge,
                field: "payload",
                rule: "is \(size) bytes; the limit for \(what) is \(limit) bytes"
            )
        }
    }

    /// Throws ``APNSValidationError/Code/badPayload`` unless `body` is one complete JSON object.
    static func checkObject(_ body: [UInt8], field: String) throws(APNSValidationError) {
        guard !body.isEmpty else {
            throw APNSValidationError(.badPayload, field: field, rule: "must not be empty (APNs answers PayloadEmpty)")
        }
        var scanner = JSONShapeScanner(body)
        guard let problem = scanner.validateObject() else { return }
        let rule: String
        switch problem.kind {
        case .encoding: rule = "must be UTF-8 (\(problem))"
        case .number: rule = "must hold only numbers that fit a 64-bit double (\(problem))"
        case .syntax, .notObject: rule = "must be one JSON object: \(problem)"
        }
        throw APNSValidationError(.badPayload, field: field, rule: rule)
    }
}

/// What a payload gets wrong that APNs would still accept (rule P3 of docs/local-server-rules.md): not one JSON
/// object, or no `aps` key. For warnings only; nothing is refused because of it.
package enum APNSPayloadLint {
    /// Why a device could not read `body` as a payload: `not valid JSON: …`, `not UTF-8: …` or
    /// `not a JSON object: …`; `nil` for one JSON object. The rules are `JSONSerialization`'s, which
    /// is what a device parses a payload with.
    package static func jsonProblem(in body: [UInt8]) -> String? {
        var scanner = JSONShapeScanner(body)
        guard let problem = scanner.validateObject() else { return nil }
        switch problem.kind {
        case .syntax, .number: return "not valid JSON: \(problem)"
        case .encoding: return "not UTF-8: \(problem)"
        case .notObject: return "not a JSON object: \(problem)"
        }
    }

    /// A description of the first problem, ``jsonProblem(in:)`` or ``apsProblem(in:)``; `nil` for a
    /// JSON object with an `aps` key.
    package static func problem(in body: [UInt8]) -> String? {
        Self.jsonProblem(in: body) ?? Self.apsProblem(in: body)
    }

    /// `no "aps" key` when `body`, a JSON object, has no `aps` key; `nil` otherwise. Call it for a
    /// body ``jsonProblem(in:)`` found nothing wrong with.
    package static func apsProblem(in body: [UInt8]) -> String? {
        // A key "aps" at any depth is enough for a lint: the exact position needs a full parse.
        let key = #""aps""#.utf8
        guard body.count >= key.count else { return "no \"aps\" key" }
        var index = 0
        while index + key.count <= body.count {
            if body[index] == UInt8(ascii: "\""), body[index..<(index + key.count)].elementsEqual(key) {
                var after = index + key.count
                while after < body.count, body[after] == 0x20 || body[after] == 0x0A || body[after] == 0x0D || body[after] == 0x09 {
                    after += 1
                }
                if after < body.count, body[after] == UInt8(ascii: ":") { return nil }
            }
            index += 1
        }
        return "no \"aps\" key"
    }
}
