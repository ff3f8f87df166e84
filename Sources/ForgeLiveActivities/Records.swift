public import ForgeAPNsCore
public import struct Foundation.Date

/// The APNs environment a token belongs to (a build from Xcode: sandbox; TestFlight and the App
/// Store: production).
public enum ActivityEnvironment: String, Hashable, Sendable, Codable {
    case sandbox
    case production
}

/// Where a managed Live Activity is in its life.
public enum ActivityState: Hashable, Sendable, CustomStringConvertible {
    /// The start was sent through the push-to-start token; the update token has not come yet.
    case starting
    /// Running: updates go to its update token.
    case active
    /// Its last `stale-date` has passed (it still takes updates).
    case stale
    /// An end waits for the update token.
    case ending
    /// Ended (by the backend, on the device, or by iOS after its maximum age): nothing more is sent.
    case ended
    /// Its token is dead (`Unregistered`, `ExpiredToken`, `BadDeviceToken`, `DeviceTokenNotForTopic`):
    /// nothing more is sent. `reason` says which.
    case dead(reason: String)

    /// The state's name: `starting`, `active`, `stale`, `ending`, `ended`, `dead`.
    public var name: String {
        switch self {
        case .starting: "starting"
        case .active: "active"
        case .stale: "stale"
        case .ending: "ending"
        case .ended: "ended"
        case .dead: "dead"
        }
    }

    /// Whether pushes still go to it.
    public var isLive: Bool {
        switch self {
        case .starting, .active, .stale, .ending: true
        case .ended, .dead: false
        }
    }

    public var description: String {
        if case .dead(let reason) = self { return "dead (\(reason))" }
        return self.name
    }
}

/// A push the manager holds for an activity until its update token arrives: only the latest is
/// kept, and an end replaces any update.
public struct HeldPush: Hashable, Sendable {
    /// `update` or `end`.
    public var event: String
    /// The content state, as JSON.
    public var contentState: [UInt8]
    /// For an end: when the activity leaves the Lock Screen.
    public var dismissalDate: Date?
    /// When the backend asked for it: its `timestamp`.
    public var requestedAt: Date

    /// A held push, as a ``LiveActivityStore`` reads it back.
    public init(event: String, contentState: [UInt8], dismissalDate: Date?, requestedAt: Date) {
        self.event = event
        self.contentState = contentState
        self.dismissalDate = dismissalDate
        self.requestedAt = requestedAt
    }
}

/// A renewal under way (see ``LiveActivityManager/renew(activity:alert:)``).
public struct Renewal: Hashable, Sendable {
    /// The update token of the activity being replaced: it gets the end once the successor's token
    /// arrives.
    public var replacedToken: DeviceToken
    /// When the successor's start was sent.
    public var startedAt: Date

    public init(replacedToken: DeviceToken, startedAt: Date) {
        self.replacedToken = replacedToken
        self.startedAt = startedAt
    }
}

/// One step in a managed activity's life, as ``ManagedActivity/history`` keeps it.
public struct ActivityHistoryEntry: Hashable, Sendable {
    /// When it happened (the manager's clock).
    public var at: Date
    /// What happened: `registered`, `start_sent`, `update_token`, `held`, `held_sent`, `renewal_started`,
    /// `renewed`, `ended`, `stale`, `dead`.
    public var event: String
    /// The details in words: the token (its first 8 digits), the apns-id, the why.
    public var detail: String

    public init(at: Date, event: String, detail: String) {
        self.at = at
        self.event = event
        self.detail = detail
    }
}

