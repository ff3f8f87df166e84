import ArgumentParser
import ForgeAPNsCore
import ForgeLoopback

/// An APNs environment as `--environment` and `APNS_ENVIRONMENT` name it, for `send` (where the
/// pushes go) and `serve` (the environment the local server plays).
enum EnvironmentName: String, CaseIterable, ExpressibleByArgument {
    /// `development` is Apple's (and APNSwift's, gorush's) name for the sandbox.
    case production, sandbox, development

    /// `text` as an environment, or an error that suggests the one meant (`prod`: `production`).
    static func parse(_ text: String) throws -> EnvironmentName {
        if let environment = EnvironmentName(rawValue: text) { return environment }
        let names = Self.allCases.map(\.rawValue)
        let hint = DidYouMean.suggestion(for: text, among: names).map { "did you mean '\($0)'? " } ?? ""
        throw ValidationError("\(hint)(production, sandbox or development)")
    }

    var isSandbox: Bool { self != .production }

    /// The name APNs itself uses: `development` is the sandbox.
    var canonical: String { self.isSandbox ? "sandbox" : "production" }

    /// Apple's endpoint of this environment.
    var endpoint: APNSEnvironment { self.isSandbox ? .sandbox : .production }

    /// The environment a local server and its phones play.
    var local: LocalAPNSConfiguration.Environment { self.isSandbox ? .sandbox : .production }
}
