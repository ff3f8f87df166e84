internal import CForgeNGHTTP2

/// A frame the peer sent that the owner of a session reacts to.
enum NGHTTP2Frame {
    case headers(streamID: Int32, endStream: Bool)
    case data(streamID: Int32, endStream: Bool)
    case settings(isAck: Bool)
    case ping(isAck: Bool, payload: UInt64)
    case goAway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: [UInt8])
    case rstStream(streamID: Int32, errorCode: HTTP2ErrorCode)
    case other
}

/// What a session tells its owner while it parses input. Called on the owner's thread, from inside
/// ``NGHTTP2Session/receive(_:)`` or ``NGHTTP2Session/drainOutput(into:limit:)``.
protocol NGHTTP2SessionDelegate: AnyObject {
    func session(_ session: NGHTTP2Session, didBeginHeadersOn streamID: Int32)
    func session(_ session: NGHTTP2Session, didReceiveHeader name: UnsafeBufferPointer<UInt8>,
                 value: UnsafeBufferPointer<UInt8>, neverIndexed: Bool, on streamID: Int32)
    func session(_ session: NGHTTP2Session, didReceiveData data: UnsafeRawBufferPointer, on streamID: Int32)
    func session(_ session: NGHTTP2Session, didReceive frame: NGHTTP2Frame)
    func session(_ session: NGHTTP2Session, didCloseStream streamID: Int32, errorCode: HTTP2ErrorCode)
    /// A HEADERS or DATA frame could not be sent (the stream was refused or the session is going away).
    func session(_ session: NGHTTP2Session, didFailToSendOn streamID: Int32, error: Int32)
}

/// A failure of the HTTP/2 framing layer itself: the connection cannot go on.
struct NGHTTP2SessionError: Error, CustomStringConvertible {
    var code: Int32
    var operation: String
    var description: String { "nghttp2 \(self.operation) failed: \(String(cString: nghttp2_strerror(self.code)))" }
}

/// One `nghttp2_session`, driven without I/O: bytes in with ``receive(_:)``, bytes out with
/// ``drainOutput(into:limit:)``.
///
/// Not thread-safe: nghttp2 sessions may be used from one thread only, so a session belongs to
/// one connection's I/O thread (or to a test) and is never `Sendable`.
final class NGHTTP2Session {
    enum Role { case client, server }

    private var session: OpaquePointer!
    /// The owner, by its concrete type and unretained: it keeps this session alive.
    let owner: Owner
    let role: Role
    /// Where nghttp2 allocates; released after the session (stored properties outlive `deinit`'s body).
    let allocator = SessionAllocator()
    /// Request and response bodies being sent, by stream, kept alive until the stream closes.
    // Touched once or twice per request, by the session's thread only, never while another access
    // is open: no runtime exclusivity check (as for HTTP2ClientCore's stream table).
    @exclusivity(unchecked) private var bodies = StreamTable<BodySource>()

    /// Creates a session and queues its connection preface and SETTINGS.
    ///
    /// - Parameters:
    ///   - initialPeerMaxConcurrentStreams: the stream limit assumed until the peer's SETTINGS arrive
    ///     (APNs allows 1 on a new token connection).
    ///   - answersPings: whether nghttp2 answers PING itself; the test server turns it off to answer
    ///     late or never.
    init(
        role: Role,
        settings: HTTP2Settings,
        initialPeerMaxConcurrentStreams: UInt32 = 100,
        answersPings: Bool = true,
        owner: Owner
    ) throws {
        self.role = role
        self.owner = owner
        var callbacks: OpaquePointer? = nil
        var option: OpaquePointer? = nil
        guard nghttp2_session_callbacks_new(&callbacks) == 0, nghttp2_option_new(&option) == 0,
            let callbacks, let option
        else {
            throw NGHTTP2SessionError(code: NGHTTP2_ERR_NOMEM.rawValue, operation: "session setup")
        }
        defer {
            nghttp2_session_callbacks_del(callbacks)
            nghttp2_option_del(option)
        }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, onFrameNotSent)
        nghttp2_option_set_peer_max_concurrent_streams(option, initialPeerMaxConcurrentStreams)
        nghttp2_option_set_no_auto_ping_ack(option, answersPings ? 0 : 1)

