import ForgeTestSupport
import Foundation
import Testing

/// `make install`'s result: the version it reports is CHANGELOG.md's release, and Scripts/install.sh
/// (which `make install` runs after building) puts the binary, the man page and the completions where
/// they belong, each usable, and `--uninstall` takes them away. The tests install the debug build
/// they already have: `make install` itself would run `swift build`, which waits for the lock the
/// running `swift test` holds on .build/.
///
/// The limit counts from when the test is started, not from when it gets a thread: under
/// ThreadSanitizer on 2 cores the CLI suites' process runs queue behind one another (see DemoTests).
@Suite("make install: apnsctl, its man page and completions; the version is the CHANGELOG's", .timeLimit(.minutes(4)))
struct InstallTests {
    /// What `make install` installs, under the prefix.
    static let installed = [
        "bin/apnsctl", "share/man/man1/apnsctl.1", "share/bash-completion/completions/apnsctl",
        "share/zsh/site-functions/_apnsctl", "share/fish/vendor_completions.d/apnsctl.fish",
    ]

    /// CHANGELOG.md's first release heading, `## 0.2.0 — 2026-11-24`: its version.
    static func changelogVersion() throws -> String {
        let changelog = try String(contentsOfFile: PackageRoot.path("CHANGELOG.md"), encoding: .utf8)
        let heading = #/^## (\d+\.\d+\.\d+) — \d{4}-\d{2}-\d{2}$/#.anchorsMatchLineEndings()
        let match = try #require(changelog.firstMatch(of: heading), "CHANGELOG.md has no `## X.Y.Z — YYYY-MM-DD` heading")
        return String(match.output.1)
    }

    /// What a build of the checkout prints for `--version`: the tests never run a `make dist` binary,
    /// which names its commit instead (Scripts/dist-test.sh checks that one).
    static func developmentVersion() throws -> String {
        "\(try changelogVersion()) (development build)\n"
    }

    /// The development version, or for a release under test (FORGE_APNSCTL) the CHANGELOG's version
    /// and a commit.
    static func isExpectedVersion(_ printed: String) throws -> Bool {
        guard CommandRunner.testsARelease else { return printed == (try Self.developmentVersion()) }
        let prefix = "\(try changelogVersion()) (commit "
        guard printed.hasPrefix(prefix), printed.hasSuffix(")\n") else { return false }
        let commit = printed.dropFirst(prefix.count).dropLast(2)
        return commit.count == 12 && commit.allSatisfy(\.isHexDigit)
    }

    @Test("apnsctl --version is CHANGELOG.md's first release, and a build of the checkout says it is a development build")
    func versionIsTheChangelogs() throws {
        let result = try CommandRunner.run(["--version"])
        #expect(result.exitCode == 0)
        #expect(try Self.isExpectedVersion(result.stdout), "\(result.stdout)")
    }

    @Test("Scripts/install.sh installs the binary, a man page that renders, and bash/zsh/fish completions; --uninstall removes them")
    func installAndUninstall() throws {
        let folder = try TemporaryFolder("apnsctl-install")
        defer { folder.remove() }
        let prefix = folder.url.appendingPathComponent("prefix with space")
        // generate-manual writes into the build folder (`<scratch>/<triple>/debug/apnsctl` is the binary's
        // path); a sanitizer run's build folder has none, the package's .build/ has (make sanitize makes it).
        let relative = "plugins/GenerateManual/outputs/apnsctl/apnsctl.1"
        let scratch = CommandRunner.binary.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let candidates = [scratch.appendingPathComponent(relative).path, PackageRoot.path(".build/" + relative)]
        let manual = try #require(
            candidates.first { FileManager.default.fileExists(atPath: $0) },
            "no man page at \(candidates.joined(separator: " or ")): run `make manual CONFIGURATION=debug` (make test does)"
        )
        let install = try ChildProcess.run(
            URL(fileURLWithPath: PackageRoot.path("Scripts/install.sh")), [prefix.path, CommandRunner.binary.path, manual],
            mergesStandardError: true, timeout: .seconds(30)
        )
        try #require(install.exitCode == 0, "install.sh: \(install.stdout)")
        for file in Self.installed {
            let path = prefix.appendingPathComponent(file).path
            #expect(FileManager.default.fileExists(atPath: path), "\(file) not installed")
            #expect(install.stdout.contains("installed \(path)"))
        }

