import Foundation
internal import ForgeSupport
#if canImport(Glibc)
import Glibc
#endif

/// The I/O thread of one server connection.
final class ServerLoop: @unchecked Sendable {
    // @unchecked Sendable: handed once to the connection's thread, which alone uses it.
    private let connection: HTTP2ServerConnection
    private let socket: Socket
    private let context: TLSContext?
    private let configuration: HTTP2ServerConfiguration
    private let settings: HTTP2Settings
    private let handler: HTTP2RequestHandler
    private var core: HTTP2ServerCore!
    private var channel: Channel!
    private var reading = true
    private var incoming: [UInt8] = []
    private var pendingPings: [UInt64] = []
    /// ``HTTP2ServerConfiguration/responseDelay`` in nanoseconds; 0 submits responses at once.
    private let responseDelay: UInt64
    /// Responses waiting for their due time (the response delay, or one of their own).
    private var held = HeldResponses()
    /// What ``takeInbox()`` took from the connection's inbox (empty between two calls).
    private var taken = ServerInbox()
    /// When a connection that has not sent its preface yet is closed (monotonic nanoseconds).
    private var prefaceDeadline: UInt64 = 0

    init(connection: HTTP2ServerConnection, socket: Socket, context: TLSContext?, configuration: HTTP2ServerConfiguration,
         settings: HTTP2Settings, handler: @escaping HTTP2RequestHandler) {
        self.connection = connection
        self.socket = socket
        self.context = context
        self.configuration = configuration
        self.settings = settings
        self.handler = handler
        self.responseDelay = Self.nanoseconds(configuration.responseDelay)
    }

    func run() {
        defer {
            self.core = nil
            self.channel = nil
            self.connection.didClose()
        }
        do {
            let tls = try self.context.map { try TLSConnection(server: $0) }
            self.channel = Channel(socket: self.socket, tls: tls)
            // One deadline for the TLS handshake and the client preface: a peer that connects and
            // then says nothing (or stops halfway) is closed after it, whether or not it speaks TLS.
            self.prefaceDeadline = monotonicNanoseconds() &+ Self.nanoseconds(self.configuration.handshakeTimeout)
            if let report = self.configuration.onWrongProtocol, let problem = self.wrongProtocol() {
                report(self.connection.peerAddress, problem)
                self.answerWrongProtocol()
                return
            }
            try self.channel.handshake(deadline: self.prefaceDeadline)
            self.core = try HTTP2ServerCore(connectionID: self.connection.id, settings: self.settings, answersPings: self.configuration.answersPings)
            self.core.peerAddress = self.connection.peerAddress
            if let tls {
                self.core.clientCertificate = tls.peerCertificate
                self.core.clientCertificateVerified = tls.peerCertificateVerified
            }
            let connection = self.connection
            let handler = self.handler
            self.core.onRequest = { [unowned self] request in
                connection.inbox.withLock { $0.requestCount += 1 }
                if let response = handler(request, HTTP2Responder(connection: connection, streamID: request.streamID)) {
                    self.respond(to: request.streamID, with: response)
                }
            }
            self.core.onPing = { [unowned self] payload in
                self.pendingPings.append(payload)
                connection.inbox.withLock { $0.unansweredPings += 1 }
            }
            try self.flush()
            try self.pump()
        } catch {
            // The connection ends; the client sees it closed. Nothing to report to: the server goes on.
        }
    }