        var created: OpaquePointer? = nil
        let userData = Unmanaged.passUnretained(self).toOpaque()
        var memory = self.allocator.nghttp2Memory
        let result: Int32
        switch role {
        case .client: result = nghttp2_session_client_new3(&created, callbacks, userData, option, &memory)
        case .server: result = nghttp2_session_server_new3(&created, callbacks, userData, option, &memory)
        }
        guard result == 0, let created else { throw NGHTTP2SessionError(code: result, operation: "session_new") }
        self.session = created
        try self.submitSettings(settings)
    }

    /// The two owners a session has. Kept by concrete type so that a callback reaches its owner
    /// with no retain and release: through an `unowned(unsafe)` existential each callback paid a
    /// pair, five to seven pairs a response.
    enum Owner {
        case client(Unmanaged<HTTP2ClientCore>)
        case server(Unmanaged<HTTP2ServerCore>)

        static func client(_ core: HTTP2ClientCore) -> Owner { .client(Unmanaged.passUnretained(core)) }
        static func server(_ core: HTTP2ServerCore) -> Owner { .server(Unmanaged.passUnretained(core)) }
    }

    /// Runs `body` with the owner, borrowed: the owner outlives every call its session makes.
    @inline(__always)
    func withDelegate<Result>(_ body: (any NGHTTP2SessionDelegate) -> Result) -> Result {
        switch self.owner {
        case .client(let core): core._withUnsafeGuaranteedRef { body($0) }
        case .server(let core): core._withUnsafeGuaranteedRef { body($0) }
        }
    }

    deinit {
        // Streams still open get no on_stream_close from nghttp2_session_del; the owner fails them
        // itself before letting go of the session (nghttp2's API reference, nghttp2_session_del).
        nghttp2_session_del(self.session)
    }

    // MARK: Input and output

    /// Feeds bytes read from the peer. Callbacks run during the call.
    /// - Throws: ``NGHTTP2SessionError`` for a protocol violation that ends the connection.
    func receive(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let consumed = nghttp2_session_mem_recv(self.session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        guard consumed >= 0 else { throw NGHTTP2SessionError(code: Int32(consumed), operation: "mem_recv") }
    }

    /// Appends the frames ready to send to `buffer`, up to about `limit` bytes.
    /// - Returns: whether anything was appended.
    @discardableResult
    func drainOutput(into buffer: inout [UInt8], limit: Int = 64 * 1024) throws -> Bool {
        var wrote = false
        while buffer.count < limit {
            var chunk: UnsafePointer<UInt8>? = nil
            let count = nghttp2_session_mem_send(self.session, &chunk)
            guard count >= 0 else { throw NGHTTP2SessionError(code: Int32(count), operation: "mem_send") }
            guard count > 0, let chunk else { break }
            buffer.append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
            wrote = true
        }
        return wrote
    }

    /// Whether the session still wants to read (false after GOAWAY both ways, or a fatal error).
    var wantsRead: Bool { nghttp2_session_want_read(self.session) != 0 }
    /// Whether the session has frames to write.
    var wantsWrite: Bool { nghttp2_session_want_write(self.session) != 0 }

    /// The peer's `SETTINGS_MAX_CONCURRENT_STREAMS` (or the initial assumption before its SETTINGS arrive).
    var peerMaxConcurrentStreams: UInt32 {
        nghttp2_session_get_remote_settings(self.session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    }

    /// The highest stream id the peer has processed (for GOAWAY).
    var lastProcessedStreamID: Int32 { nghttp2_session_get_last_proc_stream_id(self.session) }

    // MARK: Submitting

    /// Queues a request. The stream id is assigned now; HEADERS go out on the next drain.
    ///
    /// Header names and values are checked while they are copied into one stack buffer (no heap
    /// allocation per request): nghttp2 does not validate the header fields it is given to send
    /// (nghttp2's API reference, nghttp2_submit_request), and the peer would reset the stream.
    /// - Returns: the stream id.
    /// - Throws: ``HeaderError`` for a header the peer would refuse, ``NGHTTP2SessionError`` otherwise.
    func submitRequest(_ request: HTTP2Request) throws -> Int32 {
        let source = request.body.isEmpty ? nil : self.bodySource(request.body)
        let streamID: Int32
        do {
            streamID = try self.submit(request, source: source)
        } catch {
            if let source { self.recycle(source) }
            throw error
        }
        guard streamID > 0 else {
            if let source { self.recycle(source) }
            throw NGHTTP2SessionError(code: streamID, operation: "submit_request")
        }
        if let source { self.bodies.insert(source, for: streamID) }
        return streamID
    }

    private func submit(_ request: HTTP2Request, source: BodySource?) throws -> Int32 {
        let parts = request.parts
        if let invalid = parts.invalid { throw HeaderError(description: invalid) }
        // Only `:path` and a push's own header are written here; the other fields point into the
        // parts' block, checked when the parts were made (nghttp2 copies them all before returning).
        var byteCount = 5 + parts.pathPrefix.utf8.count + request.pathSuffix.utf8.count
        if let field = request.pushHeader { byteCount += field.name.utf8CodeUnitCount + HTTP2UUIDHeader.valueLength }
        let fieldCount = parts.fields.count + 1 + (request.pushHeader == nil ? 0 : 1)
        return try parts.block.withUnsafeBufferPointer { block in
            try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: byteCount) { storage in
                try withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: fieldCount) { nva in
                    var writer = NVWriter(storage: storage, nva: nva)
                    let fields = parts.fields
                    // :method, :scheme, :authority, then :path, then the headers.
                    for index in 0..<min(3, fields.count) { writer.add(fields[index], in: block) }
                    try writer.addPath(parts.pathPrefix, request.pathSuffix)
                    for index in min(3, fields.count)..<fields.count { writer.add(fields[index], in: block) }
                    if let field = request.pushHeader { writer.add(field) }
                    guard let source else {
                        return nghttp2_submit_request(self.session, nil, nva.baseAddress, writer.count, nil, nil)
                    }
                    var provider = nghttp2_data_provider(
                        source: nghttp2_data_source(ptr: Unmanaged.passUnretained(source).toOpaque()),
                        read_callback: readBody
                    )
                    return nghttp2_submit_request(self.session, nil, nva.baseAddress, writer.count, &provider, nil)
                }
            }
        }
    }

    /// Body sources of closed streams, reused: a bulk send would otherwise allocate one per request.
    /// Up to ``maximumSpareBodySources``: a read of many responses frees as many sources as the
    /// requests that follow it take (up to the stream limit, 1000 at APNs), and with 256 kept a
    /// third to a half of a bulk's requests at 30 ms allocated a new one.
    @exclusivity(unchecked) private var spareBodySources: [BodySource] = []
    static let maximumSpareBodySources = 1024

    private func bodySource(_ bytes: [UInt8]) -> BodySource {
        guard let source = self.spareBodySources.popLast() else { return BodySource(bytes) }
        source.bytes = bytes
        return source
    }

    private func recycle(_ source: BodySource) {
        guard self.spareBodySources.count < Self.maximumSpareBodySources else { return }
        source.bytes = []
        source.offset = 0
        self.spareBodySources.append(source)
    }

    /// Queues a response on `streamID`, its headers copied and checked as for requests.
    func submitResponse(_ response: HTTP2Response, on streamID: Int32) throws {
        let status = String(response.status)
        let headers = response.headers
        var byteCount = 7 + status.utf8.count
        for field in headers { byteCount += field.name.utf8.count + field.value.utf8.count }
        let source = response.body.isEmpty ? nil : self.bodySource(response.body)
        let result: Int32 = try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: byteCount) { storage in
            try withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: 1 + headers.count) { nva in
                var writer = NVWriter(storage: storage, nva: nva)
                try writer.add(":status", status, neverIndexed: false)
                for field in headers {
                    try writer.add(field.name, field.value, neverIndexed: field.indexing == .neverIndexed, checkName: true)
                }
                guard let source else {
                    return nghttp2_submit_response(self.session, streamID, nva.baseAddress, writer.count, nil)
                }
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: Unmanaged.passUnretained(source).toOpaque()),
                    read_callback: readBody
                )
                return nghttp2_submit_response(self.session, streamID, nva.baseAddress, writer.count, &provider)
            }
        }
        guard result == 0 else {
            if let source { self.recycle(source) }
            throw NGHTTP2SessionError(code: result, operation: "submit_response")
        }
        if let source { self.bodies.insert(source, for: streamID) }
    }

    /// Queues SETTINGS.
    func submitSettings(_ settings: HTTP2Settings) throws {
        var entries: [nghttp2_settings_entry] = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_HEADER_TABLE_SIZE.rawValue), value: settings.headerTableSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: settings.initialWindowSize),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_FRAME_SIZE.rawValue), value: settings.maxFrameSize),
        ]
        if let streams = settings.maxConcurrentStreams {
            entries.append(nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: streams))
        }
        if let size = settings.maxHeaderListSize {
            entries.append(nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: size))
        }
        if self.role == .client {
            entries.append(nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0))
        }
        let result = nghttp2_submit_settings(self.session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        guard result == 0 else { throw NGHTTP2SessionError(code: result, operation: "submit_settings") }
    }

    /// Queues RST_STREAM.
    func submitReset(streamID: Int32, errorCode: HTTP2ErrorCode) {
        // Fails only for an invalid stream id, which is a no-op for the caller.
        _ = nghttp2_submit_rst_stream(self.session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, errorCode.rawValue)
    }

    /// Queues GOAWAY.
    func submitGoAway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: [UInt8]) throws {
        let result = debugData.withUnsafeBufferPointer { data in
            nghttp2_submit_goaway(
                self.session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastStreamID, errorCode.rawValue, data.baseAddress, data.count
            )
        }
        guard result == 0 else { throw NGHTTP2SessionError(code: result, operation: "submit_goaway") }
    }

    /// Queues PING, or its acknowledgement.
    func submitPing(payload: UInt64, isAck: Bool = false) {
        withUnsafeBytes(of: payload.bigEndian) { bytes in
            _ = nghttp2_submit_ping(
                self.session, UInt8(isAck ? NGHTTP2_FLAG_ACK.rawValue : NGHTTP2_FLAG_NONE.rawValue),
                bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            )
        }
    }

    /// Ends the session with GOAWAY(`errorCode`) at once.
    func terminate(errorCode: HTTP2ErrorCode) {
        _ = nghttp2_session_terminate_session(self.session, errorCode.rawValue)
    }

    // MARK: Callback entry points

    fileprivate func streamClosed(_ streamID: Int32, errorCode: UInt32) {
        if let source = self.bodies.removeValue(for: streamID) { self.recycle(source) }
        self.withDelegate { $0.session(self, didCloseStream: streamID, errorCode: HTTP2ErrorCode(errorCode)) }
    }
}

