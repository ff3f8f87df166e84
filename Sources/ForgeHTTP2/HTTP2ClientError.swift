/// Why a request got no response. Every failed request gets exactly one such error, which says
/// whether the server may have processed it.
///
/// Errors compare equal when their ``code`` is equal.
package struct HTTP2ClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connectFailed, tlsFailed, alpnMismatch, goingAway, refusedStream, streamReset, connectionClosed,
                protocolError, deadlineExceeded, cancelled, peerUnresponsive, invalidRequest, shutdown
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The connection could not be made (name resolution, refused, unreachable), or the peer
        /// closed it before its HTTP/2 preface; see ``HTTP2ClientError/isPermanent`` for a name
        /// that does not resolve.
        package static let connectFailed = Code(.connectFailed)
        /// The TLS handshake failed (certificate, host name, protocol version); see
        /// ``HTTP2ClientError/isPermanent`` for a rejected certificate.
        package static let tlsFailed = Code(.tlsFailed)
        /// The peer did not select `h2` with ALPN.
        package static let alpnMismatch = Code(.alpnMismatch)
        /// The peer sent GOAWAY and this request's stream was above its last stream id, or had not
        /// started: never processed, safe to retry on another connection.
        package static let goingAway = Code(.goingAway)
        /// The peer refused the stream (REFUSED_STREAM): never processed, safe to retry.
        package static let refusedStream = Code(.refusedStream)
        /// The peer reset the stream with another error code.
        package static let streamReset = Code(.streamReset)
        /// The connection closed or failed before the response arrived.
        package static let connectionClosed = Code(.connectionClosed)
        /// The peer broke the HTTP/2 protocol.
        package static let protocolError = Code(.protocolError)
        /// The request's deadline passed first; its stream was reset.
        package static let deadlineExceeded = Code(.deadlineExceeded)
        /// The calling task was cancelled; the stream was reset.
        package static let cancelled = Code(.cancelled)
        /// The peer stopped answering PING.
        package static let peerUnresponsive = Code(.peerUnresponsive)
        /// The request cannot be sent as given (for example a header value with CR or LF).
        package static let invalidRequest = Code(.invalidRequest)
        /// The connection was shut down by its owner.
        package static let shutdown = Code(.shutdown)

        package var description: String { self.base.rawValue }
    }

    /// What failed.
    package var code: Code
    /// Whether the peer may have processed the request: `false` means it certainly did not, so a
    /// retry cannot deliver twice.
    package var mayHaveBeenProcessed: Bool
    /// The HTTP/2 error code of a reset or GOAWAY, if any.
    package var http2ErrorCode: HTTP2ErrorCode?
    /// GOAWAY debug data (APNs puts a JSON reason there), or other detail.
    package var detail: String

    /// Creates an error.
    /// - Parameter permanent: whether it cannot heal within a run (see ``isPermanent``).
    package init(_ code: Code, mayHaveBeenProcessed: Bool, http2ErrorCode: HTTP2ErrorCode? = nil, detail: String = "", permanent: Bool = false) {
        self.cannotHeal = permanent
        self.code = code
        self.mayHaveBeenProcessed = mayHaveBeenProcessed
        self.http2ErrorCode = http2ErrorCode
        self.detail = detail
    }

    /// Whether retrying on another connection cannot deliver the request twice.
    package var isSafeToRetry: Bool { !self.mayHaveBeenProcessed }

    /// Whether the failure cannot heal by trying again within a run, so a retry only wastes time:
    /// the host name does not resolve (not a temporary resolver failure), or the server's
    /// certificate was rejected (unknown CA, host name mismatch, expired), or a loopback-only
    /// insecure mode was asked to reach another host. Never true for a request that may have been
    /// processed.
    package var isPermanent: Bool { self.cannotHeal && !self.mayHaveBeenProcessed }

    /// Set where the failure is made, from the underlying error (never parsed back from text).
    private var cannotHeal = false

    package var description: String {
        var text = "\(self.code)"
        if let http2ErrorCode { text += " (\(http2ErrorCode))" }
        if !self.detail.isEmpty { text += ": \(self.detail)" }
        text += self.mayHaveBeenProcessed ? "; may have been processed" : "; not processed"
        return text
    }

    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
}
