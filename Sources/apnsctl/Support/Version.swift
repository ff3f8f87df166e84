/// apnsctl's version, written here only: `apnsctl --version` prints it, and `VersionTests` checks
/// that it is CHANGELOG.md's first release heading (`## 0.2.0 — 2026-11-24`), so that a release
/// changes both or the tests fail.
enum APNSCtlVersion {
    static let current = "0.2.0"
}
