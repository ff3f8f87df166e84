public import ForgeAPNsCore
public import struct Foundation.Date

/// A group's broadcast channel for one app: created once, then every update of the group reaches
/// the members started on it in one broadcast, paced as one activity's pushes are (at most one in
/// flight and one waiting, ``LiveActivityManager/Configuration/minimumInterval`` apart), and backed
/// off on its own when APNs answers 429.
public struct GroupChannel: Hashable, Sendable {
    /// Where the channel is in its life.
    public enum Phase: Hashable, Sendable {
        /// A manager (`owner`) sent the create at `since`; `listedBefore` are the app's channels
        /// just before it. A create has no idempotency key: until its answer comes, and when it
        /// never came, the channel is looked for among the app's channels (one that is new and
        /// belongs to no group is this one), never created blind a second time.
        case creating(owner: String, since: Date, listedBefore: [APNSChannelID])
        /// Created: broadcasts go to it.
        case open(APNSChannelID)
        /// The group ended and its end broadcast went: the channel is deleted next.
        case closing(APNSChannelID)
        /// Deleted (its id never returns).
        case deleted(APNSChannelID)
    }

    public var group: LiveActivityGroupID
    public var bundleID: APNSBundleID
    public var phase: Phase
    /// The pacing of its broadcasts, as an activity's (its counts are broadcasts).
    public var delivery = ActivityDelivery()
    /// How many broadcasts APNs answered with 429 `TooManyRequests`.
    public var throttled = 0
    /// After a 429: no broadcast goes before this date (the wait doubles with each 429 in a row,
    /// from ``LiveActivityManager/Configuration/channelBackoff``, up to a minute).
    public var backoffUntil: Date?
    /// The 429s in a row (reset by an accepted broadcast).
    public var throttledInARow = 0
    /// The store's version of this record (compare-and-set).
    public var version: Int

    public init(group: LiveActivityGroupID, bundleID: APNSBundleID, phase: Phase, version: Int = 0) {
        self.group = group
        self.bundleID = bundleID
        self.phase = phase
        self.version = version
    }

    /// The channel's id, once created.
    public var channelID: APNSChannelID? {
        switch self.phase {
        case .creating: nil
        case .open(let id), .closing(let id), .deleted(let id): id
        }
    }
}

