public import Foundation

/// The package's folder, found from this source file, so that tests work from any clone and any
/// working directory.
public enum PackageRoot {
    /// The folder holding Package.swift (this file is Sources/ForgeTestSupport/PackageRoot.swift).
    public static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The path of `relativePath` inside the package, for example "Tests/FaultServer/fault_server.py".
    public static func path(_ relativePath: String) -> String {
        self.directory.appendingPathComponent(relativePath).path
    }
}

/// The test keys, certificates and payloads in keys-example/ (see keys-example/README.md).
public enum KeysExample {
    /// keys-example/ in the package.
    public static let directory = PackageRoot.directory.appendingPathComponent("keys-example")

    /// The path of `name` inside keys-example/, for example "ca.pem" or "payloads/alert.json".
    public static func path(_ name: String) -> String {
        self.directory.appendingPathComponent(name).path
    }
}
