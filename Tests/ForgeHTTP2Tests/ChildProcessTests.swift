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

    /// The last reference going away kills the child, and that wait ends with the child's life
    /// (the kernel's view), not at its 10 s bound.
    @Test func droppedChildIsKilled() async throws {
        var child: ChildProcess? = try ChildProcess(executable: Self.shell, arguments: ["-c", "exec sleep 60"])
        let pid = try #require(child?.processIdentifier)
        child = nil
        #expect(Self.hasExited(pid))
    }

    /// Whether `pid` is gone, or a zombie not reaped yet.
    private static func hasExited(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].drop(while: { $0 == " " }).first == "Z"
    }
}
