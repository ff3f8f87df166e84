public import ForgeAPNsCore
public import struct Foundation.Date
internal import ForgeHTTP2

/// Why a send failed: APNs' rejection (status, reason, timestamp, apns-id), or the transport,
/// the deadline, cancellation, bad input or credentials. Never carries a key or a provider token.
public struct APNSError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Kind: String, Hashable, Sendable {
        /// APNs answered with an error status; see ``status``, ``reason``, ``timestamp``.
        case rejected
        /// The connection failed (after the retries the policy allows).
        case transport
        /// No connection could be made (connect, TLS or ALPN failed) within the tries the policy
        /// allows, or one that cannot heal (a name that does not resolve, an untrusted certificate):
        /// nothing was sent.
        case unreachable
        /// The deadline passed first.
        case deadlineExceeded
        /// The calling task was cancelled.
        case cancelled
        /// The notification or token broke a rule; nothing was sent.
        case invalidNotification
        /// The key could not sign a provider token, or the client certificate (PEM or PKCS#12, with
        /// its password) or the CA file cannot be used.
        case credentials
        /// The client was shut down.
        case shutdown
    }

    /// The kind of failure.
    public var kind: Kind
    /// The HTTP status APNs answered, for ``Kind/rejected``.
    public var status: Int?
    /// APNs' reason, for ``Kind/rejected``.
    public var reason: APNSErrorReason?
    /// When APNs learned the token was no longer valid (410).
    public var timestamp: Date?
    /// The `apns-id` (or `apns-request-id`) of the last attempt.
    public var apnsID: String?
    /// Attempts made (retries of 429/5xx and of dead connections count; replays of unprocessed requests do not).
    public var attempts: Int
    /// Whether APNs may have delivered the push anyway (a connection died after sending it).
    public var mayHaveBeenDelivered: Bool
    /// What happened, in words.
    public var detail: String

    /// Creates an error.
    public init(
        kind: Kind, status: Int? = nil, reason: APNSErrorReason? = nil, timestamp: Date? = nil, apnsID: String? = nil,
        attempts: Int = 0, mayHaveBeenDelivered: Bool = false, detail: String = ""
    ) {
        self.kind = kind
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.apnsID = apnsID
        self.attempts = attempts
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
        self.detail = detail
    }

    /// What to do about the token: drop it (`Unregistered`, `BadDeviceToken`, …), fix the request,
    /// refresh credentials, or retry later.
    public var disposition: APNSErrorReason.Disposition? { self.reason?.disposition }

    public var description: String {
        var text = "APNs send failed (\(self.kind.rawValue))"
        if let status = self.status { text += ": \(status)" }
        if let reason = self.reason { text += " \(reason.rawValue)" }
        if let timestamp = self.timestamp { text += " at \(timestamp)" }
        if !self.detail.isEmpty { text += ": \(self.detail)" }
        if self.attempts > 1 { text += " (\(self.attempts) attempts)" }
        if self.mayHaveBeenDelivered { text += " (may have been delivered)" }
        return text
    }
}

/// A push APNs accepted.
public struct APNSSendResult: Hashable, Sendable {
    /// The `apns-id` (or a broadcast's `apns-request-id`).
    public var apnsID: String {
        get {
            switch self.identifiers {
            case .strings(let id, _): return id
            case .response(let response): return response[header: "apns-id"] ?? response[header: "apns-request-id"] ?? ""
            }
        }
        set { self.identifiers = .strings(newValue, self.apnsUniqueID) }
    }

    /// The `apns-unique-id` (sandbox, broadcasts).
    public var apnsUniqueID: String? {
        get {
            switch self.identifiers {
            case .strings(_, let unique): return unique
            case .response(let response): return response[header: "apns-unique-id"]
            }
        }
        set { self.identifiers = .strings(self.apnsID, newValue) }
    }

    /// Attempts it took.
    public var attempts: Int
    /// Whether an earlier attempt may also have been delivered (its connection died after sending).
    public var mayHaveBeenDeliveredTwice: Bool
    /// From the first attempt to APNs' answer, retries included.
    public var duration: Duration

    /// The ids as strings, or the response they are read from when asked for: a bulk send of a
    /// million tokens whose ids nobody reads then builds no strings for them.
    private var identifiers: Identifiers

    private enum Identifiers: Sendable {
        case strings(String, String?)
        case response(APNSTransportResponse)
    }

    /// The answer it came from (the channel API reads its headers and body).
    var response: APNSTransportResponse {
        switch self.identifiers {
        case .response(let response): return response
        case .strings(let id, let unique):
            var headers = [APNSHeaderField("apns-id", id)]
            if let unique { headers.append(APNSHeaderField("apns-unique-id", unique)) }
            return APNSTransportResponse(status: 200, headers: headers)
        }
    }

    /// A result whose ids stay in `response` until read.
    init(response: APNSTransportResponse, attempts: Int, mayHaveBeenDeliveredTwice: Bool, duration: Duration) {
        self.identifiers = .response(response)
        self.attempts = attempts
        self.mayHaveBeenDeliveredTwice = mayHaveBeenDeliveredTwice
        self.duration = duration
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.apnsID == rhs.apnsID && lhs.apnsUniqueID == rhs.apnsUniqueID && lhs.attempts == rhs.attempts
            && lhs.mayHaveBeenDeliveredTwice == rhs.mayHaveBeenDeliveredTwice && lhs.duration == rhs.duration
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.apnsID)
        hasher.combine(self.apnsUniqueID)
        hasher.combine(self.attempts)
        hasher.combine(self.mayHaveBeenDeliveredTwice)
        hasher.combine(self.duration)
    }
}
