import ArgumentParser
import ForgeAPNsCore

/// Which APNs environment to talk to.
struct EndpointOptions: ParsableArguments {
    enum Environment: String, CaseIterable, ExpressibleByArgument {
        case production, sandbox
    }

    @Option(name: .long, help: "production or sandbox (or APNS_ENVIRONMENT); production when unset.")
    var environment: Environment?

    /// The chosen environment.
    /// - Throws: `ValidationError` for an unknown `APNS_ENVIRONMENT`.
    func resolved() throws -> APNSEnvironment {
        let text = EnvironmentFallback.value(self.environment?.rawValue, "APNS_ENVIRONMENT") ?? "production"
        switch Environment(rawValue: text) {
        case .production: return .production
        case .sandbox: return .sandbox
        case nil: throw ValidationError("APNS_ENVIRONMENT must be production or sandbox (got '\(text)').")
        }
    }
}
