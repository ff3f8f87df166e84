import ForgeTestSupport
import Foundation
import Testing

/// Every `--help` text of apnsctl, compared with its snapshot in Tests/APNSCtlTests/HelpSnapshots,
/// so that a change to what users read is a deliberate change to those files. Rendered 100
/// columns wide (COLUMNS), as ArgumentParser wraps to the terminal.
///
/// After changing a help text on purpose, accept the new texts with
/// `FORGE_UPDATE_HELP_SNAPSHOTS=1 swift test --filter HelpSnapshotTests` and review the diff.
@Suite("Help texts match their snapshots", .timeLimit(.minutes(2)))
struct HelpSnapshotTests {
    static let commands: [[String]] = [
        [], ["send"], ["lint"], ["serve"], ["doctor"], ["jwt"], ["demo"],
        ["activity"], ["activity", "start"], ["activity", "update"], ["activity", "end"],
        ["channels"], ["channels", "create"], ["channels", "get"], ["channels", "list"], ["channels", "delete"],
        ["campaign"], ["campaign", "create"], ["campaign", "work"], ["campaign", "watch"], ["campaign", "report"],
        ["activities"], ["activities", "report"], ["activities", "start"], ["activities", "update"], ["activities", "end"],
        ["activities", "renew"], ["activities", "list"], ["activities", "show"], ["activities", "prune"], ["activities", "serve"],
    ]

    static let folder = PackageRoot.directory.appendingPathComponent("Tests/APNSCtlTests/HelpSnapshots")

    @Test("apnsctl … --help is the snapshot", arguments: commands)
    func snapshot(_ command: [String]) throws {
        let result = try CommandRunner.run(command + ["--help"], environment: ["COLUMNS": "100", "NO_COLOR": "1"])
        #expect(result.exitCode == 0, "\(result.stderr)")
        let name = (["apnsctl"] + command).joined(separator: "-") + ".txt"
        let file = Self.folder.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment["FORGE_UPDATE_HELP_SNAPSHOTS"] == "1" {
            try FileManager.default.createDirectory(at: Self.folder, withIntermediateDirectories: true)
            try Data(result.stdout.utf8).write(to: file)
            return
        }
        let expected = try String(contentsOf: file, encoding: .utf8)
        guard result.stdout != expected else { return }
        let actual = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        let wanted = expected.split(separator: "\n", omittingEmptySubsequences: false)
        let first = (0..<min(actual.count, wanted.count)).first { actual[$0] != wanted[$0] } ?? min(actual.count, wanted.count)
        Issue.record("""
            `apnsctl \(command.joined(separator: " ")) --help` differs from HelpSnapshots/\(name) from line \(first + 1):
              now:      \(first < actual.count ? String(actual[first]) : "<end>")
              snapshot: \(first < wanted.count ? String(wanted[first]) : "<end>")
            If the change is meant, run FORGE_UPDATE_HELP_SNAPSHOTS=1 swift test --filter HelpSnapshotTests and review the diff.
            """)
    }
}
