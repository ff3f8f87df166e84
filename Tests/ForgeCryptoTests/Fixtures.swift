import Foundation

enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func text(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }
}
