#if canImport(Glibc)
import Glibc
#endif
internal import Synchronization

/// A socket failure, with the operation and `errno`'s text (only when there is an `errno`).
struct SocketError: Error, CustomStringConvertible {
    var operation: String
    /// The `errno`, or 0 when the failure has none (name resolution reports its own codes).
    var code: Int32
    /// Why, when it is not an `errno` (`gai_strerror`'s text).
    var reason: String?
    /// The name does not resolve (`EAI_NONAME`, `EAI_NODATA`): no retry can help within a run.
    /// A temporary resolver failure (`EAI_AGAIN`) is not one of these.
    var isNameNotFound = false

    /// What ``description`` starts with for a name that does not resolve.
    static let nameNotFoundPrefix = "cannot resolve "

    init(operation: String, code: Int32, reason: String? = nil, isNameNotFound: Bool = false) {
        self.operation = operation
        self.code = code
        self.reason = reason
        self.isNameNotFound = isNameNotFound
    }

    /// A failed `getaddrinfo` for `host`, with `status` as it returned.
    static func resolution(host: String, status: Int32) -> SocketError {
        if status == EAI_SYSTEM {
            return SocketError(operation: "resolving \(host)", code: errno)
        }
        let reason = String(cString: gai_strerror(status))
        // EAI_NODATA (-5) and EAI_ADDRFAMILY (-9) are GNU extensions the Glibc module does not
        // export (they need _GNU_SOURCE); glibc's values are stable ABI.
        let notFound = status == EAI_NONAME || status == -5 || status == -9
        return SocketError(
            operation: notFound ? Self.nameNotFoundPrefix + host : "resolving \(host)", code: 0, reason: reason,
            isNameNotFound: notFound
        )
    }

    var description: String {
        if let reason { return "\(self.operation): \(reason)" }
        guard self.code != 0 else { return self.operation }
        return "\(self.operation): \(String(cString: strerror(self.code))) (errno \(self.code))"
    }
}

