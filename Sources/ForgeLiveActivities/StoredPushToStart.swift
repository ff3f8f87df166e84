internal import ForgeAPNsCore
internal import Foundation

/// A ``PushToStartRecord`` as a durable store's row holds it (see ``StoredActivity``): the key's
/// three parts, the token as lower-case hex, the environment's raw value, dates as milliseconds.
package struct StoredPushToStart: Sendable, Equatable {
    package var installation: String
    package var bundleID: String
    package var attributesType: String
    package var token: String
    package var environment: String
    package var confirmedAt: Int64
    package var sequence: Int64?
    package var deadReason: String?
    /// ``PushToStartRecord/startsSent`` as milliseconds, comma-separated; `nil` for none.
    package var startsSent: String?
    /// ``PushToStartRecord/channels``.
    package var channels: Bool
    package var version: Int64

    package init(
        installation: String, bundleID: String, attributesType: String, token: String, environment: String, confirmedAt: Int64,
        sequence: Int64?, deadReason: String?, startsSent: String? = nil, channels: Bool = false, version: Int64
    ) {
        self.channels = channels
        self.startsSent = startsSent
        self.installation = installation
        self.bundleID = bundleID
        self.attributesType = attributesType
        self.token = token
        self.environment = environment
        self.confirmedAt = confirmedAt
        self.sequence = sequence
        self.deadReason = deadReason
        self.version = version
    }

    /// The row of `record`, with `version` (the one the write gives it).
    package init(_ record: PushToStartRecord, version: Int) {
        self.init(
            installation: record.key.installation.rawValue, bundleID: record.key.bundleID.rawValue, attributesType: record.key.attributesType,
            token: record.token.hexString, environment: record.environment.rawValue, confirmedAt: record.confirmedAt.storedMilliseconds,
            sequence: record.sequence, deadReason: record.deadReason,
            startsSent: record.startsSent.isEmpty ? nil : record.startsSent.map { String($0.storedMilliseconds) }.joined(separator: ","),
            channels: record.channels, version: Int64(version)
        )
    }

    /// The record the row holds.
    /// - Throws: ``LiveActivityError/Code/store`` naming the key and the column that holds no valid value.
    package func record() throws(LiveActivityError) -> PushToStartRecord {
        let record = "push-to-start token \(self.installation)/\(self.bundleID)/\(self.attributesType)"
        let key = PushToStartKey(
            installation: try storedColumn("installation", of: record) { () throws(LiveActivityError) in try InstallationID(self.installation) },
            bundleID: try storedColumn("bundle_id", of: record) { () throws(APNSValidationError) in try APNSBundleID(self.bundleID) },
            attributesType: self.attributesType
        )
        guard let environment = ActivityEnvironment(rawValue: self.environment) else {
            throw LiveActivityError(.store, field: "environment", rule: "the stored \(record) has the unknown environment '\(self.environment)'")
        }
        var starts: [Date] = []
        for part in (self.startsSent ?? "").split(separator: ",") {
            guard let milliseconds = Int64(part) else {
                throw LiveActivityError(.store, field: "starts_sent_ms", rule: "the stored \(record) holds no valid list of start times")
            }
            starts.append(Date(storedMilliseconds: milliseconds))
        }
        return PushToStartRecord(
            key: key, token: try storedColumn("token", of: record) { () throws(APNSValidationError) in try DeviceToken(storedHex: self.token) },
            environment: environment, confirmedAt: Date(storedMilliseconds: self.confirmedAt), sequence: self.sequence,
            deadReason: self.deadReason, startsSent: starts, channels: self.channels, version: Int(self.version)
        )
    }
}
