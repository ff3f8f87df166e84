#if canImport(Glibc)
import Glibc
#endif

/// A socket with optional TLS: plaintext HTTP/2 bytes in and out, ciphertext on the wire.
///
/// Outgoing bytes are coalesced into one buffer and written with as few `send` calls as the kernel
/// allows: one TLS record and one system call for many small frames. Confined to one I/O thread.
final class Channel {
    let socket: Socket
    let tls: TLSConnection?
    private var outbound: [UInt8] = []
    private var outboundOffset = 0
    private var readBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var frameScratch: [UInt8] = []
    /// Set during the handshake: what may cut it short.
    private var interrupt: (descriptor: Int32, isInterrupted: () -> Bool)?

    init(socket: Socket, tls: TLSConnection?) {
        self.socket = socket
        self.tls = tls
        self.outbound.reserveCapacity(64 * 1024)
    }

    /// Whether bytes are waiting for the socket to accept them.
    var hasPendingOutput: Bool { self.outboundOffset < self.outbound.count }

    /// Bytes queued but not yet accepted by the kernel.
    var pendingOutputCount: Int { self.outbound.count - self.outboundOffset }

    /// Queues plaintext (encrypting it under TLS).
    func queue(_ plaintext: [UInt8]) throws {
        guard !plaintext.isEmpty else { return }
        if let tls {
            try plaintext.withUnsafeBytes { try tls.writePlaintext($0) }
            tls.drainCiphertext(into: &self.outbound)
        } else {
            self.outbound.append(contentsOf: plaintext)
        }
    }

    /// Moves the frames `drain` produces into the output (encrypting them under TLS) and writes what
    /// the kernel takes. Stops taking frames once 256 KiB wait for the socket, so a peer that stops
    /// reading cannot make the buffer grow without bound.
    func flushFrames(_ drain: (inout [UInt8]) throws -> Bool) throws {
        self.frameScratch.removeAll(keepingCapacity: true)
        while try drain(&self.frameScratch) {
            try self.queue(self.frameScratch)
            self.frameScratch.removeAll(keepingCapacity: true)
            if self.pendingOutputCount > 256 * 1024 { break }
        }
        try self.flush()
    }

    /// Writes queued bytes until the kernel would block.
    /// - Returns: whether everything was written.
    @discardableResult
    func flush() throws -> Bool {
        while self.outboundOffset < self.outbound.count {
            let sent = try self.outbound.withUnsafeBytes { bytes in
                try self.socket.send(UnsafeRawBufferPointer(rebasing: bytes[self.outboundOffset...]))
            }
            if sent == 0 { return false }
            self.outboundOffset += sent
        }
        self.outbound.removeAll(keepingCapacity: true)
        self.outboundOffset = 0
        return true
    }

