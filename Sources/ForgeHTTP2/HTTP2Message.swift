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
    public var name: String { didSet { self.isChecked = false } }
    /// The value.
    public var value: String { didSet { self.isChecked = false } }
    /// The HPACK treatment.
    public var indexing: Indexing

    /// Set by ``checked()``: the name and value passed the rules below, so sending skips them.
    private(set) var isChecked = false

    /// Creates a field.
    public init(_ name: String, _ value: String, indexing: Indexing = .indexable) {
        self.name = name
        self.value = value
        self.indexing = indexing
    }

    public var description: String { "\(self.name): \(self.value)" }

    /// The field, checked once against what a peer accepts (a non-empty lower-case token name, not
    /// connection-specific; no CR, LF or NUL in the value), so the many requests that reuse it
    /// are not checked again byte by byte. Changing the name or value undoes it.
    /// - Throws: ``HTTP2ClientError`` of code `invalidRequest`, naming the field.
    public func checked() throws(HTTP2ClientError) -> HTTP2HeaderField {
        let badName = self.name.utf8.isEmpty || self.name.utf8.contains(where: HeaderRules.isBadNameByte)
        if badName || HeaderRules.isConnectionSpecific(self.name) {
            throw HTTP2ClientError(.invalidRequest, mayHaveBeenProcessed: false,
                                   detail: "header name '\(self.name)' is not allowed in HTTP/2")
        }
        var badValue = false
        for byte in self.value.utf8 where HeaderRules.isBadValueByte(byte) { badValue = true }
        if badValue {
            throw HTTP2ClientError(.invalidRequest, mayHaveBeenProcessed: false,
                                   detail: "the value of header '\(self.name)' contains CR, LF or NUL")
        }
        var field = self
        field.isChecked = true
        return field
    }

    public static func == (lhs: HTTP2HeaderField, rhs: HTTP2HeaderField) -> Bool {
        lhs.name == rhs.name && lhs.value == rhs.value && lhs.indexing == rhs.indexing
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.name)
        hasher.combine(self.value)
        hasher.combine(self.indexing)
    }
}

/// A request: pseudo-headers, headers and a body.
public struct HTTP2Request: Hashable, Sendable {
    /// What requests built alike share (a bulk send's, or the sends of one notification): one
    /// object, so that making a request retains one reference where separate fields retained six,
    /// and the I/O thread releases one.
    package private(set) var parts: Parts
    /// `:path` in two parts, sent one after the other: requests that share their parts differ in
    /// the suffix (a device token), so building each request joins no strings.
    package private(set) var pathSuffix: String
    /// One more header after ``headers``, a push's own (its `apns-id`): requests that share the rest
    /// share one array of them.
    package var pushHeader: HTTP2UUIDHeader?

    /// `:method`.
    public var method: String {
        get { self.parts.method }
        set { self.parts = self.parts.with(method: newValue) }
    }
    /// `:scheme`.
    public var scheme: String {
        get { self.parts.scheme }
        set { self.parts = self.parts.with(scheme: newValue) }
    }
    /// `:authority`.
    public var authority: String {
        get { self.parts.authority }
        set { self.parts = self.parts.with(authority: newValue) }
    }
    /// `:path` (sent never-indexed, as APNs asks).
    public var path: String {
        get { self.pathSuffix.isEmpty ? self.parts.pathPrefix : self.parts.pathPrefix + self.pathSuffix }
        set {
            self.parts = self.parts.with(pathPrefix: newValue)
            self.pathSuffix = ""
        }
    }
    /// The regular headers, in order.
    public var headers: [HTTP2HeaderField] {
        get { self.parts.headers }
        set { self.parts = self.parts.with(headers: newValue) }
    }
    /// The body.
    public var body: [UInt8] {
        get { self.parts.body }
        set { self.parts = self.parts.with(body: newValue) }
    }

    /// Creates a request.
    public init(
        method: String = "POST",
        scheme: String = "https",
        authority: String,
        path: String,
        headers: [HTTP2HeaderField] = [],
        body: [UInt8] = []
    ) {
        self.init(parts: Parts(method: method, scheme: scheme, authority: authority, pathPrefix: path, headers: headers, body: body),
                  pathSuffix: "")
    }

    /// Creates a request whose `:path` is `pathPrefix` followed by `pathSuffix`, without joining them.
    package init(
        method: String = "POST",
        scheme: String = "https",
        authority: String,
        pathPrefix: String,
        pathSuffix: String,
        headers: [HTTP2HeaderField] = [],
        body: [UInt8] = []
    ) {
        self.init(parts: Parts(method: method, scheme: scheme, authority: authority, pathPrefix: pathPrefix, headers: headers, body: body),
                  pathSuffix: pathSuffix)
    }

