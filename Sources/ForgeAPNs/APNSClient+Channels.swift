public import ForgeAPNsCore
internal import struct Foundation.Data
internal import class Foundation.JSONSerialization
internal import ForgeHTTP2

/// How a broadcast channel keeps messages for devices that were offline (fixed at creation).
public enum APNSMessageStoragePolicy: Int, Hashable, Sendable {
    /// No message stored: the higher publish budget; `apns-expiration` must be 0.
    case noMessageStored = 0
    /// The most recent message is stored, for up to 8 hours.
    case mostRecentMessageStored = 1
}

extension APNSClient {
    /// Creates a broadcast channel for `bundleID` (`POST /1/apps/<bundle>/channels`).
    /// - Returns: the new channel's id, from `apns-channel-id`.
    public func createChannel(
        bundleID: APNSBundleID, storagePolicy: APNSMessageStoragePolicy, deadline: ContinuousClock.Instant? = nil
    ) async throws(APNSError) -> APNSChannelID {
        let body = #"{"message-storage-policy":\#(storagePolicy.rawValue),"push-type":"LiveActivity"}"#
        let request = APNSHTTPRequest(method: "POST", path: Self.channelsPath(bundleID), headers: [], body: Array(body.utf8))
        let response = try await self.executeOne(request, pushType: .liveactivity, bundleID: bundleID.rawValue, deadline: self.deadline(deadline),
                                                 channelAPI: true).response
        guard let text = response[header: "apns-channel-id"], let id = try? APNSChannelID(text) else {
            throw APNSError(kind: .transport, status: response.status, detail: "the channel API answered without a valid apns-channel-id")
        }
        return id
    }

    /// Reads a channel's storage policy (`GET /1/apps/<bundle>/channels` with `apns-channel-id`).
    public func channelStoragePolicy(
        _ channel: APNSChannelID, bundleID: APNSBundleID, deadline: ContinuousClock.Instant? = nil
    ) async throws(APNSError) -> APNSMessageStoragePolicy {
        let request = APNSHTTPRequest(method: "GET", path: Self.channelsPath(bundleID),
                                      headers: [APNSHeaderField("apns-channel-id", channel.rawValue)], body: [])
        let response = try await self.executeOne(request, pushType: .liveactivity, bundleID: bundleID.rawValue, deadline: self.deadline(deadline),
                                                 channelAPI: true).response
        guard let object = Self.object(response.body), let raw = object["message-storage-policy"] as? Int,
            let policy = APNSMessageStoragePolicy(rawValue: raw)
        else {
            throw APNSError(kind: .transport, status: response.status, detail: "the channel API answered an unreadable channel")
        }
        return policy
    }

    /// Deletes a channel (`DELETE /1/apps/<bundle>/channels`); its id never returns.
    public func deleteChannel(
        _ channel: APNSChannelID, bundleID: APNSBundleID, deadline: ContinuousClock.Instant? = nil
    ) async throws(APNSError) {
        let request = APNSHTTPRequest(method: "DELETE", path: Self.channelsPath(bundleID),
                                      headers: [APNSHeaderField("apns-channel-id", channel.rawValue)], body: [])
        _ = try await self.executeOne(request, pushType: .liveactivity, bundleID: bundleID.rawValue, deadline: self.deadline(deadline),
                                                 channelAPI: true)
    }

    /// Lists the app's channels (`GET /1/apps/<bundle>/all-channels`). Apple's page also says the
    /// body may be empty; that reads as no channels.
    public func channels(bundleID: APNSBundleID, deadline: ContinuousClock.Instant? = nil) async throws(APNSError) -> [APNSChannelID] {
        let request = APNSHTTPRequest(method: "GET", path: "/1/apps/\(bundleID.rawValue)/all-channels", headers: [], body: [])
        let response = try await self.executeOne(request, pushType: .liveactivity, bundleID: bundleID.rawValue, deadline: self.deadline(deadline),
                                                 channelAPI: true).response
        guard !response.body.isEmpty else { return [] }
        guard let object = Self.object(response.body), let ids = object["channels"] as? [String] else {
            throw APNSError(kind: .transport, status: response.status, detail: "the channel API answered an unreadable list")
        }
        return ids.compactMap { try? APNSChannelID($0) }
    }

    private static func channelsPath(_ bundleID: APNSBundleID) -> String { "/1/apps/\(bundleID.rawValue)/channels" }

    private func deadline(_ deadline: ContinuousClock.Instant?) -> MonotonicInstant {
        MonotonicInstant.deadline(deadline, orAfter: self.configuration.timeouts.request, from: .now)
    }

    private static func object(_ body: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}
