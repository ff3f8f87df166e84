/// The server side of one HTTP/2 connection, without I/O.
///
/// Each complete request (END_STREAM seen) is handed to `onRequest`, which answers at once or later
/// through ``respond(to:with:)``. Confined to one thread, like ``HTTP2ClientCore``.
final class HTTP2ServerCore: NGHTTP2SessionDelegate {
    private struct Incoming {
        var method = ""
        var scheme = ""
        var authority = ""
        var path = ""
        var headers: [HTTP2HeaderField] = []
        var body: [UInt8] = []
        /// The pseudo-headers that came never-indexed.
        var neverIndexed: [String] = []
        /// When its HEADERS began, for the request timeout.
        var began: UInt64
    }

    private var session: NGHTTP2Session!
    private var incoming: [Int32: Incoming] = [:]
    /// Strings of the fields received last, reused while their bytes repeat.
    private var recentHeaders = RecentHeaderStrings()
    /// Streams whose request was handed out and not answered yet.
    private(set) var awaitingResponse: Set<Int32> = []
    let connectionID: UInt64
    var peerAddress = ""
    var clientCertificate: [UInt8]?
    var clientCertificateVerified = false
    /// Called for each complete request, on the connection's thread.
    var onRequest: (HTTP2ServerRequest) -> Void = { _ in }
    /// Called for each PING that is not an acknowledgement (when pings are answered by hand).
    var onPing: ((UInt64) -> Void)?
    /// Streams opened so far.
    private(set) var streamsOpened = 0
    /// Whether the client's preface arrived (nghttp2 checks the magic and reports its first
    /// frame, which must be SETTINGS).
    private(set) var hasReceivedPreface = false
    /// The time source for request deadlines (monotonic nanoseconds); tests may replace it.
    var now: () -> UInt64 = monotonicNanoseconds

    init(connectionID: UInt64, settings: HTTP2Settings, answersPings: Bool = true) throws {
        self.connectionID = connectionID
        self.session = try NGHTTP2Session(role: .server, settings: settings, answersPings: answersPings, owner: .server(self))
    }

    // MARK: Output

    /// Sends the response to the request on `streamID`; ignored if the stream is gone.
    func respond(to streamID: Int32, with response: HTTP2Response) {
        guard self.awaitingResponse.remove(streamID) != nil else { return }
        do {
            try self.session.submitResponse(response, on: streamID)
        } catch {
            self.session.submitReset(streamID: streamID, errorCode: .internalError)
        }
    }

    /// Resets a stream.
    func reset(streamID: Int32, errorCode: HTTP2ErrorCode) {
        self.awaitingResponse.remove(streamID)
        self.incoming.removeValue(forKey: streamID)
        self.session.submitReset(streamID: streamID, errorCode: errorCode)
    }

    /// Sends GOAWAY; `lastStreamID` defaults to the last stream this side processed.
    func goAway(lastStreamID: Int32? = nil, errorCode: HTTP2ErrorCode, debugData: [UInt8]) throws {
        try self.session.submitGoAway(
            lastStreamID: lastStreamID ?? self.session.lastProcessedStreamID, errorCode: errorCode, debugData: debugData
        )
    }

    /// Resets, with `REFUSED_STREAM`, every stream whose request began `timeout` nanoseconds or more
    /// before `now` and is still incomplete (no END_STREAM yet).
    /// - Returns: when the next incomplete request expires, or `nil` when none is waiting.
    func expireIncompleteRequests(now: UInt64, timeout: UInt64) -> UInt64? {
        var next: UInt64?
        var expired: [Int32] = []
        for (streamID, request) in self.incoming {
            let deadline = request.began &+ timeout
            if deadline <= now {
                expired.append(streamID)
            } else {
                next = min(next ?? deadline, deadline)
            }
        }
        // The handler never saw these requests: REFUSED_STREAM tells the client it may retry them.
        for streamID in expired { self.reset(streamID: streamID, errorCode: .refusedStream) }
        return next
    }

