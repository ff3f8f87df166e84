/// apnsctl's version, written here only: `apnsctl --version` prints it with the commit it was built
/// from, and InstallTests checks that it is CHANGELOG.md's first release heading
/// (`## 0.2.0 — 2026-11-24`), so that a release changes both or the tests fail.
enum APNSCtlVersion {
    static let current = "0.2.0"

    /// The commit a release build was made from. Empty in the repository: `make dist`
    /// (Scripts/dist.sh) builds from `git archive HEAD` and writes the commit here in that copy
    /// only, so a binary that names a commit was built from exactly that commit's files.
    static let commit = ""

    /// What `apnsctl --version` prints: `0.2.0 (commit 76afe1e2f9c1)`, or
    /// `0.2.0 (development build)` for a build of a checkout, whose files may differ from any commit.
    static var description: String {
        commit.isEmpty ? "\(current) (development build)" : "\(current) (commit \(commit))"
    }
}
