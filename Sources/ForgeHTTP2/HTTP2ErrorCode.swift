/// HTTP/2 error codes (RFC 9113 §7), kept open for codes this library does not name.
package struct HTTP2ErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// The wire value.
    package let rawValue: UInt32

    /// Wraps a wire value.
    package init(_ rawValue: UInt32) { self.rawValue = rawValue }

    package static let noError = HTTP2ErrorCode(0)
    package static let protocolError = HTTP2ErrorCode(1)
    package static let internalError = HTTP2ErrorCode(2)
    package static let flowControlError = HTTP2ErrorCode(3)
    package static let settingsTimeout = HTTP2ErrorCode(4)
    package static let streamClosed = HTTP2ErrorCode(5)
    package static let frameSizeError = HTTP2ErrorCode(6)
    package static let refusedStream = HTTP2ErrorCode(7)
    package static let cancel = HTTP2ErrorCode(8)
    package static let compressionError = HTTP2ErrorCode(9)
    package static let connectError = HTTP2ErrorCode(10)
    package static let enhanceYourCalm = HTTP2ErrorCode(11)
    package static let inadequateSecurity = HTTP2ErrorCode(12)
    package static let http11Required = HTTP2ErrorCode(13)

    package var description: String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
            "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        return self.rawValue < names.count ? names[Int(self.rawValue)] : "0x\(String(self.rawValue, radix: 16))"
    }
}
