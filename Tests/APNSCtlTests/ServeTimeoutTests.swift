import ForgeTestSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("apnsctl serve: its own handshake and request timeouts", .timeLimit(.minutes(2)))
struct ServeTimeoutTests {
    @Test("serve --help documents --handshake-timeout and --request-timeout with their defaults")
    func serveHelp() throws {
        let help = try CommandRunner.run(["serve", "--help"])
        #expect(help.exitCode == 0)
        let text = help.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        #expect(text.contains("--handshake-timeout <handshake-timeout>"), "\(help.stdout)")
        #expect(text.contains("--request-timeout <request-timeout>"), "\(help.stdout)")
        #expect(text.contains("REFUSED_STREAM; 0: never. (default: 10.0)"), "\(help.stdout)")
        #expect(text.contains("before it is closed. (default: 10.0)"), "\(help.stdout)")
        let bad = try CommandRunner.run(["serve", "--h2c", "--port", "0", "--request-timeout", "-1"])
        #expect(bad.exitCode == 64 && bad.stderr.contains("--request-timeout"), "\(bad.stderr)")
    }

    @Test("serve closes a connection that never sends the HTTP/2 preface (--handshake-timeout)")
    func silentConnection() throws {
        let server = try ServerProcess(["--h2c", "--quiet", "--handshake-timeout", "0.2"])
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(server.port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        // Read (the server's SETTINGS, maybe a GOAWAY) until the server closes; at most 10 s in all.
        var closed = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(10)
        while !closed, ContinuousClock.now < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            closed = count <= 0
        }
        #expect(closed, "the server kept a silent connection open")
        let stopped = server.stop()
        #expect(stopped.exitCode == 0, "\(stopped.stderr)")
    }
}
