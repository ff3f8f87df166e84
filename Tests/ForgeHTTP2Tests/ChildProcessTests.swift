import ForgeTestSupport
import Foundation
import Testing

/// The test helper that runs servers and tools as children: its waits end when the child ends.
@Suite struct ChildProcessTests {
    private static let shell = URL(fileURLWithPath: "/bin/sh")

    @Test func exitStatusAndOutput() async throws {
        let child = try ChildProcess(executable: Self.shell, arguments: ["-c", "echo out; echo err >&2; exit 3"])
        let result = await child.finish(timeout: .seconds(30))
        #expect(result.exitCode == 3)
        #expect(result.stdout == "out\n")
        #expect(result.stderr == "err\n")
        #expect(!child.isRunning)
    }

    @Test func killedChildReportsTheSignal() async throws {
        let child = try ChildProcess(executable: Self.shell, arguments: ["-c", "exec sleep 60"])
        #expect(child.isRunning)
        #expect(child.kill())
        #expect(!child.isRunning)
        #expect(await child.finish(timeout: .zero).exitCode == SIGKILL)
    }

    /// Foundation learns of an exit only when the child's end of a socket closes, and a process that
    /// inherited that end keeps the exit from it: here a grandchild, in CI a server another test
    /// started at the same moment. The status still comes, from the kernel, while that process lives.
    @Test func exitStatusWhileAnotherProcessHoldsFoundationsSocket() async throws {
        let child = try ChildProcess(
            executable: Self.shell, arguments: ["-c", "sleep 60 </dev/null >/dev/null 2>&1 & echo $!; exit 3"]
        )
        let result = await child.finish(timeout: .seconds(30))
        let holder = try #require(Int32(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        defer { Glibc.kill(holder, SIGKILL) }
        #expect(!Self.hasExited(holder), "the grandchild must still hold the socket for this test to mean anything")
        #expect(result.exitCode == 3)
        #expect(!child.isRunning)
    }

    /// The child's pipes close on exec: a program spawned at that moment without Foundation (which
    /// closes only the descriptors it saw when it prepared) inherits none of them, so this child's
    /// input still ends when the test closes it.
    @Test func pipesAreNotInheritedBySpawnsBesideThem() async throws {
        let child = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/cat"), arguments: [], standardInput: .heldOpen
        )
        var pid: pid_t = 0
        let words: [String] = ["/bin/sleep", "60"]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        #expect(posix_spawn(&pid, "/bin/sleep", nil, nil, arguments, environ) == 0)
        defer {
            Glibc.kill(pid, SIGKILL)
            waitpid(pid, nil, 0)
        }
        child.closeStandardInput()
        let result = await child.finish(timeout: .seconds(10))
        #expect(result.exitCode == 0, "cat still had an open input: \(result)")
    }

    /// The last reference going away kills the child, and that wait ends with the child's life
    /// (the kernel's view), not at its 10 s bound.
    @Test func droppedChildIsKilled() async throws {
        var child: ChildProcess? = try ChildProcess(executable: Self.shell, arguments: ["-c", "exec sleep 60"])
        let pid = try #require(child?.processIdentifier)
        child = nil
        #expect(Self.hasExited(pid))
    }

    /// The child's listening socket is found however many sockets are open before it: `/proc/net/tcp`
    /// lists them all ahead of it, far past the first 4 KB (about 27 lines) that a plain Foundation
    /// read of a `/proc` file returns, as happens when many tests have servers running at once.
    @Test func listeningPortBehindManySockets() async throws {
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        for _ in 0..<300 {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            try #require(socket >= 0)
            sockets.append(socket)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(bound == 0 && listen(socket, 1) == 0)
        }
        let server = try ChildProcess("/usr/sbin/nghttpd", ["-a", "127.0.0.1", "--no-tls", "0"])
        let port = try await server.listeningPort(timeout: .seconds(20))
        #expect(port > 0)
        let connected = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(connected) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let answer = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(connected, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(answer == 0, "nothing accepts on port \(port)")
        server.kill()
    }

    /// Whether `pid` is gone, or a zombie not reaped yet.
    private static func hasExited(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].drop(while: { $0 == " " }).first == "Z"
    }
}
