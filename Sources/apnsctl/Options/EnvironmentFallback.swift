import ArgumentParser
import ForgeAPNsCore
import Foundation

/// Flags that may also come from an environment variable: the flag wins when both are set.
enum EnvironmentFallback {
    static func value(_ flag: String?, _ variable: String) -> String? {
        if let flag { return flag }
        guard let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty else { return nil }
        return value
    }

    /// `--topic` (or `APNS_TOPIC`) as a bundle id.
    /// - Throws: `ValidationError` (64) when neither is given, ``CLIFailure`` (65) for a bad bundle id.
    static func bundleID(_ flag: String?) throws -> APNSBundleID {
        guard let text = Self.value(flag, "APNS_TOPIC") else {
            throw ValidationError("Missing --topic (or APNS_TOPIC): the app's bundle id.")
        }
        do { return try APNSBundleID(text) } catch { throw CLIFailure.badData("--topic", error, value: text) }
    }
}
