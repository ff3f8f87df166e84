import ForgeTestSupport
import Foundation

/// The files in Tests/ForgeCryptoTests/Fixtures/ (keys and vectors, with the script that makes them).
enum Fixtures {
    static let directory = PackageRoot.directory.appendingPathComponent("Tests/ForgeCryptoTests/Fixtures")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func text(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }
}