/// Owns one socket descriptor and closes it exactly once.
///
/// Non-blocking after connect or accept; every send uses `MSG_NOSIGNAL`, so a peer that went away
/// gives an error instead of SIGPIPE. Confined to the thread of the connection that owns it.
final class Socket {
    let descriptor: Int32
    /// `address:port` of the peer, for logs and requests.
    private(set) var peerAddress = ""

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close(self.descriptor) }

    // MARK: Client

    /// Resolves `host` and connects to the first address that answers within `timeout`.
    static func connect(host: String, port: Int, timeout: Duration) throws -> Socket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>? = nil
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else { throw SocketError.resolution(host: host, status: status) }
        defer { freeaddrinfo(list) }
        var lastError = SocketError(operation: "connecting to \(host):\(port)", code: ECONNREFUSED)
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let info = entry {
            entry = info.pointee.ai_next
            let descriptor = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard descriptor >= 0 else { continue }
            let socket = Socket(descriptor: descriptor)
            do {
                try socket.setNonBlocking()
                let result = Glibc.connect(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen)
                if result != 0 {
                    guard errno == EINPROGRESS else { throw SocketError(operation: "connecting to \(host):\(port)", code: errno) }
                    try socket.waitForConnect(timeout: timeout, what: "connecting to \(host):\(port)")
                }
                socket.setNoDelay()
                socket.peerAddress = Socket.describe(info.pointee.ai_addr, info.pointee.ai_addrlen)
                return socket
            } catch let error as SocketError {
                lastError = error
            }
        }
        throw lastError
    }

    private func waitForConnect(timeout: Duration, what: String) throws {
        var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLOUT), revents: 0)
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        while true {
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { throw SocketError(operation: "\(what): no answer within the connect timeout", code: ETIMEDOUT) }
            break
        }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(self.descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
        guard error == 0 else { throw SocketError(operation: what, code: error) }
    }

    // MARK: Server

    /// A listening socket on `host` (an IP literal) and `port` (0 picks a free one).
    static func listen(host: String, port: Int) throws -> (Socket, port: Int) {
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        let family: Int32
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            family = AF_INET
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            family = AF_INET6
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
        } else {
            throw SocketError(operation: "listening on '\(host)': give an IP address such as 127.0.0.1 or ::1", code: EINVAL)
        }
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SocketError(operation: "socket", code: errno) }
        let socket = Socket(descriptor: descriptor)
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = family == AF_INET
            ? withUnsafePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            : withUnsafePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) } }
        guard bound == 0 else { throw SocketError(operation: "binding \(host):\(port)", code: errno) }
        guard Glibc.listen(descriptor, 512) == 0 else { throw SocketError(operation: "listen", code: errno) }
        try socket.setNonBlocking()
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let chosen = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Int in
                getsockname(descriptor, address, &length)
                return Socket.port(of: address)
            }
        }
        return (socket, chosen)
    }

    /// Accepts one pending connection, or returns `nil` when none is waiting.
    func accept() throws -> Socket? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        // accept4 is not visible in Swift's Glibc module: accept, then fcntl.
        let descriptor = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(self.descriptor, $0, &length) }
        }
        guard descriptor >= 0 else {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED { return nil }
            throw SocketError(operation: "accept", code: errno)
        }
        let socket = Socket(descriptor: descriptor)
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        try socket.setNonBlocking()
        socket.setNoDelay()
        socket.peerAddress = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Socket.describe($0, length) }
        }
        return socket
    }

    // MARK: I/O

    /// Sends what the kernel takes now. - Returns: bytes sent (0 when it would block).
    func send(_ bytes: UnsafeRawBufferPointer) throws -> Int {
        while true {
            let sent = Glibc.send(self.descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if sent >= 0 { return sent }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return 0
            default: throw SocketError(operation: "send", code: errno)
            }
        }
    }

    /// Reads what is available. - Returns: bytes read, 0 at end of stream, `nil` when it would block.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        while true {
            let count = recv(self.descriptor, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return nil
            default: throw SocketError(operation: "recv", code: errno)
            }
        }
    }

    /// Reads what is available towards `count` bytes in all, never beyond them.
    /// - Returns: whether `buffer` now holds `count` bytes. - Throws: at end of stream.
    func receive(exactly count: Int, into buffer: inout [UInt8]) throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: count - buffer.count)
        guard let read = try chunk.withUnsafeMutableBytes({ try self.receive(into: $0) }) else { return false }
        guard read > 0 else { throw SocketError(operation: "the peer closed the connection before it answered", code: 0) }
        buffer += chunk[0..<read]
        return buffer.count == count
    }

    /// Reads what is available of an HTTP/1.x response head, through its blank line and not one
    /// byte further (it peeks first, so the bytes after the head stay in the socket).
    /// - Returns: whether `head` is complete. - Throws: at end of stream, or past 16 KiB.
    func receiveHTTPHead(into head: inout [UInt8]) throws -> Bool {
        let limit = 16 * 1024
        var chunk = [UInt8](repeating: 0, count: limit - head.count)
        guard !chunk.isEmpty else { throw SocketError(operation: "the peer's answer head is longer than 16 KiB", code: 0) }
        let peeked = chunk.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress, $0.count, Int32(MSG_PEEK)) }
        if peeked < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return false }
            throw SocketError(operation: "recv", code: errno)
        }
        guard peeked > 0 else { throw SocketError(operation: "the peer closed the connection before it answered", code: 0) }
        // The terminator may straddle what was read before and what was peeked now.
        let combined = head + chunk[0..<peeked]
        let searchFrom = max(0, head.count - 3)
        var take = peeked
        var complete = false
        if combined.count >= 4 {
            for index in searchFrom...(combined.count - 4)
            where combined[index] == 13 && combined[index + 1] == 10 && combined[index + 2] == 13 && combined[index + 3] == 10 {
                take = index + 4 - head.count
                complete = true
                break
            }
        }
        return try self.receive(exactly: head.count + take, into: &head) && complete
    }

    /// Closes the connection at once with RST (SO_LINGER 0), as a crashed peer would.
    func abort() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(self.descriptor, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        shutdown(self.descriptor, Int32(SHUT_RDWR))
    }

    private func setNonBlocking() throws {
        let flags = fcntl(self.descriptor, F_GETFL)
        guard flags >= 0, fcntl(self.descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else {
            throw SocketError(operation: "fcntl(O_NONBLOCK)", code: errno)
        }
    }

    private func setNoDelay() {
        var one: Int32 = 1
        setsockopt(self.descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    static func port(of address: UnsafePointer<sockaddr>) -> Int {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
        default: return 0
        }
    }

    static func describe(_ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        guard getnameinfo(address, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                          NI_NUMERICHOST | NI_NUMERICSERV) == 0 else { return "" }
        let hostText = String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let serviceText = String(decoding: service.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return hostText.contains(":") ? "[\(hostText)]:\(serviceText)" : "\(hostText):\(serviceText)"
    }
}

/// Owns a pipe that wakes an I/O thread out of `poll` (eventfd is not visible from Swift's Glibc
/// module; a pipe does the same job with one byte).
final class WakePipe: @unchecked Sendable {
    // @unchecked Sendable: `wake()` only writes to a descriptor, which is thread-safe; `drain()` is
    // called by the one I/O thread.
    let readDescriptor: Int32
    private let writeDescriptor: Int32

    init() throws {
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else { throw SocketError(operation: "pipe", code: errno) }
        self.readDescriptor = descriptors[0]
        self.writeDescriptor = descriptors[1]
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
    }

    deinit {
        close(self.readDescriptor)
        close(self.writeDescriptor)
    }

    /// Whether the I/O thread waits in `poll` on this pipe, or is about to: set under the lock of the
    /// inbox it reads, in the same critical section as its last look at that inbox, and cleared as
    /// soon as `poll` returns. A caller that has just put work in that inbox (under the same lock)
    /// then writes to the pipe only while the thread waits: a thread that is running looks at its
    /// inbox again before it waits, so a wake-up written then would only be read and thrown away.
    private let waiting = Atomic<Bool>(false)

    /// Called by the I/O thread under its inbox's lock, having found the inbox empty: it waits next.
    func willWait() {
        self.waiting.store(true, ordering: .releasing)
    }

    /// Called by the I/O thread when `poll` returns, whatever woke it.
    func stoppedWaiting() {
        self.waiting.store(false, ordering: .relaxed)
    }

    /// Wakes the I/O thread if it waits; call it after putting work in its inbox, once the lock is
    /// released. Of the callers that find it waiting, the first writes the byte and the others
    /// write nothing: that one byte wakes it, and it then takes everything in the inbox.
    func wakeIfWaiting() {
        if self.waiting.load(ordering: .acquiring), self.waiting.exchange(false, ordering: .acquiringAndReleasing) {
            self.wake()
        }
    }

    func wake() {
        var byte: UInt8 = 1
        // A full pipe already guarantees a wake-up; EAGAIN is fine.
        _ = write(self.writeDescriptor, &byte, 1)
    }

    /// Empties the pipe. A read that returns less than it asked for emptied it: no second read to
    /// hear EAGAIN (a burst of requests writes one byte, so one read is the rule).
    func drain() {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            while read(self.readDescriptor, buffer.baseAddress, buffer.count) == buffer.count {}
        }
    }
}

/// Accepts connections on `listener` until `stopping()` says so: waits in `poll` for a client or
/// for `waker`, and hands each accepted socket to `accepted`, on the calling thread. Out of
/// descriptors or memory (EMFILE, ENFILE, ENOBUFS) the listener stays readable, so it backs off
/// briefly instead of spinning; pending clients wait in the backlog.
func acceptConnections(on listener: Socket, waker: WakePipe, until stopping: () -> Bool, _ accepted: (Socket) -> Void) {
    var descriptors = [
        pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0),
        pollfd(fd: waker.readDescriptor, events: Int16(POLLIN), revents: 0),
    ]
    while !stopping() {
        descriptors[0].revents = 0
        descriptors[1].revents = 0
        if poll(&descriptors, 2, -1) < 0 && errno != EINTR { break }
        if descriptors[1].revents != 0 { waker.drain() }
        while true {
            let socket: Socket
            do {
                guard let next = try listener.accept() else { break }
                socket = next
            } catch {
                usleep(10_000)
                break
            }
            accepted(socket)
        }
    }
}

/// Monotonic time in nanoseconds, for deadlines and timers.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}