    /// A request made of shared `parts`, its `:path` ending in `pathSuffix`.
    package init(parts: Parts, pathSuffix: String) {
        self.parts = parts
        self.pathSuffix = pathSuffix
    }

    /// The parts of a request that many requests can share, immutable, with the header block
    /// nghttp2 is given laid out once.
    ///
    /// The fields before `:path` (method, scheme, authority) and after it (the headers) sit back
    /// to back in one byte array, each checked once here against what a peer accepts (fields that
    /// ``HTTP2HeaderField/checked()`` passed are not checked again): a request's HEADERS then point
    /// nghttp2 at them, with nothing copied or checked per request but its `:path`. A field that
    /// breaks a rule leaves the block empty and ``invalid`` saying why: every request made of these
    /// parts fails with it, unsent.
    package final class Parts: Sendable {
        package let method: String
        package let scheme: String
        package let authority: String
        package let pathPrefix: String
        package let headers: [HTTP2HeaderField]
        package let body: [UInt8]
        /// Names and values back to back: `:method`, `:scheme`, `:authority`, then the headers.
        let block: [UInt8]
        /// Where each field of `block` is, in order (the first three before `:path`).
        let fields: [BlockField]
        /// Why a field breaks a rule, if one does.
        let invalid: String?

        struct BlockField {
            var nameStart: Int
            var nameLength: Int
            var valueLength: Int
            var neverIndexed: Bool
        }

        package init(method: String, scheme: String, authority: String, pathPrefix: String, headers: [HTTP2HeaderField], body: [UInt8]) {
            self.method = method
            self.scheme = scheme
            self.authority = authority
            self.pathPrefix = pathPrefix
            self.headers = headers
            self.body = body
            var block: [UInt8] = []
            var fields: [BlockField] = []
            fields.reserveCapacity(3 + headers.count)
            var invalid: String?
            func append(_ name: String, _ value: String, neverIndexed: Bool) {
                fields.append(BlockField(nameStart: block.count, nameLength: name.utf8.count, valueLength: value.utf8.count,
                                         neverIndexed: neverIndexed))
                block.append(contentsOf: name.utf8)
                block.append(contentsOf: value.utf8)
            }
            // The pseudo-headers' names are fixed; their values follow the rule of any value.
            for (name, value) in [(":method", method), (":scheme", scheme), (":authority", authority)] {
                if value.utf8.contains(where: HeaderRules.isBadValueByte) {
                    invalid = invalid ?? "the value of header '\(name)' contains CR, LF or NUL"
                }
                append(name, value, neverIndexed: false)
            }
            for field in headers where invalid == nil {
                // The rules of `checked()`, for fields that did not pass it already.
                if !field.isChecked {
                    do throws(HTTP2ClientError) {
                        _ = try field.checked()
                    } catch {
                        invalid = error.detail
                        break
                    }
                }
                append(field.name, field.value, neverIndexed: field.indexing == .neverIndexed)
            }
            self.invalid = invalid
            self.block = invalid == nil ? block : []
            self.fields = invalid == nil ? fields : []
        }

        /// Whether requests with these fields can share this object.
        package func matches(method: String, pathPrefix: String, body: [UInt8]) -> Bool {
            self.method == method && self.pathPrefix == pathPrefix && self.body == body
        }

        func with(
            method: String? = nil, scheme: String? = nil, authority: String? = nil, pathPrefix: String? = nil,
            headers: [HTTP2HeaderField]? = nil, body: [UInt8]? = nil
        ) -> Parts {
            Parts(method: method ?? self.method, scheme: scheme ?? self.scheme, authority: authority ?? self.authority,
                  pathPrefix: pathPrefix ?? self.pathPrefix, headers: headers ?? self.headers, body: body ?? self.body)
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.method == rhs.method && lhs.scheme == rhs.scheme && lhs.authority == rhs.authority && lhs.path == rhs.path
            && lhs.headers == rhs.headers && lhs.pushHeader == rhs.pushHeader && lhs.body == rhs.body
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.method)
        hasher.combine(self.scheme)
        hasher.combine(self.authority)
        hasher.combine(self.path)
        hasher.combine(self.headers)
        hasher.combine(self.body)
    }
}

