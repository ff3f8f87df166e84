public import ForgeAPNsCore
internal import ForgeHTTP2

/// A fault the local server applies to a request instead of (or besides) judging it, to drive a
/// client's fault handling: server errors (S1), resets, delays, GOAWAY, dropped connections and
/// changed stream limits. Schedule them with ``LocalAPNSServer/schedule(_:afterRequests:count:)``.
public enum LocalAPNSFault: Hashable, Sendable {
    /// Answers with this status and reason without judging (S1: 500 `InternalServerError`,
    /// 503 `ServiceUnavailable`, 503 `Shutdown`; or 429 `TooManyRequests`). Nothing is recorded.
    case respond(status: Int, reason: APNSErrorReason)
    /// Resets the stream with this code without judging: the request was not processed.
    case reset(ErrorCode)
    /// Judges and records the request, then answers after this long (on top of the server's
    /// `Listener.responseDelay`), held by the connection's I/O thread; answers
    /// still held when the server shuts down are dropped.
    case delay(Duration)
    /// Judges and answers the request, then sends GOAWAY with `{"reason":…}` as debug data; the
    /// last stream id is this request's, so later streams on the connection were not processed.
    case goAway(errorCode: ErrorCode, reason: APNSErrorReason)
    /// Closes the TCP connection without answering. With `processed`, the push is judged and
    /// recorded first (the answer is lost, as when APNs crashes after delivery); without, it is not.
    case dropConnection(processed: Bool)
    /// Judges and records the request, then the connection goes silent with its socket open: it
    /// reads nothing more, so it answers nothing, PINGs included (a peer that died without a FIN).
    case stall
    /// Announces a new `SETTINGS_MAX_CONCURRENT_STREAMS` on the request's connection, then judges
    /// it as usual.
    case maxConcurrentStreams(UInt32)

    /// An HTTP/2 error code (RFC 9113 §7) for a reset or a GOAWAY; any 32-bit value may be sent.
    public struct ErrorCode: Hashable, Sendable, CustomStringConvertible {
        /// The code on the wire.
        public let rawValue: UInt32

        /// The code `rawValue`.
        public init(_ rawValue: UInt32) { self.rawValue = rawValue }

        public static let noError = ErrorCode(0)
        public static let protocolError = ErrorCode(1)
        public static let internalError = ErrorCode(2)
        public static let flowControlError = ErrorCode(3)
        public static let settingsTimeout = ErrorCode(4)
        public static let streamClosed = ErrorCode(5)
        public static let frameSizeError = ErrorCode(6)
        public static let refusedStream = ErrorCode(7)
        public static let cancel = ErrorCode(8)
        public static let compressionError = ErrorCode(9)
        public static let connectError = ErrorCode(10)
        public static let enhanceYourCalm = ErrorCode(11)
        public static let inadequateSecurity = ErrorCode(12)
        public static let http11Required = ErrorCode(13)

        public var description: String { HTTP2ErrorCode(self.rawValue).description }
    }
}

/// Faults waiting for their requests, in the order they were scheduled.
struct FaultPlan {
    private struct Entry {
        var fault: LocalAPNSFault
        var skip: Int
        var remaining: Int
    }

    private var entries: [Entry] = []

    var isEmpty: Bool { self.entries.isEmpty }

    mutating func schedule(_ fault: LocalAPNSFault, afterRequests skip: Int, count: Int) {
        guard count > 0 else { return }
        self.entries.append(Entry(fault: fault, skip: max(0, skip), remaining: count))
    }

    /// The fault for the next request, if one is due; every entry still skipping counts it.
    mutating func next() -> LocalAPNSFault? {
        var due: LocalAPNSFault?
        var index = 0
        while index < self.entries.count {
            if self.entries[index].skip > 0 {
                self.entries[index].skip -= 1
            } else if due == nil {
                due = self.entries[index].fault
                self.entries[index].remaining -= 1
                if self.entries[index].remaining == 0 {
                    self.entries.remove(at: index)
                    continue
                }
            }
            index += 1
        }
        return due
    }

    mutating func removeAll() { self.entries.removeAll() }
}