/// A body being sent: read by nghttp2's data provider through an unretained pointer; the session's
/// `bodies` table keeps it alive until the stream closes.
final class BodySource {
    var bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }
}

/// What a peer refuses in a header field (RFC 9113 §8.2): one definition for the check made while
/// copying a request's headers and for ``HTTP2HeaderField/checked()``.
enum HeaderRules {
    /// Upper case, controls, space, `:` and non-ASCII are not allowed in a name.
    @inline(__always)
    static func isBadNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5a) || byte <= 0x20 || byte == 0x3a || byte >= 0x7f
    }

    /// CR, LF and NUL are not allowed in a value.
    @inline(__always)
    static func isBadValueByte(_ byte: UInt8) -> Bool { byte == 0x0d || byte == 0x0a || byte == 0x00 }

    static func isConnectionSpecific(_ name: String) -> Bool {
        ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"].contains(name)
    }
}

/// A header the peer would refuse, found while copying it.
struct HeaderError: Error, CustomStringConvertible {
    var description: String
}

/// Copies header names and values into caller-provided buffers and points `nghttp2_nv` entries at
/// them, checking each byte on the way.
struct NVWriter {
    let storage: UnsafeMutableBufferPointer<UInt8>
    let nva: UnsafeMutableBufferPointer<nghttp2_nv>
    private var offset = 0
    private(set) var count = 0