    /// Announces new settings (for example a new stream limit).
    func updateSettings(_ settings: HTTP2Settings) throws { try self.session.submitSettings(settings) }

    /// Acknowledges a PING (when pings are answered by hand).
    func acknowledgePing(_ payload: UInt64) { self.session.submitPing(payload: payload, isAck: true) }

    func receive(_ bytes: UnsafeRawBufferPointer) throws { try self.session.receive(bytes) }

    @discardableResult
    func drainOutput(into buffer: inout [UInt8], limit: Int = 64 * 1024) throws -> Bool {
        try self.session.drainOutput(into: &buffer, limit: limit)
    }

    var wantsRead: Bool { self.session.wantsRead }
    var wantsWrite: Bool { self.session.wantsWrite }

    // MARK: NGHTTP2SessionDelegate

    func session(_ session: NGHTTP2Session, didBeginHeadersOn streamID: Int32) {
        if self.incoming.index(forKey: streamID) == nil {
            self.incoming[streamID] = Incoming(began: self.now())
            self.streamsOpened += 1
        }
    }

    func session(_ session: NGHTTP2Session, didReceiveHeader name: UnsafeBufferPointer<UInt8>,
                 value: UnsafeBufferPointer<UInt8>, neverIndexed: Bool, on streamID: Int32) {
        // One lookup, then the stored request is changed in place (`values[slot]`): comparing
        // `incoming[streamID]` with nil copied the whole request, a header at a time.
        guard let slot = self.incoming.index(forKey: streamID) else { return }
        let (name, value) = self.recentHeaders.strings(name: name, value: value)
        if name.utf8.first == UInt8(ascii: ":") {
            // Only pseudo-headers are listed: a regular field carries its own indexing, and a list of
            // every never-indexed name cost an array (and its growth) per request.
            if neverIndexed { self.incoming.values[slot].neverIndexed.append(name) }
            switch name {
            case ":method": self.incoming.values[slot].method = value
            case ":scheme": self.incoming.values[slot].scheme = value
            case ":authority": self.incoming.values[slot].authority = value
            case ":path": self.incoming.values[slot].path = value
            default: break
            }
        } else {
            self.incoming.values[slot].headers.append(HTTP2HeaderField(name, value, indexing: neverIndexed ? .neverIndexed : .indexable))
        }
    }

    func session(_ session: NGHTTP2Session, didReceiveData data: UnsafeRawBufferPointer, on streamID: Int32) {
        guard let slot = self.incoming.index(forKey: streamID) else { return }
        self.incoming.values[slot].body.append(contentsOf: data)
    }

    func session(_ session: NGHTTP2Session, didReceive frame: NGHTTP2Frame) {
        self.hasReceivedPreface = true
        switch frame {
        case .headers(let streamID, true), .data(let streamID, true):
            guard let request = self.incoming.removeValue(forKey: streamID) else { return }
            self.awaitingResponse.insert(streamID)
            self.onRequest(
                HTTP2ServerRequest(
                    method: request.method, scheme: request.scheme, authority: request.authority, path: request.path,
                    headers: request.headers, body: request.body, streamID: streamID, connectionID: self.connectionID,
                    peerAddress: self.peerAddress, clientCertificate: self.clientCertificate,
                    clientCertificateVerified: self.clientCertificateVerified,
                    neverIndexedPseudoHeaders: request.neverIndexed
                )
            )
        case .ping(isAck: false, let payload):
            self.onPing?(payload)
        default:
            break
        }
    }

    func session(_ session: NGHTTP2Session, didCloseStream streamID: Int32, errorCode: HTTP2ErrorCode) {
        self.incoming.removeValue(forKey: streamID)
        self.awaitingResponse.remove(streamID)
    }

    func session(_ session: NGHTTP2Session, didFailToSendOn streamID: Int32, error: Int32) {
        // A response nghttp2 could not send (a header block too large to compress, for example) would
        // otherwise leave the client waiting: reset the stream so it hears about it.
        self.awaitingResponse.remove(streamID)
        self.session.submitReset(streamID: streamID, errorCode: .internalError)
    }
}
