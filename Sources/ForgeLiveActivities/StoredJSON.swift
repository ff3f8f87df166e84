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

/// An alert kept as the payload's `aps.alert` JSON, read back: `title` and `body` each a string or
/// `{"loc-key", "loc-args"}`, `sound` a string.
enum StoredAlert {
    static func alert(_ bytes: [UInt8]) -> APNSLiveActivityAlert? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
            let title = text(object["title"]), let body = text(object["body"])
        else { return nil }
        return APNSLiveActivityAlert(title: title, body: body, sound: object["sound"] as? String)
    }

    private static func text(_ value: Any?) -> APNSLiveActivityAlert.Text? {
        if let plain = value as? String { return .plain(plain) }
        guard let localized = value as? [String: Any], let key = localized["loc-key"] as? String else { return nil }
        return .localized(key: key, arguments: localized["loc-args"] as? [String] ?? [])
    }
}

extension Date {
    /// The date `duration` later.
    func addingDuration(_ duration: Duration) -> Date {
        let (seconds, attoseconds) = duration.components
        return self.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
    }
}
