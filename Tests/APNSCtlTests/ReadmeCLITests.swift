import ForgeTestSupport
import Foundation
import Testing

/// The ```sh blocks of the README's section on `apnsctl`, in order.
private func cliBlocks() throws -> [String] {
    let readme = try String(contentsOf: PackageRoot.directory.appendingPathComponent("README.md"), encoding: .utf8)
    let start = try #require(readme.range(of: "## Sending a push with `apnsctl`"))
    let section = readme[start.upperBound...]
    let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
    return MarkdownBlocks.fenced(section[..<end], language: "sh")
}

@Suite("README: the apnsctl section runs as pasted", .serialized, .timeLimit(.minutes(2)))
struct ReadmeCLITests {
    @Test("The local server of the README, then its client session: every command succeeds, 1000 verdicts accepted")
    func runsAsPasted() throws {
        let blocks = try cliBlocks()
        try #require(blocks.count >= 3, "expected the build, serve and client blocks first: \(blocks)")
        #expect(blocks[0].contains("swift build -c release --product apnsctl"))
        let folder = try TemporaryFolder("readme-cli")
        defer { folder.remove() }
        try FileManager.default.createSymbolicLink(
            at: folder.url.appendingPathComponent("keys-example"), withDestinationURL: PackageRoot.directory.appendingPathComponent("keys-example")
        )
        // The built apnsctl first on PATH, as the build block's export puts the release one.
        let binaries = CommandRunner.binary.deletingLastPathComponent().path
        let environment = CommandRunner.environment(["PATH": binaries + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")])
        // The one change: tests listen on a port the system picks, not 2197.
        let serve = blocks[1].replacingOccurrences(of: "\\\n", with: " ")
        #expect(serve.hasPrefix("apnsctl serve --port 2197 "), "\(serve)")
        let server = try ServerProcess(
            executable: URL(fileURLWithPath: "/bin/bash"),
            arguments: ["-c", "exec " + serve.replacingOccurrences(of: "--port 2197", with: "--port 0")],
            environment: environment, currentDirectory: folder.url, reportProblem: { Issue.record(Comment(rawValue: $0)) }
        )
        #expect(blocks[2].contains("APNS_URL=https://localhost:2197"))
        let session = blocks[2].replacingOccurrences(of: "localhost:2197", with: "localhost:\(server.port)")
        let result = try ChildProcess.run(
            URL(fileURLWithPath: "/bin/bash"), ["-e", "-o", "pipefail", "-c", session], environment: environment,
            currentDirectory: folder.url, timeout: .seconds(90)
        )
        let served = server.stop()
        #expect(result.exitCode == 0, "\(result.stdout)\n\(result.stderr)")
        let verdicts = try String(contentsOfFile: folder.url.appendingPathComponent("verdicts.ndjson").path, encoding: .utf8)
            .split(separator: "\n").map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(verdicts.count == 1001)
        #expect(verdicts.dropLast().allSatisfy { $0["outcome"] as? String == "accepted" })
        #expect(verdicts.last?["total"] as? Int == 1000 && verdicts.last?["accepted"] as? Int == 1000)
        // The one-token sends, the dry run's request and the doctor's verdict.
        #expect(result.stdout.components(separatedBy: "\"outcome\":\"accepted\"").count - 1 == 2, "\(result.stdout)")
        #expect(result.stdout.contains(":path: /3/device/7c1d3f0e"), "\(result.stdout)")
        #expect(result.stdout.contains("all checks passed"), "\(result.stdout)")
        #expect(served.exitCode == 0, "\(served.stderr)")
    }
}