/// One Live Activity in the registry, keyed by the backend's id.
public struct ManagedActivity: Hashable, Sendable {
    public var id: LiveActivityID
    public var bundleID: APNSBundleID
    /// The Swift type of its attributes (`aps.attributes-type`).
    public var attributesType: String
    /// The installation it runs on, when known.
    public var installation: InstallationID?
    /// Its update token (the latest reported wins); `nil` until the app reports one.
    public var updateToken: DeviceToken?
    /// The broadcast channel it listens to, if any: its group's channel for its app, when it was
    /// started on it (then its group's updates reach it in one broadcast).
    public var channelID: APNSChannelID?
    /// The group it belongs to (``LiveActivityManager/request(groupUpdate:contentState:staleDate:alert:relevanceScore:importance:)``
    /// updates every member at once).
    public var group: LiveActivityGroupID?
    public var state: ActivityState
    /// When it was started (or registered, for one the app started itself).
    public var startedAt: Date
    /// The last content state sent, as JSON.
    public var lastContentState: [UInt8]?
    /// The `timestamp` of the last push sent: later pushes never carry an older one.
    public var lastTimestamp: Date?
    /// The last `stale-date` sent.
    public var staleDate: Date?
    /// The push waiting for the update token.
    public var held: HeldPush?
    /// The attributes it was started with, as JSON (a renewal starts its successor with them).
    public var attributes: [UInt8]?
    /// A renewal under way: its successor was started, and the update token it had then is the
    /// one to end once the successor's arrives.
    public var renewal: Renewal?
    /// How many times it was renewed.
    public var renewals = 0
    /// The highest report sequence applied to it.
    public var reportSequence: Int64?
    /// Why it ended or died, in words.
    public var why: String?
    /// Its changes of state and token, oldest first: the last ``historyLimit`` are kept. Updates
    /// sent to a running activity are not listed (``lastTimestamp`` says when the last one went).
    public var history: [ActivityHistoryEntry] = []
    /// The pacing of the pushes requested through ``LiveActivityManager/request(update:contentState:staleDate:alert:relevanceScore:importance:)``
    /// and ``LiveActivityManager/request(end:contentState:dismissalDate:)``.
    public var delivery = ActivityDelivery()
    /// The store's version of this record: each write increases it (compare-and-set).
    public var version: Int

    /// How many entries ``history`` keeps.
    public static let historyLimit = 32

    /// Adds an entry to ``history``, dropping the oldest beyond ``historyLimit``.
    public mutating func record(_ event: String, _ detail: String, at date: Date) {
        self.history.append(ActivityHistoryEntry(at: date, event: event, detail: detail))
        if self.history.count > Self.historyLimit { self.history.removeFirst(self.history.count - Self.historyLimit) }
    }

    public init(
        id: LiveActivityID, bundleID: APNSBundleID, attributesType: String, installation: InstallationID?, state: ActivityState,
        startedAt: Date, version: Int = 0
    ) {
        self.id = id
        self.bundleID = bundleID
        self.attributesType = attributesType
        self.installation = installation
        self.state = state
        self.startedAt = startedAt
        self.version = version
    }
}

/// What a push-to-start token is for: an app install and an attributes type.
public struct PushToStartKey: Hashable, Sendable, CustomStringConvertible {
    public var installation: InstallationID
    public var bundleID: APNSBundleID
    public var attributesType: String

    public init(installation: InstallationID, bundleID: APNSBundleID, attributesType: String) {
        self.installation = installation
        self.bundleID = bundleID
        self.attributesType = attributesType
    }

    public var description: String { "\(self.installation)/\(self.bundleID)/\(self.attributesType)" }
}

/// A push-to-start token, as the app last reported it.
public struct PushToStartRecord: Hashable, Sendable {
    public var key: PushToStartKey
    public var token: DeviceToken
    public var environment: ActivityEnvironment
    /// When the app last reported (confirmed) it.
    public var confirmedAt: Date
    /// The highest report sequence applied.
    public var sequence: Int64?
    /// Why APNs refused it for good (the reason), if it did: no start goes to it again.
    public var deadReason: String?
    /// When starts went to this app install and attributes type, within the start budget's window
    /// (``LiveActivityManager/Configuration/startBudget``; older ones are dropped).
    public var startsSent: [Date]
    /// Whether the app reported it can start an activity on a broadcast channel (iOS 18 and a
    /// build that handles `input-push-channel`): a start in a group then subscribes it to the
    /// group's channel.
    public var channels: Bool
    /// The store's version of this record (compare-and-set).
    public var version: Int

    public init(
        key: PushToStartKey, token: DeviceToken, environment: ActivityEnvironment, confirmedAt: Date, sequence: Int64?,
        deadReason: String? = nil, startsSent: [Date] = [], channels: Bool = false, version: Int = 0
    ) {
        self.startsSent = startsSent
        self.channels = channels
        self.key = key
        self.token = token
        self.environment = environment
        self.confirmedAt = confirmedAt
        self.sequence = sequence
        self.deadReason = deadReason
        self.version = version
    }
}

