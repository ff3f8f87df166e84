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
        if let problem = scanner.validateObject() {
            throw APNSValidationError(.badPayload, field: field, rule: "must be one JSON object: \(problem)")
        }
    }
}