    /// Reads everything available and appends the plaintext to `plaintext`.
    /// - Returns: `false` when the peer closed the connection.
    func read(into plaintext: inout [UInt8]) throws -> Bool {
        var open = true
        while true {
            let count = try self.readBuffer.withUnsafeMutableBytes { try self.socket.receive(into: $0) }
            guard let count else { break }
            if count == 0 {
                open = false
                break
            }
            if let tls {
                self.readBuffer.withUnsafeBytes { tls.receiveCiphertext(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            } else {
                plaintext.append(contentsOf: self.readBuffer[0..<count])
            }
            if count < self.readBuffer.count { break }
        }
        if let tls {
            if try !tls.readPlaintext(into: &plaintext) { open = false }
            // Reading can produce output (TLS 1.3 key updates, alerts).
            tls.drainCiphertext(into: &self.outbound)
        }
        return open
    }

    /// Runs the TLS handshake to completion, blocking this thread with `poll` until `deadline`.
    /// - Parameter interrupt: a descriptor that becomes readable, and a check that then says whether
    ///   to give up (the connect was cancelled).
    func handshake(deadline: UInt64, interrupt: (descriptor: Int32, isInterrupted: () -> Bool)? = nil) throws {
        guard let tls else { return }
        self.interrupt = interrupt
        defer { self.interrupt = nil }
        // The peer's first bytes, kept to tell a server that does not speak TLS from a TLS failure.
        var first: [UInt8] = []
        func notTLS(_ error: some Error) -> any Error {
            guard let reason = PeerProtocol.notTLS(first) else { return error }
            return TLSError(description: reason, isProtocolMismatch: true)
        }
        while true {
            let state: TLSConnection.HandshakeState
            do { state = try tls.handshake() } catch { throw notTLS(error) }
            tls.drainCiphertext(into: &self.outbound)
            while !(try self.flush()) { try self.wait(events: Int16(POLLOUT), deadline: deadline) }
            if state == .complete { return }
            try self.wait(events: Int16(POLLIN), deadline: deadline)
            let count: Int?
            do { count = try self.readBuffer.withUnsafeMutableBytes { try self.socket.receive(into: $0) } } catch { throw notTLS(error) }
            if count == 0 { throw notTLS(TLSError(description: "the peer closed the connection during the TLS handshake")) }
            if let count {
                if first.count < 9 { first += self.readBuffer[0..<min(count, 9 - first.count)] }
                self.readBuffer.withUnsafeBytes { tls.receiveCiphertext(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            }
        }
    }

    /// Asks the proxy at the other end of the socket for a tunnel, before any TLS, blocking this
    /// thread with `poll` until `deadline` (the connect's, shared with the TLS handshake).
    /// - Parameter interrupt: as for ``handshake(deadline:interrupt:)``.
    /// - Throws: ``ProxyHandshake/Failure`` naming the proxy, `cancelled`, or a socket error.
    func openTunnel(_ handshake: inout ProxyHandshake, deadline: UInt64, interrupt: (descriptor: Int32, isInterrupted: () -> Bool)? = nil) throws {
        self.interrupt = interrupt
        defer { self.interrupt = nil }
        let proxy = handshake.proxy
        let timedOut = { ProxyHandshake.Failure(proxy: proxy, reason: "no tunnel within the connect timeout", isPermanent: false) }
        var step = try handshake.start()
        while true {
            let read: ProxyHandshake.Read
            switch step {
            case .open:
                return
            case .send(let bytes, let then):
                self.outbound.append(contentsOf: bytes)
                while !(try self.flush()) { try self.wait(events: Int16(POLLOUT), deadline: deadline, timedOut: timedOut) }
                read = then
            case .read(let next):
                read = next
            }
            var received: [UInt8] = []
            while true {
                try self.wait(events: Int16(POLLIN), deadline: deadline, timedOut: timedOut)
                let done: Bool
                switch read {
                case .exactly(let count): done = try self.socket.receive(exactly: count, into: &received)
                case .httpHead: done = try self.socket.receiveHTTPHead(into: &received)
                }
                if done { break }
            }
            step = try handshake.receive(received)
        }
    }

    private func wait(events: Int16, deadline: UInt64, timedOut: () -> any Error = {
        TLSError(description: "the TLS handshake did not finish within the connect timeout")
    }) throws {
        let now = monotonicNanoseconds()
        guard now < deadline else { throw timedOut() }
        var descriptors = [
            pollfd(fd: self.socket.descriptor, events: events, revents: 0),
            pollfd(fd: self.interrupt?.descriptor ?? -1, events: Int16(POLLIN), revents: 0),
        ]
        let result = poll(&descriptors, 2, Int32(clamping: (deadline - now) / 1_000_000 + 1))
        if result < 0 && errno != EINTR { throw SocketError(operation: "poll", code: errno) }
        if descriptors[1].revents != 0, let interrupt = self.interrupt, interrupt.isInterrupted() {
            throw HTTP2ClientError(.cancelled, mayHaveBeenProcessed: false, detail: "the connect was cancelled")
        }
    }
}
