internal import Foundation

/// A `.apns` file, the format `xcrun simctl push` and the Simulator's drag and drop read: one JSON
/// object with a top-level `aps`, and optionally the app it is for under `"Simulator Target Bundle"`
/// (Xcode's "Testing notifications using the Simulator" documentation and `xcrun simctl push --help`).
/// One fixture then drives the Simulator on a Mac and ForgePush on Linux.
package struct APNSSimulatorFile: Sendable, Hashable {
    /// The key naming the app's bundle id.
    package static let targetBundleKey = "Simulator Target Bundle"
    /// The most bytes a file may have: a remote notification's payload limit.
    package static let maximumSize = 4096
    /// The push types a `.apns` file stands for: notifications to an app, as simctl delivers them.
    package static let pushTypes: [APNSPushType] = [.alert, .background, .liveactivity]

    /// The bundle id under ``targetBundleKey``, if the file names one.
    package var targetBundle: String?
    /// The payload as APNs gets it: the file's object without ``targetBundleKey``.
    package var payload: [UInt8]

    /// Why a file is not a `.apns` file: the rule it breaks.
    package struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
        package var rule: String
        package var description: String { self.rule }
    }

    /// Reads a `.apns` file's bytes.
    /// - Throws: ``Problem`` when it is larger than 4096 bytes, not one JSON object, has no `aps`
    ///   object, or names its bundle with something other than a string.
    package init(contents: [UInt8]) throws(Problem) {
        guard contents.count <= Self.maximumSize else {
            throw Problem(rule: "must be at most \(Self.maximumSize) bytes, as simctl allows (it is \(contents.count))")
        }
        var scanner = JSONShapeScanner(contents)
        if let problem = scanner.validateObject() { throw Problem(rule: "must be one JSON object: \(problem.detail)") }
        guard var object = (try? JSONSerialization.jsonObject(with: Data(contents))) as? [String: Any] else {
            throw Problem(rule: "must be one JSON object")
        }
        guard object["aps"] is [String: Any] else { throw Problem(rule: "must have a top-level \"aps\" object, as simctl requires") }
        if let target = object.removeValue(forKey: Self.targetBundleKey) {
            guard let bundle = target as? String, !bundle.isEmpty else {
                throw Problem(rule: "\"\(Self.targetBundleKey)\" must be a bundle id (a string)")
            }
            self.targetBundle = bundle
            // The object without the simulator's key: re-encoded, keys sorted.
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
            self.payload = Array(data)
        } else {
            self.targetBundle = nil
            self.payload = contents
        }
    }

    /// A `.apns` file for `payload` (a JSON object) and the app `bundleID`: the payload with
    /// ``targetBundleKey`` added, pretty-printed with sorted keys, ending in a newline.
    package static func render(payload: [UInt8], bundleID: String) -> [UInt8]? {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] else { return nil }
        object[Self.targetBundleKey] = bundleID
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
        else { return nil }
        return Array(data) + [0x0a]
    }
}
