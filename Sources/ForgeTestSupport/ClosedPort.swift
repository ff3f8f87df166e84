#if canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 that refuses every connection for as long as this value is kept:
/// a socket is bound to it but never listens, so a connect gets a reset (ECONNREFUSED), and
/// no other process or test running in parallel can listen on it, as it could on a port
/// that ``ProxyProcess/freePort()`` released. Keep it until the test ends (``close()``).
public final class ClosedPort: Sendable {
    /// The port, refused while this value lives.
    public let port: Int
    private let descriptor: Int32

    public init() throws {
        let descriptor = try Self.boundSocket()
        do {
            self.port = try Self.port(of: descriptor)
        } catch {
            _ = Glibc.close(descriptor)
            throw error
        }
        self.descriptor = descriptor
    }

    /// Releases the port; call it at the end of the test, which also keeps the value alive until then.
    public func close() {
        _ = Glibc.close(self.descriptor)
    }

    /// A TCP socket bound to 127.0.0.1 on a port the kernel picks, without SO_REUSEADDR.
    static func boundSocket() throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ChildProcessError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard bound else {
            let error = errno
            _ = Glibc.close(descriptor)
            throw ChildProcessError("bind: errno \(error)")
        }
        return descriptor
    }

    static func port(of descriptor: Int32) throws -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) == 0 }
        }
        guard named else { throw ChildProcessError("getsockname: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
