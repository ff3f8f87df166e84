/// HTTP/2 error codes (RFC 9113 §7), kept open for codes this library does not name.
public struct HTTP2ErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// The wire value.
    public let rawValue: UInt32

    /// Wraps a wire value.
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    public static let noError = HTTP2ErrorCode(0)
    public static let protocolError = HTTP2ErrorCode(1)
    public static let internalError = HTTP2ErrorCode(2)
    public static let flowControlError = HTTP2ErrorCode(3)
    public static let settingsTimeout = HTTP2ErrorCode(4)
    public static let streamClosed = HTTP2ErrorCode(5)
    public static let frameSizeError = HTTP2ErrorCode(6)
    public static let refusedStream = HTTP2ErrorCode(7)
    public static let cancel = HTTP2ErrorCode(8)
    public static let compressionError = HTTP2ErrorCode(9)
    public static let connectError = HTTP2ErrorCode(10)
    public static let enhanceYourCalm = HTTP2ErrorCode(11)
    public static let inadequateSecurity = HTTP2ErrorCode(12)
    public static let http11Required = HTTP2ErrorCode(13)

    public var description: String {
        let names = [
            "NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED",
            "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
        ]
        return self.rawValue < names.count ? names[Int(self.rawValue)] : "0x\(String(self.rawValue, radix: 16))"
    }
}
