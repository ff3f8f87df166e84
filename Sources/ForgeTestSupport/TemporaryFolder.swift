public import Foundation

/// A fresh folder under the system's temporary directory for one test, removed by ``remove()``.
public struct TemporaryFolder: Sendable {
    /// The folder.
    public let url: URL

    /// Creates `<tmp>/<prefix>-<UUID>`.
    public init(_ prefix: String) throws {
        self.url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.url, withIntermediateDirectories: true)
    }

    /// The folder's path.
    public var path: String { self.url.path }

    /// The path of `name` in the folder; with `contents`, the file is written first.
    @discardableResult
    public func file(_ name: String, contents: String? = nil) throws -> String {
        let file = self.url.appendingPathComponent(name)
        if let contents { try Data(contents.utf8).write(to: file) }
        return file.path
    }

    /// Deletes the folder and what it holds.
    public func remove() {
        try? FileManager.default.removeItem(at: self.url)
    }
}