/// A response: the status, the headers and the body.
///
/// Headers a client receives are kept as the bytes nghttp2 delivered and turned into strings only
/// when read: a bulk sender reads one or two of them (`apns-id`), not all.
public struct HTTP2Response: Hashable, Sendable {
    /// `:status`.
    public var status: Int
    /// The body.
    public var body: [UInt8]
    private var storage: HeaderStorage

    /// Creates a response.
    public init(status: Int, headers: [HTTP2HeaderField] = [], body: [UInt8] = []) {
        self.status = status
        self.body = body
        self.storage = .fields(headers)
    }

    init(status: Int, rawHeaders: RawHeaders, body: [UInt8]) {
        self.status = status
        self.body = body
        self.storage = .raw(rawHeaders)
    }

    /// The regular headers, in order.
    public var headers: [HTTP2HeaderField] {
        get {
            switch self.storage {
            case .fields(let fields): return fields
            case .raw(let raw): return raw.fields()
            }
        }
        set { self.storage = .fields(newValue) }
    }

    /// The value of the first header called `name` (lower case).
    public subscript(header name: String) -> String? {
        switch self.storage {
        case .fields(let fields): return fields.first(where: { $0.name == name })?.value
        case .raw(let raw): return raw.value(of: name)
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.status == rhs.status && lhs.body == rhs.body && lhs.headers == rhs.headers
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.status)
        hasher.combine(self.body)
        hasher.combine(self.headers)
    }

    private enum HeaderStorage: Sendable {
        case fields([HTTP2HeaderField])
        case raw(RawHeaders)
    }
}