/// How much an update matters to the person, which decides its priority
/// (``LiveActivityManager/request(update:contentState:staleDate:alert:relevanceScore:importance:)``).
public enum UpdateImportance: String, Hashable, Sendable, CaseIterable {
    /// Priority 5: spends no budget; iOS shows it when it suits the device's power.
    case routine
    /// Priority 10 while the activity's budget of priority-10 updates allows, else priority 5 (a
    /// counted downgrade): iOS throttles an activity that spends more, and the activity freezes.
    case alerting
}

/// A push the manager was asked for and has not sent yet (or is sending): an update or an end,
/// with what it carries. Only the latest waits: a newer update replaces a waiting one, and an end
/// replaces any waiting update.
public struct PendingPush: Hashable, Sendable {
    /// `update`, `end`, or a `start` deferred until the install's start budget frees one.
    public enum Kind: String, Hashable, Sendable {
        case update
        case end
        /// A start through the push-to-start token, with the activity's attributes and this
        /// content state and alert.
        case start
    }

    public var kind: Kind
    /// The content state, as JSON.
    public var contentState: [UInt8]
    public var staleDate: Date?
    /// For an end: when the activity leaves the Lock Screen.
    public var dismissalDate: Date?
    /// The alert of an update, as the payload's `aps.alert` JSON.
    public var alert: [UInt8]?
    public var relevanceScore: Double?
    public var importance: UpdateImportance
    /// When the backend asked for it.
    public var requestedAt: Date
    /// Sends that failed and were retried.
    public var attempts: Int

    public init(
        kind: Kind, contentState: [UInt8], staleDate: Date? = nil, dismissalDate: Date? = nil, alert: [UInt8]? = nil,
        relevanceScore: Double? = nil, importance: UpdateImportance = .routine, requestedAt: Date, attempts: Int = 0
    ) {
        self.kind = kind
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.alert = alert
        self.relevanceScore = relevanceScore
        self.importance = importance
        self.requestedAt = requestedAt
        self.attempts = attempts
    }
}

/// A push one manager took to send: no other sends the activity's pushes until its lease ends, and
/// after that another takes over (and says the push may have been delivered).
public struct InFlightPush: Hashable, Sendable {
    public var push: PendingPush
    /// The manager that sends it (``LiveActivityManager/Configuration/instanceName``).
    public var owner: String
    /// Until when the others leave it alone.
    public var leaseUntil: Date
    /// The `apns-priority` it goes with: 10 or 5.
    public var priority: Int
    /// The `timestamp` it carries.
    public var timestamp: Date

    public init(push: PendingPush, owner: String, leaseUntil: Date, priority: Int, timestamp: Date) {
        self.push = push
        self.owner = owner
        self.leaseUntil = leaseUntil
        self.priority = priority
        self.timestamp = timestamp
    }
}

/// The pacing of an activity's requested pushes: at most one in flight and one waiting, a minimum
/// interval between sends, the ledger of its priority-10 updates, and the counts.
public struct ActivityDelivery: Hashable, Sendable {
    /// The latest push asked for and not taken yet.
    public var waiting: PendingPush?
    /// The push a manager is sending.
    public var inFlight: InFlightPush?
    /// When the last push went.
    public var lastSentAt: Date?
    /// When a manager should act next: send the waiting push, or take over a lapsed lease. `nil`
    /// when nothing waits. Stores find due activities by it.
    public var dueAt: Date?
    /// When its priority-10 updates went, within the budget's window (older ones are dropped).
    public var alertingSent: [Date] = []
    /// Updates and ends asked for.
    public var requested = 0
    /// Pushes APNs accepted.
    public var sent = 0
    /// Pushes replaced by a newer one before they were sent.
    public var superseded = 0
    /// Alerting updates sent at priority 5 because the budget was spent.
    public var downgraded = 0
    /// Pushes APNs did not accept, or that failed for good.
    public var failed = 0
    /// Pushes sent again after another manager's lease ran out: they may have been delivered twice.
    public var mayHaveBeenDeliveredTwice = 0

    public init() {}

    /// Whether nothing was ever asked for.
    public var isEmpty: Bool { self == ActivityDelivery() }
}