    init(storage: UnsafeMutableBufferPointer<UInt8>, nva: UnsafeMutableBufferPointer<nghttp2_nv>) {
        self.storage = storage
        self.nva = nva
    }

    mutating func add(_ name: String, _ value: String, neverIndexed: Bool, checkName: Bool = false) throws {
        let nameStart = self.offset
        var badName = false
        self.copy(name) { byte in
            if checkName, HeaderRules.isBadNameByte(byte) { badName = true }
        }
        let nameLength = self.offset - nameStart
        if checkName {
            if badName || nameLength == 0 {
                throw HeaderError(description: "header name '\(name)' must be non-empty lower-case token characters")
            }
            if HeaderRules.isConnectionSpecific(name) {
                throw HeaderError(description: "header '\(name)' is connection-specific and not allowed in HTTP/2")
            }
        }
        let valueStart = self.offset
        var badValue = false
        self.copy(value) { byte in
            if HeaderRules.isBadValueByte(byte) { badValue = true }
        }
        if badValue { throw HeaderError(description: "the value of header '\(name)' contains CR, LF or NUL") }
        self.appendField(nameStart: nameStart, valueStart: valueStart, neverIndexed: neverIndexed)
    }

    /// Adds a field of a request's parts: its entry points into the parts' block, where nghttp2
    /// copies it from.
    mutating func add(_ field: HTTP2Request.Parts.BlockField, in block: UnsafeBufferPointer<UInt8>) {
        let name = UnsafeMutablePointer(mutating: block.baseAddress! + field.nameStart)
        self.nva[self.count] = nghttp2_nv(
            name: name, value: name + field.nameLength, namelen: field.nameLength, valuelen: field.valueLength,
            flags: UInt8(field.neverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue)
        )
        self.count += 1
    }