/// Header names and values as received, in one buffer: for each header a 2-byte name length, a
/// 4-byte value length (big-endian), the name, the value.
///
/// A short list (an APNs answer's `apns-id` and `apns-unique-id`, with a `content-type` on an
/// error) is kept inline, a longer one in an array. The I/O thread fills it and the caller's thread
/// drops it: an array here was one allocation per response freed by another thread, into the I/O
/// thread's malloc arena under its lock.
struct RawHeaders: Sendable {
    static let inlineCapacity = 160
    private var inline = InlineArray<160, UInt8>(repeating: 0)
    private var inlineCount = 0
    private var spilled: [UInt8]?

    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameCount = min(name.count, Int(UInt16.max))
        let valueCount = min(value.count, Int(UInt32.max))
        let lengths = (
            UInt8(truncatingIfNeeded: nameCount >> 8), UInt8(truncatingIfNeeded: nameCount),
            UInt8(truncatingIfNeeded: valueCount >> 24), UInt8(truncatingIfNeeded: valueCount >> 16),
            UInt8(truncatingIfNeeded: valueCount >> 8), UInt8(truncatingIfNeeded: valueCount)
        )
        let name = UnsafeBufferPointer(rebasing: name[0..<nameCount])
        let value = UnsafeBufferPointer(rebasing: value[0..<valueCount])
        if self.spilled == nil, self.inlineCount + 6 + nameCount + valueCount <= Self.inlineCapacity {
            let start = self.inlineCount
            withUnsafeMutableBytes(of: &self.inline) { inline in
                withUnsafeBytes(of: lengths) { inline.baseAddress!.advanced(by: start).copyMemory(from: $0.baseAddress!, byteCount: 6) }
                if nameCount > 0 { inline.baseAddress!.advanced(by: start + 6).copyMemory(from: name.baseAddress!, byteCount: nameCount) }
                if valueCount > 0 {
                    inline.baseAddress!.advanced(by: start + 6 + nameCount).copyMemory(from: value.baseAddress!, byteCount: valueCount)
                }
            }
            self.inlineCount += 6 + nameCount + valueCount
            return
        }
        if self.spilled == nil {
            var spilled: [UInt8] = []
            spilled.reserveCapacity(2 * Self.inlineCapacity)
            self.withBytes { spilled.append(contentsOf: $0) }
            self.spilled = spilled
        }
        withUnsafeBytes(of: lengths) { self.spilled!.append(contentsOf: $0) }
        self.spilled!.append(contentsOf: name)
        self.spilled!.append(contentsOf: value)
    }

    /// Whether the headers are kept inline (no allocation).
    var isInline: Bool { self.spilled == nil }

    /// Runs `body` with the encoded headers.
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let spilled = self.spilled { return spilled.withUnsafeBufferPointer(body) }
        return withUnsafeBytes(of: self.inline) { raw in
            body(UnsafeBufferPointer(rebasing: raw.assumingMemoryBound(to: UInt8.self)[0..<self.inlineCount]))
        }
    }

    /// Calls `body` with each header's name and value bytes until it returns `false`.
    private func forEach(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool) {
        self.withBytes { bytes in
            var index = 0
            while index + 6 <= bytes.count {
                let nameCount = Int(bytes[index]) << 8 | Int(bytes[index + 1])
                let valueCount = Int(bytes[index + 2]) << 24 | Int(bytes[index + 3]) << 16
                    | Int(bytes[index + 4]) << 8 | Int(bytes[index + 5])
                let nameStart = index + 6
                let valueStart = nameStart + nameCount
                index = valueStart + valueCount
                guard index <= bytes.count else { return }
                if !body(UnsafeBufferPointer(rebasing: bytes[nameStart..<valueStart]), UnsafeBufferPointer(rebasing: bytes[valueStart..<index])) {
                    return
                }
            }
        }
    }

    func fields() -> [HTTP2HeaderField] {
        var fields: [HTTP2HeaderField] = []
        self.forEach { name, value in
            fields.append(HTTP2HeaderField(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            return true
        }
        return fields
    }

    /// The first value of `name` (lower-case), found without allocating anything but the result.
    func value(of name: String) -> String? {
        var name = name
        return name.withUTF8 { wanted in
            var found: String?
            self.forEach { headerName, value in
                guard headerName.count == wanted.count, headerName.elementsEqual(wanted) else { return true }
                found = String(decoding: value, as: UTF8.self)
                return false
            }
            return found
        }
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

/// A header whose value is a UUID, written in its canonical lower-case form (8-4-4-4-12) straight
/// into the request's header block, no string made for it: a push's own `apns-id`, one per push.
/// Never indexed: a value new on every push would only push the repeating fields out of both HPACK
/// tables.
package struct HTTP2UUIDHeader: Hashable, Sendable {
    /// The name, lower case.
    package var name: StaticString
    /// The UUID's 16 bytes, big-endian: the first 8 and the last 8.
    package var high: UInt64
    package var low: UInt64

    /// The bytes of a UUID (`uuid_t`, or `UUID.uuid`), in order.
    package init(_ name: StaticString, bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)) {
        self.name = name
        var high: UInt64 = 0
        var low: UInt64 = 0
        withUnsafeBytes(of: bytes) { raw in
            for index in 0..<8 { high = high << 8 | UInt64(raw[index]) }
            for index in 8..<16 { low = low << 8 | UInt64(raw[index]) }
        }
        self.high = high
        self.low = low
    }

    /// The value's length: 32 hex digits and 4 dashes.
    static let valueLength = 36

    /// Writes the value into `text` (at least ``valueLength`` bytes): 8-4-4-4-12 hex digits, each
    /// group written from its end, without a branch per digit (a campaign writes one per push).
    func writeValue(into text: UnsafeMutablePointer<UInt8>) {
        Self.writeHex(self.high >> 32, digits: 8, into: text)
        text[8] = UInt8(ascii: "-")
        Self.writeHex(self.high >> 16, digits: 4, into: text + 9)
        text[13] = UInt8(ascii: "-")
        Self.writeHex(self.high, digits: 4, into: text + 14)
        text[18] = UInt8(ascii: "-")
        Self.writeHex(self.low >> 48, digits: 4, into: text + 19)
        text[23] = UInt8(ascii: "-")
        Self.writeHex(self.low, digits: 12, into: text + 24)
    }

    /// The low `digits` nibbles of `value` as lower-case hex, most significant first.
    @inline(__always)
    private static func writeHex(_ value: UInt64, digits: Int, into text: UnsafeMutablePointer<UInt8>) {
        var value = value
        for position in stride(from: digits - 1, through: 0, by: -1) {
            let nibble = UInt8(truncatingIfNeeded: value & 0x0F)
            // 0-9 → "0"-"9", 10-15 → "a"-"f": 39 more past 9 (the mask is 0xFF then, else 0).
            text[position] = nibble &+ 48 &+ (39 & (0 &- ((nibble &+ 6) >> 4)))
            value >>= 4
        }
    }

    /// The value as text, for messages and tests.
    package var value: String {
        String(unsafeUninitializedCapacity: Self.valueLength) { text in
            self.writeValue(into: text.baseAddress!)
            return Self.valueLength
        }
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.name.description == rhs.name.description && lhs.high == rhs.high && lhs.low == rhs.low
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.name.description)
        hasher.combine(self.high)
        hasher.combine(self.low)
    }
}
