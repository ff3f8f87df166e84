/// One HTTP/2 header field, sent as given (names must be lower case).
public struct HTTP2HeaderField: Hashable, Sendable, CustomStringConvertible {
    /// How HPACK may store the field.
    public enum Indexing: Hashable, Sendable {
        /// May enter the dynamic table (the default).
        case indexable
        /// Sent as a literal that is never indexed, by this hop or the next (`:path`, secrets).
        case neverIndexed
    }

    /// The name, lower case.
    public var name: String
    /// The value.
    public var value: String
    /// The HPACK treatment.
    public var indexing: Indexing

    /// Creates a field.
    public init(_ name: String, _ value: String, indexing: Indexing = .indexable) {
        self.name = name
        self.value = value
        self.indexing = indexing
    }

    public var description: String { "\(self.name): \(self.value)" }
}

/// A request: pseudo-headers, headers and a body.
public struct HTTP2Request: Hashable, Sendable {
    /// `:method`.
    public var method: String
    /// `:scheme`.
    public var scheme: String
    /// `:authority`.
    public var authority: String
    /// `:path` (sent never-indexed, as APNs asks).
    public var path: String
    /// The regular headers, in order.
    public var headers: [HTTP2HeaderField]
    /// The body.
    public var body: [UInt8]

    /// Creates a request.
    public init(
        method: String = "POST",
        scheme: String = "https",
        authority: String,
        path: String,
        headers: [HTTP2HeaderField] = [],
        body: [UInt8] = []
    ) {
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// A response: the status, the headers and the body.
public struct HTTP2Response: Hashable, Sendable {
    /// `:status`.
    public var status: Int
    /// The regular headers, in order.
    public var headers: [HTTP2HeaderField]
    /// The body.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [HTTP2HeaderField] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the first header called `name` (lower case).
    public subscript(header name: String) -> String? {
        self.headers.first(where: { $0.name == name })?.value
    }
}

/// Connection-level HTTP/2 settings a side announces.
public struct HTTP2Settings: Hashable, Sendable {
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`; `nil` announces none (unlimited).
    public var maxConcurrentStreams: UInt32?
    /// `SETTINGS_INITIAL_WINDOW_SIZE`.
    public var initialWindowSize: UInt32
    /// `SETTINGS_MAX_FRAME_SIZE`.
    public var maxFrameSize: UInt32
    /// `SETTINGS_HEADER_TABLE_SIZE`.
    public var headerTableSize: UInt32
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`; `nil` announces none.
    public var maxHeaderListSize: UInt32?

    /// HTTP/2's defaults, with no stream limit announced.
    public init(
        maxConcurrentStreams: UInt32? = nil,
        initialWindowSize: UInt32 = 65_535,
        maxFrameSize: UInt32 = 16_384,
        headerTableSize: UInt32 = 4_096,
        maxHeaderListSize: UInt32? = nil
    ) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.initialWindowSize = initialWindowSize
        self.maxFrameSize = maxFrameSize
        self.headerTableSize = headerTableSize
        self.maxHeaderListSize = maxHeaderListSize
    }
}

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