    /// Adds `:path` (never indexed) from two parts copied back to back.
    mutating func addPath(_ prefix: String, _ suffix: String) throws {
        let nameStart = self.offset
        self.copy(":path")
        let valueStart = self.offset
        var badValue = false
        self.copy(prefix) { byte in if byte <= 0x20 || byte == 0x7f { badValue = true } }
        self.copy(suffix) { byte in if byte <= 0x20 || byte == 0x7f { badValue = true } }
        if badValue || self.offset == valueStart {
            throw HeaderError(description: "the path must be non-empty, with no spaces or control characters")
        }
        self.appendField(nameStart: nameStart, valueStart: valueStart, neverIndexed: true)
    }

    private mutating func appendField(nameStart: Int, valueStart: Int, neverIndexed: Bool) {
        let base = self.storage.baseAddress!
        self.nva[self.count] = nghttp2_nv(
            name: base + nameStart, value: base + valueStart, namelen: valueStart - nameStart, valuelen: self.offset - valueStart,
            flags: UInt8(neverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue)
        )
        self.count += 1
    }

    /// Adds a UUID header, its value formatted in place, never indexed.
    mutating func add(_ field: HTTP2UUIDHeader) {
        let nameStart = self.offset
        field.name.withUTF8Buffer { name in
            if name.count > 0 { (self.storage.baseAddress! + self.offset).update(from: name.baseAddress!, count: name.count) }
            self.offset += name.count
        }
        let valueStart = self.offset
        field.writeValue(into: self.storage.baseAddress! + self.offset)
        self.offset += HTTP2UUIDHeader.valueLength
        self.appendField(nameStart: nameStart, valueStart: valueStart, neverIndexed: true)
    }

    private mutating func copy(_ string: String) {
        let copied: Int? = string.utf8.withContiguousStorageIfAvailable { bytes in
            if bytes.count > 0 {
                (self.storage.baseAddress! + self.offset).update(from: bytes.baseAddress!, count: bytes.count)
            }
            return bytes.count
        }
        if let copied {
            self.offset += copied
        } else {
            for byte in string.utf8 {
                self.storage[self.offset] = byte
                self.offset += 1
            }
        }
    }

    private mutating func copy(_ string: String, checking check: (UInt8) -> Void) {
        let copied: Int? = string.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes { check(byte) }
            if bytes.count > 0 {
                (self.storage.baseAddress! + self.offset).update(from: bytes.baseAddress!, count: bytes.count)
            }
            return bytes.count
        }
        if let copied {
            self.offset += copied
        } else {
            for byte in string.utf8 {
                check(byte)
                self.storage[self.offset] = byte
                self.offset += 1
            }
        }
    }
}

// MARK: - C callbacks
// File-private free functions: user_data is the session, passed unretained (the owner keeps it alive).

