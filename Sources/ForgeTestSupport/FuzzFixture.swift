internal import ForgeAPNsCore
internal import ForgeCrypto
internal import Foundation

/// Inputs `make fuzz` found, kept as test fixtures, turned into what the fuzz target made of them.
public enum FuzzFixture {
    /// A FuzzProviderToken input of its signed form (a byte 1, a JWT header, a newline, the claims)
    /// as the JWT the target built: header and claims base64url-encoded, signed with
    /// keys-example/AuthKey_FORGEKEY01.p8.
    /// - Parameter path: the fixture file, relative to the package.
    public static func providerToken(_ path: String) throws -> String {
        let input = Array(try Data(contentsOf: PackageRoot.directory.appendingPathComponent(path)))
        let parts = input.dropFirst().split(separator: 0x0a, maxSplits: 1, omittingEmptySubsequences: false)
        let key = try APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
        let signingInput = Base64URL.encode(parts[0]) + "." + Base64URL.encode(parts.count > 1 ? parts[1] : [])
        return signingInput + "." + Base64URL.encode(try key.signature(for: Array(signingInput.utf8)))
    }

    /// A FuzzInboxAPI input, `METHOD\nPATH\nQUERY`, as the request the target made: no query when empty.
    public static func inboxRequest(_ path: String) throws -> (method: String, path: String, query: String?) {
        let input = Array(try Data(contentsOf: PackageRoot.directory.appendingPathComponent(path)))
        let fields = input.split(separator: 0x0a, maxSplits: 2, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        return (fields[0], fields.count > 1 ? fields[1] : "", fields.count > 2 && !fields[2].isEmpty ? fields[2] : nil)
    }
}
