#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Results go to stdout, diagnostics to stderr, unbuffered by line so pipes see them in order.
enum Output {
    static func result(_ line: String) {
        Self.write(line + "\n", to: STDOUT_FILENO)
    }

    static func diagnostic(_ line: String) {
        Self.write(line + "\n", to: STDERR_FILENO)
    }

    /// Results already laid out as bytes, newlines included: one write for many lines.
    static func results(_ bytes: [UInt8]) {
        Self.write(bytes, to: STDOUT_FILENO)
    }

    private static func write(_ text: String, to descriptor: Int32) {
        Self.write(Array(text.utf8), to: descriptor)
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