/// Runs `body` with the session of `userData`, with no retain and release around it: the session
/// outlives every callback nghttp2 makes (it owns the `nghttp2_session`), and a response makes
/// five to seven callbacks, where that pair cost more than the callback's own work.
private func withOwner<Result>(_ userData: UnsafeMutableRawPointer?, _ body: (NGHTTP2Session) -> Result) -> Result {
    guard let userData else { preconditionFailure("nghttp2 callback without user data") }
    return Unmanaged<NGHTTP2Session>.fromOpaque(userData)._withUnsafeGuaranteedRef(body)
}

private let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
    guard let frame else { preconditionFailure("nghttp2 callback without a frame") }
    withOwner(userData) { session in
        session.withDelegate { $0.session(session, didBeginHeadersOn: frame.pointee.hd.stream_id) }
    }
    return 0
}

private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, flags, userData in
    guard let frame, let name, let value else { preconditionFailure("nghttp2 header callback without data") }
    withOwner(userData) { session in
        session.withDelegate {
            $0.session(
                session,
                didReceiveHeader: UnsafeBufferPointer(start: name, count: nameLength),
                value: UnsafeBufferPointer(start: value, count: valueLength),
                neverIndexed: flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0,
                on: frame.pointee.hd.stream_id
            )
        }
    }
    return 0
}

private let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    withOwner(userData) { session in
        session.withDelegate { $0.session(session, didReceiveData: UnsafeRawBufferPointer(start: data, count: length), on: streamID) }
    }
    return 0
}

private let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame else { preconditionFailure("nghttp2 callback without a frame") }
    let header = frame.pointee.hd
    let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
    let isAck = header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
    let event: NGHTTP2Frame
    switch UInt32(header.type) {
    case NGHTTP2_HEADERS.rawValue: event = .headers(streamID: header.stream_id, endStream: endStream)
    case NGHTTP2_DATA.rawValue: event = .data(streamID: header.stream_id, endStream: endStream)
    case NGHTTP2_SETTINGS.rawValue: event = .settings(isAck: isAck)
    case NGHTTP2_PING.rawValue:
        let payload = withUnsafeBytes(of: frame.pointee.ping.opaque_data) { UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)) }
        event = .ping(isAck: isAck, payload: payload)
    case NGHTTP2_GOAWAY.rawValue:
        let goAway = frame.pointee.goaway
        let debug = goAway.opaque_data.map { Array(UnsafeBufferPointer(start: $0, count: goAway.opaque_data_len)) } ?? []
        event = .goAway(lastStreamID: goAway.last_stream_id, errorCode: HTTP2ErrorCode(goAway.error_code), debugData: debug)
    case NGHTTP2_RST_STREAM.rawValue:
        event = .rstStream(streamID: header.stream_id, errorCode: HTTP2ErrorCode(frame.pointee.rst_stream.error_code))
    default: event = .other
    }
    withOwner(userData) { session in session.withDelegate { $0.session(session, didReceive: event) } }
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    // Never return a fatal error from here (nghttp2 advisory GHSA-6pcr-v3hg-752p).
    withOwner(userData) { $0.streamClosed(streamID, errorCode: errorCode) }
    return 0
}

private let onFrameNotSent: nghttp2_on_frame_not_send_callback = { _, frame, errorCode, userData in
    guard let frame else { preconditionFailure("nghttp2 callback without a frame") }
    let type = UInt32(frame.pointee.hd.type)
    guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue else { return 0 }
    withOwner(userData) { session in
        session.withDelegate { $0.session(session, didFailToSendOn: frame.pointee.hd.stream_id, error: errorCode) }
    }
    return 0
}

private let readBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
    guard let buffer, let flags, let pointer = source?.pointee.ptr else { preconditionFailure("nghttp2 read without a source") }
    // Borrowed: the session's `bodies` table keeps the source alive until its stream closes.
    return Unmanaged<BodySource>.fromOpaque(pointer)._withUnsafeGuaranteedRef { body in
        let count = min(length, body.bytes.count - body.offset)
        body.bytes.withUnsafeBufferPointer { bytes in
            buffer.update(from: bytes.baseAddress! + body.offset, count: count)
        }
        body.offset += count
        if body.offset == body.bytes.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }
}