        // The installed binary, run from a folder far from the checkout, and with nothing in PATH but itself.
        let elsewhere = folder.url.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let binary = prefix.appendingPathComponent("bin/apnsctl")
        let version = try CommandRunner.run(["--version"], binary: binary, currentDirectory: elsewhere)
        #expect(try version.exitCode == 0 && Self.isExpectedVersion(version.stdout), "\(version.stdout)\(version.stderr)")

        // The man page: groff's mdoc renders it without a warning, and man reads it; it is this
        // apnsctl's (it knows `demo --html`).
        let page = prefix.appendingPathComponent("share/man/man1/apnsctl.1").path
        let groff = try runTool(["groff", "-mdoc", "-Tutf8", "-ww", "-z", page])
        #expect(groff.status == 0 && groff.output.isEmpty, "groff: \(groff.output)")
        let man = try ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/env"), ["MANPAGER=cat", "MANWIDTH=100", "man", "--warnings", "-l", page], timeout: .seconds(30)
        )
        #expect(man.exitCode == 0 && man.stderr.isEmpty, "man: \(man.stderr)")
        let rendered = man.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(rendered.contains("APNSCTL(1)"))
        #expect(rendered.contains("apnsctl — Send Apple push notifications and Live Activity updates from a shell."))
        #expect(rendered.contains("With --html FILE it also writes the timeline"))

        // The completions: bash parses its script; each names apnsctl as its shells expect.
        let bash = prefix.appendingPathComponent("share/bash-completion/completions/apnsctl").path
        let bashCheck = try runTool(["bash", "-n", bash])
        #expect(bashCheck.status == 0, "bash -n: \(bashCheck.output)")
        #expect(try String(contentsOfFile: bash, encoding: .utf8).contains("complete -o filenames -F _apnsctl apnsctl"))
        let zsh = try String(contentsOfFile: prefix.appendingPathComponent("share/zsh/site-functions/_apnsctl").path, encoding: .utf8)
        #expect(zsh.hasPrefix("#compdef apnsctl"))
        let fish = try String(contentsOfFile: prefix.appendingPathComponent("share/fish/vendor_completions.d/apnsctl.fish").path, encoding: .utf8)
        #expect(fish.contains("complete -c 'apnsctl'") || fish.contains("complete -c apnsctl"))
        #expect(fish.contains("demo"))

        let uninstall = try ChildProcess.run(
            URL(fileURLWithPath: PackageRoot.path("Scripts/install.sh")), ["--uninstall", prefix.path], mergesStandardError: true,
            timeout: .seconds(30)
        )
        #expect(uninstall.exitCode == 0, "\(uninstall.stdout)")
        for file in Self.installed {
            #expect(!FileManager.default.fileExists(atPath: prefix.appendingPathComponent(file).path), "\(file) left behind")
        }
    }

    @Test("install.sh refuses a missing binary or man page, naming it (exit 66), and wrong arguments (exit 64)")
    func refuses() throws {
        let folder = try TemporaryFolder("apnsctl-install")
        defer { folder.remove() }
        let script = URL(fileURLWithPath: PackageRoot.path("Scripts/install.sh"))
        let missing = folder.url.appendingPathComponent("no-apnsctl").path
        let noBinary = try ChildProcess.run(script, [folder.url.path, missing, missing], mergesStandardError: true, timeout: .seconds(30))
        #expect(noBinary.exitCode == 66 && noBinary.stdout.contains("\(missing) is not an executable"), "\(noBinary.stdout)")
        let noManual = try ChildProcess.run(
            script, [folder.url.path, CommandRunner.binary.path, missing], mergesStandardError: true, timeout: .seconds(30)
        )
        #expect(noManual.exitCode == 66 && noManual.stdout.contains("no man page at \(missing)"), "\(noManual.stdout)")
        let usage = try ChildProcess.run(script, [folder.url.path], mergesStandardError: true, timeout: .seconds(30))
        #expect(usage.exitCode == 64 && usage.stdout.contains("usage:"))
        #expect(!FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("bin").path))
    }
}
