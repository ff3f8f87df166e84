public import Foundation

/// A request APNs rejected: the status, the reason and, for 410, when the token stopped being valid.
///
/// ```swift
/// catch let rejection as APNSErrorResponse where rejection.disposition == .dropToken {
///     try await tokens.remove(token, invalidSince: rejection.timestamp)
/// }
/// ```
public struct APNSErrorResponse: Error, Hashable, Sendable, CustomStringConvertible {
    /// `:status`.
    public var status: Int
    /// `reason` of the body; an empty unknown reason when the body had none.
    public var reason: APNSErrorReason
    /// `timestamp` of a 410 body: when APNs confirmed the token was no longer valid.
    public var timestamp: Date?
    /// `apns-id`, verbatim.
    public var apnsID: String?
    /// `apns-request-id` (broadcast and channel requests), verbatim.
    public var apnsRequestID: String?
    /// `apns-unique-id`, verbatim.
    public var apnsUniqueID: String?

    /// Creates a rejection.
    public init(
        status: Int,
        reason: APNSErrorReason,
        timestamp: Date? = nil,
        apnsID: String? = nil,
        apnsRequestID: String? = nil,
        apnsUniqueID: String? = nil
    ) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
        self.apnsRequestID = apnsRequestID
        self.apnsUniqueID = apnsUniqueID
    }

    /// Reads a rejection from its status, headers and body, whatever the body holds.
    ///
    /// The body is `{"reason":"…"}`, plus `"timestamp"` in milliseconds since 1970 on 410 (a number,
    /// or a string of digits). A missing or unreadable body gives an empty, unknown reason; nothing
    /// here throws or traps.
    public init(
        status: Int,
        headers: some Sequence<(name: String, value: String)>,
        body: some Collection<UInt8>
    ) {
        var apnsID: String?, apnsRequestID: String?, apnsUniqueID: String?
        for (name, value) in headers {
            switch name.lowercased() {
            case "apns-id": apnsID = value
            case "apns-unique-id": apnsUniqueID = value
            case "apns-request-id": apnsRequestID = value
            default: continue
            }
        }
        var reason = APNSErrorReason(rawValue: "")
        var timestamp: Date?
        if !body.isEmpty, body.count <= 64 * 1024,
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        {
            if let text = object["reason"] as? String { reason = APNSErrorReason(rawValue: text) }
            timestamp = Self.date(fromMilliseconds: object["timestamp"])
        }
        self.init(
            status: status, reason: reason, timestamp: timestamp, apnsID: apnsID,
            apnsRequestID: apnsRequestID, apnsUniqueID: apnsUniqueID
        )
    }

    /// What to do about it: the reason's disposition, or the status's for a reason ForgePush does not know.
    public var disposition: APNSErrorReason.Disposition {
        self.reason.disposition ?? .forUnknownReason(status: self.status)
    }

    /// The body APNs sends for this rejection: `{"reason":"X"}` or `{"reason":"X","timestamp":ms}`.
    package func jsonBody() -> [UInt8] {
        var body = Array(#"{"reason":"#.utf8)
        let core = JSONWriterCore()
        core.writeString(self.reason.rawValue)
        body += core.output
        if let timestamp {
            body += Array(#","timestamp":"#.utf8)
            // To nearest: a millisecond count read from APNs and stored as a Date can come back a hair
            // below the integer (2150000000002 ms reads as …001.9998), and rounding down would lose 1 ms.
            let milliseconds = (timestamp.timeIntervalSince1970 * 1000).rounded()
            body += Array(String(milliseconds.isFinite && abs(milliseconds) < 1e17 ? Int64(milliseconds) : 0).utf8)
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    public var description: String {
        var text = "\(self.status) \(self.reason)"
        var details: [String] = []
        if let id = self.apnsID ?? self.apnsRequestID { details.append("apns-id \(id)") }
        if let timestamp { details.append("token invalid since \(timestamp.formatted(.iso8601))") }
        if !details.isEmpty { text += " (" + details.joined(separator: ", ") + ")" }
        return text
    }

    private static func date(fromMilliseconds value: Any?) -> Date? {
        let milliseconds: Double?
        switch value {
        // JSON true/false arrive as NSNumber too, and `is Bool` also matches the numbers 0 and 1 on
        // Linux; the boolean's Objective-C type code ("c") tells them apart.
        case let number as NSNumber where String(cString: number.objCType) != "c": milliseconds = number.doubleValue
        case let text as String: milliseconds = Double(text)
        default: milliseconds = nil
        }
        guard let milliseconds, milliseconds.isFinite, milliseconds >= 0, milliseconds < 1e16 else { return nil }
        return Date(timeIntervalSince1970: milliseconds / 1000)
    }
}