    /// What is wrong with the protocol the client opened with, read without consuming it: a TLS
    /// record (its first byte 0x16, a handshake) where cleartext HTTP/2 is served, or anything else
    /// where TLS is. `nil` when it fits, or when nothing arrives before the preface deadline (the
    /// handshake's own timeout then applies).
    private func wrongProtocol() -> String? {
        var descriptor = pollfd(fd: self.socket.descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let now = monotonicNanoseconds()
            guard now < self.prefaceDeadline else { return nil }
            let ready = poll(&descriptor, 1, Int32(clamping: (self.prefaceDeadline - now + 999_999) / 1_000_000))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            break
        }
        var first = [UInt8](repeating: 0, count: 16)
        let count = first.withUnsafeMutableBytes { recv(self.socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_PEEK)) }
        guard count > 0 else { return nil }
        let bytes = first[..<count]
        let isTLS = bytes.first == 0x16
        if self.context == nil {
            return isTLS ? "sent TLS to this cleartext (h2c) port: use http:// with HTTP/2 prior knowledge, or serve TLS" : nil
        }
        guard !isTLS else { return nil }
        if bytes.starts(with: Array("PRI * HTTP/2".utf8)) {
            return "sent cleartext HTTP/2 (h2c) to this TLS port: use https://, or serve cleartext (h2c)"
        }
        if let byte = bytes.first, (65...90).contains(byte) {
            return "sent cleartext HTTP/1.x to this TLS port: use https:// and HTTP/2"
        }
        return "sent bytes that are not TLS to this TLS port: use https://"
    }

    /// Answers a client that opened with the wrong protocol in the protocol this port speaks, so
    /// that it can say which scheme to use: a fatal TLS alert (unexpected_message, RFC 8446 section
    /// 6) on a TLS port; on a cleartext port an empty SETTINGS frame and a GOAWAY with
    /// PROTOCOL_ERROR, which is how an invalid connection preface ends (RFC 9113, section 3.4).
    /// What the client sent is read first, so that closing does not reset the connection before
    /// the client has read the answer.
    private func answerWrongProtocol() {
        var scratch = [UInt8](repeating: 0, count: 4096)
        while scratch.withUnsafeMutableBytes({ recv(self.socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
        let answer: [UInt8]
        if self.context != nil {
            answer = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x0a]
        } else {
            let debug = Array("TLS sent to a cleartext HTTP/2 port".utf8)
            let length = 8 + debug.count
            answer = [0, 0, 0, 0x04, 0, 0, 0, 0, 0]
                + [0, UInt8(length >> 8), UInt8(length & 0xff), 0x07, 0, 0, 0, 0, 0]
                + [0, 0, 0, 0, 0, 0, 0, 0x01] + debug
        }
        _ = answer.withUnsafeBytes { try? self.socket.send($0) }
        shutdown(self.socket.descriptor, Int32(SHUT_WR))
    }

    private func pump() throws {
        var descriptors = [
            pollfd(fd: self.socket.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: self.connection.waker.readDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        let requestTimeout = self.configuration.requestTimeout.map(Self.nanoseconds)
        while true {
            if try self.takeInbox() { return }
            // Timers: the preface first, then each request still arriving (not while the server
            // itself stops reading: then the client is not the one stalling).
            let now = monotonicNanoseconds()
            var wakeAt: UInt64?
            if !self.core.hasReceivedPreface {
                guard now < self.prefaceDeadline else {
                    try? self.core.goAway(errorCode: .settingsTimeout, debugData: Array("no client preface in time".utf8))
                    try? self.flush()
                    return
                }
                wakeAt = self.prefaceDeadline
            }
            if let requestTimeout, self.reading, let next = self.core.expireIncompleteRequests(now: now, timeout: requestTimeout) {
                wakeAt = min(wakeAt ?? next, next)
            }
            // Held responses: submit those due, wake up for the next. (A stream reset meanwhile is
            // gone from the core, which ignores its response.)
            while let entry = self.held.popDue(now: now) { self.core.respond(to: entry.streamID, with: entry.response) }
            if let next = self.held.nextDue { wakeAt = min(wakeAt ?? next, next) }
            try self.flush()
            if !self.core.wantsRead && !self.core.wantsWrite && !self.channel.hasPendingOutput { return }
            descriptors[0].events = (self.reading ? Int16(POLLIN) : 0) | (self.channel.hasPendingOutput ? Int16(POLLOUT) : 0)
            descriptors[0].revents = 0
            descriptors[1].revents = 0
            // Rounded up to the next millisecond, so a wake-up never comes before its deadline.
            let timeout = wakeAt.map { Int32(clamping: ($0 &- min($0, now) + 999_999) / 1_000_000) } ?? -1
            if poll(&descriptors, 2, timeout) < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[1].revents != 0 { self.connection.waker.drain() }
            let events = descriptors[0].revents
            if events & Int16(POLLOUT) != 0 { try self.channel.flush() }
            if self.reading, events & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                self.incoming.removeAll(keepingCapacity: true)
                let open = try self.channel.read(into: &self.incoming)
                if !self.incoming.isEmpty { try self.incoming.withUnsafeBytes { try self.core.receive($0) } }
                if !open { return }
            } else if !self.reading, events & (Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                return
            }
        }
    }

    /// Applies responses and commands posted from other threads. Returns `true` to end the connection.
    private func takeInbox() throws -> Bool {
        // Swapped with the loop's (empty) arrays rather than copied: neither side allocates per wake.
        self.connection.inbox.withLock { inbox in
            swap(&inbox.responses, &self.taken.responses)
            swap(&inbox.delayedResponses, &self.taken.delayedResponses)
            swap(&inbox.commands, &self.taken.commands)
            inbox.wakeArmed = false
        }
        defer {
            self.taken.responses.removeAll(keepingCapacity: true)
            self.taken.delayedResponses.removeAll(keepingCapacity: true)
            self.taken.commands.removeAll(keepingCapacity: true)
        }
        for (streamID, response) in self.taken.responses { self.respond(to: streamID, with: response) }
        for (due, streamID, response) in self.taken.delayedResponses {
            self.held.schedule(due: Self.adding(self.responseDelay, to: due), streamID: streamID, response: response)
        }
        for command in self.taken.commands {
            switch command {
            case .goAway(let lastStreamID, let errorCode, let debugData):
                try self.core.goAway(lastStreamID: lastStreamID, errorCode: errorCode, debugData: debugData)
            case .reset(let streamID, let errorCode):
                self.core.reset(streamID: streamID, errorCode: errorCode)
            case .settings(let settings):
                try self.core.updateSettings(settings)
            case .abort:
                self.socket.abort()
                return true
            case .reading(let reading):
                self.reading = reading
            case .answerPings:
                for payload in self.pendingPings { self.core.acknowledgePing(payload) }
                let answered = self.pendingPings.count
                self.pendingPings.removeAll()
                self.connection.inbox.withLock { $0.unansweredPings -= answered }
            case .shutdown(let debugData):
                try self.core.goAway(errorCode: .noError, debugData: debugData)
                try self.flush()
                return true
            }
        }
        return false
    }

    /// Submits a response now, or holds it for the response delay (``HTTP2ServerConfiguration/responseDelay``).
    private func respond(to streamID: Int32, with response: HTTP2Response) {
        if self.responseDelay == 0 {
            self.core.respond(to: streamID, with: response)
        } else {
            self.held.append(due: Self.adding(self.responseDelay, to: monotonicNanoseconds()), streamID: streamID, response: response)
        }
    }

    /// `time + nanoseconds`, at most `UInt64.max` (a delay of centuries is "never", not "now").
    static func adding(_ nanoseconds: UInt64, to time: UInt64) -> UInt64 {
        let (sum, overflow) = time.addingReportingOverflow(nanoseconds)
        return overflow ? .max : sum
    }

    /// A duration as nanoseconds, negative ones as 0.
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        UInt64(max(0, HTTP2Connection.nanoseconds(duration)))
    }

    private func flush() throws {
        try self.channel.flushFrames { try self.core.drainOutput(into: &$0) }
    }
}
