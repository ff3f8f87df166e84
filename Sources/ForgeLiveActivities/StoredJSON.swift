internal import ForgeAPNsCore
internal import Foundation

/// A content state or attributes as the registry keeps them: bytes written by Foundation's
/// `JSONEncoder` with default strategies (a `Date` as seconds since 2001, as ActivityKit's
/// `JSONDecoder` reads it), read back as a ``CodableJSON`` to be sent later (a held update, an end
/// without a new state, a renewal's start).
enum StoredJSON {
    /// The JSON encoding of `value`.
    static func encode(_ value: some Encodable, field: String) throws(LiveActivityError) -> [UInt8] {
        do {
            return Array(try JSONEncoder().encode(value))
        } catch {
            throw LiveActivityError(.invalidInput, field: field, rule: "cannot be encoded as JSON: \(error)")
        }
    }

    /// The value `bytes` hold (written by ``encode(_:field:)``).
    static func value(_ bytes: [UInt8]) throws(LiveActivityError) -> CodableJSON {
        do {
            return try JSONDecoder().decode(CodableJSON.self, from: Data(bytes))
        } catch {
            throw LiveActivityError(.store, rule: "a stored content state or attributes is not JSON: \(error)")
        }
    }
}
