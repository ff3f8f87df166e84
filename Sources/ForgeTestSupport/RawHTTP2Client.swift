#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A cleartext HTTP/2 client that writes frames by hand, for tests that must do what a
/// well-behaved client never does (stall mid-request, skip the preface, break a rule). Every read
/// waits at most `bound` in all, so a server that never acts fails the test instead of hanging it.
public final class RawHTTP2Client {
    /// One frame as read from the server.
    public struct Frame: Sendable {
        public var type: UInt8
        public var flags: UInt8
        public var streamID: UInt32
        public var payload: [UInt8]
    }

    /// The client connection preface.
    public static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// The longest a read waits for the server.
    public static let bound = Duration.seconds(10)

    private let descriptor: Int32
    private var isOpen = true

    /// Connects to 127.0.0.1 at `port` (blocking, loopback only).
    public init(port: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawHTTP2Error(operation: "socket", code: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw RawHTTP2Error(operation: "connect", code: code)
        }
        self.descriptor = descriptor
    }

    deinit { if self.isOpen { close(self.descriptor) } }

    /// Closes with a reset (SO_LINGER 0), as a client that vanished would.
    public func abort() {
        guard self.isOpen else { return }
        self.isOpen = false
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(self.descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(self.descriptor)
    }

    /// A frame: 9-byte header, then `payload`.
    public static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32, payload: [UInt8] = []) -> [UInt8] {
        let length = UInt32(payload.count)
        var bytes: [UInt8] = [UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)]
        bytes += [type, flags]
        bytes += [UInt8(truncatingIfNeeded: stream >> 24) & 0x7F, UInt8(truncatingIfNeeded: stream >> 16)]
        bytes += [UInt8(truncatingIfNeeded: stream >> 8), UInt8(truncatingIfNeeded: stream)]
        return bytes + payload
    }

    /// An HPACK block of literals without indexing, new names (names and values under 127 bytes).
    public static func headers(_ fields: [(String, String)]) -> [UInt8] {
        var block: [UInt8] = []
        for (name, value) in fields {
            block += [0x00, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
        }
        return block
    }

    /// Writes all of `bytes`.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(self.descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw RawHTTP2Error(operation: "write", code: errno)
            }
            offset += written
        }
    }

    /// Reads frames until `done` holds, the server closes the connection (or resets it), or
    /// ``bound`` passes.
    /// - Returns: the frames, and whether the server closed the connection.
    public func read(until done: ([Frame]) -> Bool) -> (frames: [Frame], closed: Bool) {
        var buffer: [UInt8] = []
        var frames: [Frame] = []
        let deadline = ContinuousClock.now + Self.bound
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while !done(frames), ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { Glibc.read(self.descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            if count <= 0 { return (frames, true) }  // end of stream, or ECONNRESET: closed too
            buffer += chunk[0..<count]
            while buffer.count >= 9 {
                let length = buffer[0..<3].reduce(0) { $0 << 8 | Int($1) }
                guard buffer.count >= 9 + length else { break }
                let stream = buffer[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF
                frames.append(Frame(type: buffer[3], flags: buffer[4], streamID: stream, payload: Array(buffer[9..<(9 + length)])))
                buffer.removeFirst(9 + length)
            }
        }
        return (frames, false)
    }
}

/// A socket call of ``RawHTTP2Client`` failed.
public struct RawHTTP2Error: Error, CustomStringConvertible {
    public var operation: String
    public var code: Int32
    public var description: String { "\(self.operation): errno \(self.code)" }
}
