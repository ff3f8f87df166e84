import Foundation

/// Flags that may also come from an environment variable: the flag wins when both are set.
enum EnvironmentFallback {
    static func value(_ flag: String?, _ variable: String) -> String? {
        if let flag { return flag }
        guard let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty else { return nil }
        return value
    }
}
