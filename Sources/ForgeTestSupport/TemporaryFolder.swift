public import Foundation
import Synchronization

/// A fresh folder under the system's temporary directory for one test, removed by ``remove()``.
public struct TemporaryFolder: Sendable {
    /// The folder.
    public let url: URL

    private init(url: URL) {
        self.url = url
    }

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

extension TemporaryFolder {
    /// One folder for the whole test process, removed as the process exits: for helpers that hand
    /// out a file and cannot know when the test is done with it. A test that can remove its own
    /// folder keeps using ``init(_:)`` and ``remove()``.
    public static let process: TemporaryFolder = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("forge-\(getpid())-\(UUID().uuidString.prefix(8))")
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            fatalError("cannot create the test process's folder \(url.path): \(error)")
        }
        atexit { TemporaryFolder.process.remove() }
        return TemporaryFolder(url: url)
    }()

    private static let made = Atomic<Int>(0)

    /// A new folder inside ``process`` (so removed with it), named `<prefix>-<n>`: short, as paths
    /// end up in messages that apnsctl shortens past 80 characters.
    public static func inProcess(_ prefix: String) throws -> URL {
        let number = Self.made.wrappingAdd(1, ordering: .relaxed).newValue
        let url = Self.process.url.appendingPathComponent("\(prefix)-\(number)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        return url
    }
}
