public import ForgeAPNs
public import ForgeAPNsCore
public import struct Foundation.Date
internal import ForgeSupport
public import Metrics

/// Managed Live Activities: a registry of activities keyed by the backend's own id, the tokens the
/// app reports, and the pushes that follow from them, so a backend says "update order 17" and the
/// manager sends the right push to the right token, or says why it cannot.
///
/// - Reports from the app (``report(_:)``, or ``handleReport(body:)`` for an HTTP route) are
///   applied in order: one older than a report already applied (by its `sequence`) is refused and
///   changes nothing (the same sequence again is applied again: a retried post), and an ended
///   activity is never revived by a late update-token report.
/// - ``start(activity:installation:bundleID:attributesType:attributes:contentState:alert:staleDate:relevanceScore:group:)``
///   sends through the installation's push-to-start token, with the activity id as
///   `apns-collapse-id`; starting an id that is already live sends nothing.
/// - ``update(activity:contentState:staleDate:alert:relevanceScore:priority:)`` and
///   ``end(activity:contentState:dismissalDate:)`` go to the current update token, with a
///   `timestamp` never older than the last one sent; before the token arrives the latest of them is
///   held and sent when it does.
/// - A verdict that says a token is dead (`Unregistered`, `ExpiredToken`, `BadDeviceToken`,
///   `DeviceTokenNotForTopic`) kills it: nothing is sent to it again.
/// - ``sweep()`` applies time: an activity past ``Configuration/maximumAge`` has ended (iOS ends it),
///   one ended past ``Configuration/removalAge`` is removed, one past its stale date is stale.
///
/// Every change is a compare-and-set on the store's record, so managers in several processes may
/// share one store.
public final class LiveActivityManager: Sendable {
    /// Ages and limits.
    public struct Configuration: Sendable {
        /// iOS ends a Live Activity this long after it started (8 hours, Apple's "Displaying live
        /// data with Live Activities").
        public var maximumAge: Duration = .seconds(8 * 3600)
        /// An activity is removed from the registry this long after it started, once it is not live
        /// (iOS keeps an ended one on the Lock Screen up to 4 hours more: 12 hours in all).
        public var removalAge: Duration = .seconds(12 * 3600)
        /// A push-to-start token not confirmed by the app for this long counts as stale: a start to
        /// it fails with a clear error instead of a 200 that starts nothing (a rotated token).
        public var pushToStartConfirmationAge: Duration = .seconds(7 * 86_400)
        /// Automatic renewal by ``LiveActivityManager/sweep()``; `nil` (the default): none.
        public var automaticRenewal: AutomaticRenewal?
        /// The shortest time between two requested pushes of one activity: 1 second, as Apple's
        /// DTS engineers advise for an activity's updates (Apple Developer Forums, thread 827808).
        public var minimumInterval: Duration = .seconds(1)
        /// Priority-10 updates an activity may get: iOS throttles an activity that spends more, and
        /// it stops updating. Apple documents a budget without its size; 10 an hour is what senders
        /// observe (the simulated phone's `DeviceRules` uses the same).
        public var alertingBudget = UpdateBudget(count: 10, window: .seconds(3600))
        /// The same budget for an app with `NSSupportsLiveActivitiesFrequentUpdates`: about one a minute.
        public var frequentAlertingBudget = UpdateBudget(count: 60, window: .seconds(3600))
        /// The apps (bundle ids) that set `NSSupportsLiveActivitiesFrequentUpdates`.
        public var frequentUpdatesBundleIDs: Set<APNSBundleID> = []
        /// How long a manager holds a push it took before others may take it over (it may then
        /// have been delivered twice).
        public var lease: Duration = .seconds(30)
        /// This manager's name in the leases it takes: unique per process.
        public var instanceName = "manager-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        /// How many times a requested push is tried before it counts as failed (an end is then
        /// tried again after the minimum interval: it is never dropped).
        public var deliveryAttempts = 3
        /// Starts one app install may get through push-to-start, per attributes type: iOS drops the
        /// starts beyond its budget though APNs accepts them. Apple documents no number; about 10 in
        /// a short window is what senders observe (the simulated phone's `DeviceRules` uses 10 an hour).
        public var startBudget = UpdateBudget(count: 10, window: .seconds(3600))
        /// What a start beyond ``startBudget`` does: waits until the window frees one (the default:
        /// ``LiveActivityManager/deliverDue(limit:)`` sends it then), or fails with
        /// ``LiveActivityError/Code/startBudgetSpent``. A renewal beyond the budget always fails
        /// (the old activity stays; an automatic renewal is tried again by a later sweep).
        public var startsBeyondBudget = StartsBeyondBudget.deferUntilFree
        /// Where the manager's counters and its lag histogram are made (see the list in the DocC
        /// article's "Paced updates"); the process's `MetricsSystem` by default.
        public var metrics: any MetricsFactory = MetricsSystem.factory
        /// Requested pushes ``LiveActivityManager/run(poll:)`` and ``LiveActivityManager/deliverDue(limit:)``
        /// keep in flight at once, at most the client's streams (its pool's connections × streams
        /// each): 4,000 by default, the default pool's 4 × 1,000. At 30 ms from APNs, 4,000 in
        /// flight carry up to about 130,000 pushes a second.
        public var deliveryConcurrency = 4000
        /// The storage policy of the broadcast channel a group gets for an app once one of its
        /// members is started on an install that can listen to channels (``PushToStartRecord/channels``):
        /// the most recent message stored by default (a phone that was offline gets the latest state
        /// when it comes back). `nil`: groups never use channels, and every member gets its own push.
        public var groupChannels: APNSMessageStoragePolicy? = .mostRecentMessageStored
        /// The wait after a broadcast's 429 `TooManyRequests`, doubling with each 429 in a row up to
        /// a minute; only that channel waits.
        public var channelBackoff: Duration = .seconds(1)

        public init() {}
    }

    /// When ``LiveActivityManager/sweep()`` renews an activity by itself, and the alert its
    /// successor's start shows (a start through push-to-start always has one).
    public struct AutomaticRenewal: Sendable {
        /// The age at which an activity is renewed: 7 h 30 min by default, before iOS ends it at 8 h.
        public var age: Duration
        /// The alert of the successor's start.
        public var alert: @Sendable (ManagedActivity) -> APNSLiveActivityAlert

        public init(age: Duration = .seconds(7 * 3600 + 30 * 60), alert: @escaping @Sendable (ManagedActivity) -> APNSLiveActivityAlert) {
            self.age = age
            self.alert = alert
        }
    }

    /// What became of a report.
    public struct ReportOutcome: Hashable, Sendable {
        /// Whether it changed the registry.
        public var applied: Bool
        /// Why it changed nothing, when it did not.
        public var why: String?
        /// The held push sent because the report brought its update token, when one was.
        public var sentHeld: APNSSendResult?
    }

    /// What a start beyond the start budget does (``Configuration/startsBeyondBudget``).
    public enum StartsBeyondBudget: Hashable, Sendable {
        /// The activity is `starting` and its start waits until the budget frees one.
        case deferUntilFree
        /// The start fails, and nothing is recorded.
        case fail
    }

    /// What became of a start or a renewal.
    public struct StartOutcome: Hashable, Sendable {
        /// The activity as the registry holds it after the start.
        public var activity: ManagedActivity
        /// APNs' answer to the start, `nil` when nothing was sent (the id was already live, or a
        /// renewal already under way).
        public var sent: APNSSendResult?
        /// The push-to-start token the start went to, when one was sent.
        public var token: DeviceToken?
        /// When a start beyond the start budget will be sent (``StartsBeyondBudget/deferUntilFree``).
        public var deferredUntil: Date?
    }

    /// What became of an update or an end.
    public enum SendOutcome: Hashable, Sendable {
        /// Sent and accepted.
        case sent(APNSSendResult)
        /// Held until the activity's update token arrives (the latest one held replaces the older).
        case held
    }

    let client: APNSClient?
    let store: any LiveActivityStore
    let clock: any APNSWallClock
    public let configuration: Configuration
    /// Rung by every request in this process: ``run(poll:)`` wakes for it.
    let doorbell = ProgressGate()
    /// The counters and the lag histogram, in ``Configuration/metrics``.
    let metrics: ManagerMetrics
    /// One channel created at a time in this process: a create has no idempotency key, so a second
    /// start of the same group waits for the first's channel rather than making another.
    let channelOpening = AsyncSemaphore(1)

    /// - Parameters:
    ///   - client: the client pushes go through.
    ///   - store: where the registry lives.
    ///   - clock: the time for timestamps, ages and reports; a manual one in tests.
    ///   - configuration: the ages after which activities end and leave, and tokens go stale.
    public init(client: APNSClient, store: any LiveActivityStore, clock: any APNSWallClock = .system, configuration: Configuration = Configuration()) {
        self.client = client
        self.store = store
        self.clock = clock
        self.configuration = configuration
        self.metrics = ManagerMetrics(factory: configuration.metrics)
    }

    /// A manager that keeps the registry and sends nothing: for the part of a backend that takes
    /// the app's reports while another process sends. A report that brings the update token of an
    /// activity with a held push keeps the push held; ``sweep()`` of a manager with a client sends
    /// it. Every send throws ``LiveActivityError/Code/noClient``.
    /// - Parameters:
    ///   - store: where the registry lives.
    ///   - clock: the time for reports and ages; a manual one in tests.
    ///   - configuration: the ages after which activities end and leave, and tokens go stale.
    public init(store: any LiveActivityStore, clock: any APNSWallClock = .system, configuration: Configuration = Configuration()) {
        self.client = nil
        self.store = store
        self.clock = clock
        self.configuration = configuration
        self.metrics = ManagerMetrics(factory: configuration.metrics)
    }

    // MARK: Reading

    /// The activity with `id`, if the registry has it.
    public func activity(_ id: LiveActivityID) async throws(LiveActivityError) -> ManagedActivity? {
        try await self.storing { try await self.store.activity(id) }
    }

    /// Every activity in the registry, in id order.
    public func activities() async throws(LiveActivityError) -> [ManagedActivity] {
        try await self.storing { try await self.store.activities() }
    }

    /// The push-to-start token for `key`, if the app reported one.
    public func pushToStartToken(for key: PushToStartKey) async throws(LiveActivityError) -> PushToStartRecord? {
        try await self.storing { try await self.store.pushToStart(key) }
    }

    // MARK: Reports

    /// Applies a report from the app.
    /// - Throws: ``LiveActivityError/Code/unknownActivity`` for an update token or end of an id the
    ///   registry does not have (an update token with a registration registers it instead);
    ///   ``LiveActivityError/Code/invalidInput`` (field `sequence`) for a sequence older than one
    ///   already applied: nothing changes.
    @discardableResult
    public func report(_ report: ActivityReport) async throws(LiveActivityError) -> ReportOutcome {
        let now = self.clock.now
        switch report {
        case .pushToStartToken(let key, let token, let sequence, let environment, let channels):
            return try await self.changePushToStart(key) { (current: PushToStartRecord?) throws(LiveActivityError) -> (PushToStartRecord?, String?) in
                if let current, let why = Self.older(sequence, than: current.sequence) {
                    throw LiveActivityError(.invalidInput, field: "sequence", rule: why)
                }
                var record = current ?? PushToStartRecord(key: key, token: token, environment: environment, confirmedAt: now, sequence: sequence)
                if record.token != token { record.deadReason = nil }
                record.token = token
                record.environment = environment
                record.channels = channels
                record.confirmedAt = now
                record.sequence = sequence ?? record.sequence
                return (record, nil)
            }
        case .updateToken(let id, let token, let sequence, let registration):
            var held: HeldPush?
            var replaced: DeviceToken?
            let sends = self.client != nil
            let outcome = try await self.changeActivity(id, creating: registration.map { registration in
                var registered = ManagedActivity(
                    id: id, bundleID: registration.bundleID, attributesType: registration.attributesType,
                    installation: registration.installation, state: .active, startedAt: now
                )
                registered.group = registration.group
                registered.record("registered", "started by the app, reported with its update token", at: now)
                return registered
            }) { (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
                guard activity.state.isLive else {
                    return "\(id) is \(activity.state): a late update token does not revive it"
                }
                if let why = Self.older(sequence, than: activity.reportSequence) {
                    throw LiveActivityError(.invalidInput, field: "sequence", rule: why)
                }
                if let renewal = activity.renewal, token != renewal.replacedToken {
                    // The successor's token: the id moves to it, and the old activity gets its end.
                    replaced = renewal.replacedToken
                    activity.renewal = nil
                    activity.renewals += 1
                    activity.startedAt = now
                    activity.record("renewed", "the successor's update token \(Self.short(token)) arrived; the old activity gets its end", at: now)
                } else if activity.updateToken != token {
                    activity.record("update_token", "\(Self.short(token))\(sequence.map { ", sequence \($0)" } ?? "")", at: now)
                }
                activity.updateToken = token
                activity.reportSequence = sequence ?? activity.reportSequence
                if activity.state == .starting { activity.state = .active }
                self.refreshDue(&activity)
                // A manager without a client leaves the held push for one that sends (its sweep).
                guard sends, let waiting = activity.held else { return nil }
                held = waiting
                activity.held = nil
                activity.record("held_sent", "the held \(waiting.event) goes to \(Self.short(token))", at: now)
                if waiting.event == "end" {
                    activity.state = .ended
                    activity.why = "ended by the backend"
                }
                return nil
            }
            if outcome.applied { self.doorbell.advance(by: 1) }
            if outcome.applied, let replaced { await self.endReplaced(id, token: replaced) }
            guard outcome.applied, let held else { return outcome }
            var sent = outcome
            sent.sentHeld = try await self.sendHeld(held, activity: id, token: token)
            return sent
        case .ended(let id, let sequence, let token):
            return try await self.changeActivity(id, creating: nil) { (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
                if let why = Self.older(sequence, than: activity.reportSequence) {
                    throw LiveActivityError(.invalidInput, field: "sequence", rule: why)
                }
                if let token, let current = activity.updateToken, token != current {
                    return "the end of an earlier activity of \(id) (update token \(token.hexString.prefix(8))…): \(id) goes on"
                }
                activity.reportSequence = sequence ?? activity.reportSequence
                guard activity.state.isLive else { return "\(id) is already \(activity.state)" }
                activity.state = .ended
                activity.held = nil
                activity.why = "ended on the device"
                activity.record("ended", "on the device (dismissed, or ended by iOS)", at: now)
                self.refreshDue(&activity)
                return nil
            }
        }
    }

    /// A report posted as JSON (``ActivityReportJSON``), applied; the HTTP answer for a route:
    /// 200 `{"applied": true}` or `{"applied": false, "why": "…"}`; 400 (a malformed report), 404
    /// (an unknown activity), 503 (the store failed: try again) or 500 (anything else) with
    /// `{"error": {"code", "field", "rule"}}`.
    /// The registry is unchanged by any answer but 200 with `"applied": true`.
    public func handleReport(body: some Collection<UInt8>) async -> (status: Int, body: [UInt8]) {
        do {
            let outcome = try await self.report(try ActivityReport(json: body))
            return (200, ReportAnswer(applied: outcome.applied, why: outcome.why, error: nil).json)
        } catch {
            let status = switch error.code {
            case .invalidInput: 400
            case .unknownActivity: 404
            case .store: 503
            default: 500
            }
            return (status, ReportAnswer(applied: false, why: nil, error: .init(code: error.code.rawValue, field: error.field, rule: error.rule)).json)
        }
    }

    // MARK: Sending

    /// Starts a Live Activity on an installation, through the push-to-start token its app reported
    /// for `attributesType`, with `activity`'s id as `apns-collapse-id` (a retried start never makes
    /// two). The activity is `starting` until the app reports its update token.
    ///
    /// Starting an id that is already live sends nothing and returns it.
    ///
    /// An activity started in a `group` gets every update of the group
    /// (``request(groupUpdate:contentState:staleDate:alert:relevanceScore:importance:)``). When the
    /// install reported it can listen to channels (``PushToStartRecord/channels``) and
    /// ``Configuration/groupChannels`` allows, the start subscribes it to the group's channel for
    /// its app (created with the first such start: `input-push-channel`), and the group's updates
    /// reach it in one broadcast; it is `active` once APNs accepted its start. When the channel
    /// cannot be made, it is started without one and gets the group's updates through its token.
    /// - Throws: ``LiveActivityError/Code/noPushToStartToken`` (none reported, stale, or dead);
    ///   ``LiveActivityError/Code/invalidInput`` for an id that ended and is still in the registry;
    ///   ``LiveActivityError/Code/sendFailed`` with APNs' answer (a dead token is then marked dead);
    ///   ``LiveActivityError/Code/noClient`` for a manager made without a client.
    @discardableResult
    public func start<Attributes: Encodable & Sendable, ContentState: Encodable & Sendable>(
        activity id: LiveActivityID, installation: InstallationID, bundleID: APNSBundleID, attributesType: String,
        attributes: Attributes, contentState: ContentState, alert: APNSLiveActivityAlert, staleDate: Date? = nil,
        relevanceScore: Double? = nil, group: LiveActivityGroupID? = nil
    ) async throws(LiveActivityError) -> StartOutcome {
        try checkAttributesType(attributesType)
        _ = try self.sendingClient()
        let now = self.clock.now
        let key = PushToStartKey(installation: installation, bundleID: bundleID, attributesType: attributesType)
        let record = try await self.usablePushToStartToken(for: key, now: now)
        let state = try StoredJSON.encode(contentState, field: "content_state")
        var activity = ManagedActivity(id: id, bundleID: bundleID, attributesType: attributesType, installation: installation, state: .starting, startedAt: now)
        activity.group = group
        activity.lastContentState = state
        activity.attributes = try StoredJSON.encode(attributes, field: "attributes")
        activity.lastTimestamp = now
        activity.staleDate = staleDate
        activity.record("start_sent", "through the push-to-start token \(Self.short(record.token))", at: now)
        if let existing = try await self.activity(id) {
            guard existing.state.isLive else {
                throw LiveActivityError(.invalidInput, field: "activity", rule: "\(id) already exists and is \(existing.state): start a new id")
            }
            return StartOutcome(activity: existing)
        }
        if let group, record.channels, let policy = self.configuration.groupChannels {
            do {
                activity.channelID = try await self.openChannel(group, bundleID: bundleID, policy: policy)
                activity.record("channel", "started on the channel \(activity.channelID?.rawValue ?? "") of \(group)", at: now)
            } catch {
                guard error.code == .sendFailed else { throw error }
                activity.record("channel_unavailable", "\(error.rule): its group's updates go to its token", at: now)
            }
        }
        guard try await self.storing({ try await self.store.save(activity, replacing: nil) }) else {
            // Another manager created it between the reading and the write: its start is the one.
            return StartOutcome(activity: try await self.activity(id) ?? activity)
        }
        activity.version = 1
        let collapseID: APNSCollapseID
        do {
            collapseID = try APNSCollapseID(id.rawValue)
        } catch {
            try? await self.store.removeActivity(id)
            throw LiveActivityError(.invalidInput, field: "activity", rule: error.rule)
        }
        if let free = try await self.spendStart(key, now: now) {
            guard self.configuration.startsBeyondBudget == .deferUntilFree else {
                try? await self.store.removeActivity(id)
                throw Self.startBudgetSpent(key, freeAt: free, budget: self.configuration.startBudget)
            }
            let alertJSON = try StoredJSON.encode(alert, field: "alert")
            let deferred = PendingPush(
                kind: .start, contentState: state, staleDate: staleDate, alert: alertJSON, relevanceScore: relevanceScore, requestedAt: now
            )
            var stored = activity
            _ = try await self.changeActivity(id, creating: nil) { (current: inout ManagedActivity) throws(LiveActivityError) -> String? in
                current.delivery.requested += 1
                current.delivery.waiting = deferred
                current.delivery.dueAt = free
                current.record("start_deferred", "the start budget of \(key) is spent; the start goes at \(free)", at: now)
                stored = current
                return nil
            }
            self.doorbell.advance(by: 1)
            self.metrics.requested(.start)
            self.metrics.deferredStart()
            return StartOutcome(activity: stored, deferredUntil: free)
        }
        let notification = APNSLiveActivityStartNotification(
            attributesType: attributesType, attributes: attributes, contentState: contentState, alert: alert, timestamp: now,
            topic: bundleID, staleDate: staleDate, relevanceScore: relevanceScore, inputPushChannel: activity.channelID, collapseID: collapseID
        )
        do {
            let sent = try await self.sendStart(notification, key: key, token: record.token, activity: id)
            if activity.channelID != nil {
                // On a channel, nothing more is needed: its updates come by broadcast.
                _ = try? await self.changeActivity(id, creating: nil) { (current: inout ManagedActivity) throws(LiveActivityError) -> String? in
                    guard current.state == .starting else { return "already \(current.state)" }
                    current.state = .active
                    activity = current
                    return nil
                }
            }
            return StartOutcome(activity: activity, sent: sent, token: record.token)
        } catch {
            // Nothing started for sure, or maybe: either way a later start of the same id may try
            // again (the collapse id keeps a second delivery from making a second activity).
            try? await self.store.removeActivity(id)
            throw error
        }
    }

    /// Renews a running activity before iOS ends it (8 hours after its start): starts its successor
    /// through the installation's push-to-start token, with the same attributes and the last content
    /// state; when the app reports the successor's update token (under the same activity id: the
    /// same attributes name it), the id moves to it and the old activity gets its end. Updates go to
    /// the old one meanwhile. If the start fails, nothing changes. `alert` is the successor's start
    /// alert (a start through push-to-start always shows one).
    /// - Throws: ``LiveActivityError/Code/notLive``; ``LiveActivityError/Code/invalidInput`` for an
    ///   activity this manager did not start (it has no attributes to start a successor with);
    ///   ``LiveActivityError/Code/noPushToStartToken``; ``LiveActivityError/Code/sendFailed``;
    ///   ``LiveActivityError/Code/noClient``.
    @discardableResult
    public func renew(activity id: LiveActivityID, alert: APNSLiveActivityAlert) async throws(LiveActivityError) -> StartOutcome {
        _ = try self.sendingClient()
        let now = self.clock.now
        guard let activity = try await self.activity(id) else {
            throw LiveActivityError(.unknownActivity, field: "activity", rule: "no activity has the id \(id)")
        }
        if activity.renewal != nil { return StartOutcome(activity: activity) }
        guard activity.state == .active || activity.state == .stale, let token = activity.updateToken else {
            throw LiveActivityError(.notLive, field: "activity", rule: "\(id) is \(activity.state): only a running activity with an update token is renewed")
        }
        guard let installation = activity.installation, let attributes = activity.attributes, let state = activity.lastContentState else {
            throw LiveActivityError(.invalidInput, field: "activity", rule: "\(id) was not started by this manager: no attributes to start a successor with")
        }
        let key = PushToStartKey(installation: installation, bundleID: activity.bundleID, attributesType: activity.attributesType)
        let record = try await self.usablePushToStartToken(for: key, now: now)
        if let free = try await self.spendStart(key, now: now) {
            throw Self.startBudgetSpent(key, freeAt: free, budget: self.configuration.startBudget)
        }
        var renewing = activity
        try await self.modifyLive(id, refusing: ["ending", "starting"]) { current throws(LiveActivityError) in
            current.renewal = Renewal(replacedToken: token, startedAt: now)
            current.lastTimestamp = max(now, current.lastTimestamp ?? now)
            current.record("renewal_started", "a successor started through the push-to-start token \(Self.short(record.token))", at: now)
            renewing = current
        }
        let collapseID: APNSCollapseID
        do {
            // Not the first start's: a renewal is a second start of the same id, on purpose.
            let suffix = "~\(activity.renewals + 1)"
            collapseID = try APNSCollapseID(String(id.rawValue.utf8.prefix(APNSCollapseID.maximumByteCount - suffix.utf8.count))! + suffix)
        } catch {
            throw LiveActivityError(.invalidInput, field: "activity", rule: error.rule)
        }
        let notification = APNSLiveActivityStartNotification(
            attributesType: activity.attributesType, attributes: try StoredJSON.value(attributes), contentState: try StoredJSON.value(state),
            alert: alert, timestamp: renewing.lastTimestamp ?? now, topic: activity.bundleID, staleDate: activity.staleDate, collapseID: collapseID
        )
        do {
            let sent = try await self.sendStart(notification, key: key, token: record.token, activity: id)
            return StartOutcome(activity: renewing, sent: sent, token: record.token)
        } catch {
            _ = try? await self.changeActivity(id, creating: nil) { (current: inout ManagedActivity) throws(LiveActivityError) -> String? in
                guard current.renewal != nil else { return "no renewal under way" }
                current.renewal = nil
                return nil
            }
            throw error
        }
    }

    /// Sends a new content state to a live activity (or holds it until its update token arrives).
    /// - Throws: ``LiveActivityError/Code/unknownActivity``; ``LiveActivityError/Code/notLive`` for
    ///   an ended, ending or dead activity (nothing is sent); ``LiveActivityError/Code/sendFailed``.
    @discardableResult
    public func update<ContentState: Encodable & Sendable>(
        activity id: LiveActivityID, contentState: ContentState, staleDate: Date? = nil, alert: APNSLiveActivityAlert? = nil,
        relevanceScore: Double? = nil, priority: APNSPriority? = nil
    ) async throws(LiveActivityError) -> SendOutcome {
        let encoded = try StoredJSON.encode(contentState, field: "content_state")
        let now = self.clock.now
        var target: (token: DeviceToken, bundleID: APNSBundleID, timestamp: Date)?
        try await self.modifyLive(id, refusing: ["ending"]) { activity throws(LiveActivityError) in
            let timestamp = max(now, activity.lastTimestamp ?? now)
            activity.lastContentState = encoded
            activity.lastTimestamp = timestamp
            if let staleDate { activity.staleDate = staleDate }
            if activity.state == .stale, (activity.staleDate ?? .distantPast) > now { activity.state = .active }
            if let token = activity.updateToken {
                target = (token, activity.bundleID, timestamp)
            } else {
                activity.held = HeldPush(event: "update", contentState: encoded, dismissalDate: nil, requestedAt: timestamp)
                activity.record("held", "an update, until the update token arrives", at: now)
            }
        }
        guard let target else { return .held }
        let notification = APNSLiveActivityNotification(
            event: .update, contentState: contentState, timestamp: target.timestamp, topic: target.bundleID, staleDate: staleDate,
            relevanceScore: relevanceScore, alert: alert, priority: priority
        )
        return .sent(try await self.send(notification, activity: id, token: target.token))
    }

    /// What became of each activity of a bulk update.
    public struct BulkUpdateOutcome: Sendable {
        /// By activity id: sent (with APNs' answer) or held, or why not: an unknown id, an activity
        /// that is not live (nothing was sent), or a push APNs did not accept (its answer in the
        /// error; a dead token's activity is now dead).
        public var outcomes: [LiveActivityID: Result<SendOutcome, LiveActivityError>] = [:]

        /// Updates sent and accepted.
        public var sent: Int { self.outcomes.values.count { if case .success(.sent) = $0 { true } else { false } } }
        /// Updates held until the activity's update token arrives.
        public var held: Int { self.outcomes.values.count { if case .success(.held) = $0 { true } else { false } } }
        /// Updates refused or not accepted.
        public var failed: Int { self.outcomes.values.count { if case .failure = $0 { true } else { false } } }
    }

    /// Sends one content state to many live activities at once: the store changes every running
    /// activity with an update token in a few statements (``LiveActivityStore/applyContentUpdate(_:)``),
    /// and the pushes go out through the client's bulk send, so updating a whole match's activities
    /// costs about what sending the pushes does. Each activity ends up as
    /// ``update(activity:contentState:staleDate:alert:relevanceScore:priority:)`` would leave it (a
    /// timestamp never older than its last); the others (unknown, ended, dead, ending, or waiting
    /// for their token) are updated one by one, with that method's outcome. An id given twice is
    /// updated once. As for any bulk send, the client must be running (`withAPNSClient`, or its
    /// `run()` in a task group or service group).
    /// - Throws: ``LiveActivityError/Code/invalidInput`` for a content state that cannot be encoded,
    ///   ``LiveActivityError/Code/store``, ``LiveActivityError/Code/noClient``; everything else is
    ///   per activity, in the outcome.
    public func update<ContentState: Encodable & Sendable>(
        activities ids: [LiveActivityID], contentState: ContentState, staleDate: Date? = nil, alert: APNSLiveActivityAlert? = nil,
        relevanceScore: Double? = nil, priority: APNSPriority? = nil
    ) async throws(LiveActivityError) -> BulkUpdateOutcome {
        let client = try self.sendingClient()
        let encoded = try StoredJSON.encode(contentState, field: "content_state")
        var seen = Set<LiveActivityID>()
        let unique = ids.filter { seen.insert($0).inserted }
        let change = ContentUpdate(ids: unique, contentState: encoded, now: self.clock.now, staleDate: staleDate)
        let applied = try await self.storing { try await self.store.applyContentUpdate(change) }
        var outcome = BulkUpdateOutcome()
        outcome.outcomes.reserveCapacity(unique.count)
        // One bulk send per topic and timestamp (one in all, unless some activity's last timestamp is
        // ahead of the clock).
        var groups: [BulkGroup: [AppliedContentUpdate]] = [:]
        for update in applied { groups[BulkGroup(bundleID: update.bundleID, timestamp: update.timestamp), default: []].append(update) }
        for (group, members) in groups {
            let notification = APNSLiveActivityNotification(
                event: .update, contentState: contentState, timestamp: group.timestamp, topic: group.bundleID, staleDate: staleDate,
                relevanceScore: relevanceScore, alert: alert, priority: priority
            )
            let bulk: APNSBulkSend
            do {
                bulk = try client.sendBulk(notification, to: members.map(\.updateToken))
            } catch {
                throw LiveActivityError(.invalidInput, field: "content_state", rule: "cannot be sent: \(error)")
            }
            for await verdict in bulk {
                let member = members[verdict.index]
                switch verdict.outcome {
                case .accepted(let result):
                    outcome.outcomes[member.id] = .success(.sent(result))
                case .rejected(let error), .failed(let error), .notSent(let error):
                    await self.markDeadIfDropped(error, activity: member.id, token: member.updateToken)
                    outcome.outcomes[member.id] = .failure(
                        LiveActivityError(.sendFailed, rule: "the push to \(member.id) was not accepted: \(error)", apnsError: error, token: member.updateToken)
                    )
                }
            }
        }
        for id in unique where outcome.outcomes[id] == nil {
            do throws(LiveActivityError) {
                outcome.outcomes[id] = .success(
                    try await self.update(
                        activity: id, contentState: contentState, staleDate: staleDate, alert: alert, relevanceScore: relevanceScore, priority: priority
                    )
                )
            } catch {
                outcome.outcomes[id] = .failure(error)
            }
        }
        return outcome
    }

    /// The pushes of a bulk update that share a bulk send.
    private struct BulkGroup: Hashable {
        var bundleID: APNSBundleID
        var timestamp: Date
    }

    /// Ends a live activity, with a final content state (the last one sent when `nil`); held until
    /// its update token arrives when it has none yet.
    /// - Throws: as ``update(activity:contentState:staleDate:alert:relevanceScore:priority:)``.
    @discardableResult
    public func end<ContentState: Encodable & Sendable>(
        activity id: LiveActivityID, contentState: ContentState?, dismissalDate: Date? = nil
    ) async throws(LiveActivityError) -> SendOutcome {
        let encoded = try contentState.map { value throws(LiveActivityError) in try StoredJSON.encode(value, field: "content_state") }
        let now = self.clock.now
        var target: (token: DeviceToken, bundleID: APNSBundleID, timestamp: Date, state: [UInt8])?
        try await self.modifyLive(id, refusing: []) { activity throws(LiveActivityError) in
            let timestamp = max(now, activity.lastTimestamp ?? now)
            guard let state = encoded ?? activity.held?.contentState ?? activity.lastContentState else {
                throw LiveActivityError(.invalidInput, field: "content_state", rule: "is required: \(id) has no content state sent yet")
            }
            activity.lastContentState = state
            activity.lastTimestamp = timestamp
            if let token = activity.updateToken {
                activity.state = .ended
                activity.why = "ended by the backend"
                activity.record("ended", "by the backend: the end goes to \(Self.short(token))", at: now)
                target = (token, activity.bundleID, timestamp, state)
            } else {
                activity.state = .ending
                activity.held = HeldPush(event: "end", contentState: state, dismissalDate: dismissalDate, requestedAt: timestamp)
                activity.record("held", "the end, until the update token arrives", at: now)
            }
        }
        guard let target else { return .held }
        let notification = APNSLiveActivityNotification(
            event: .end(dismissalDate: dismissalDate), contentState: try StoredJSON.value(target.state), timestamp: target.timestamp,
            topic: target.bundleID
        )
        return .sent(try await self.send(notification, activity: id, token: target.token))
    }

    // MARK: Time

    /// What ``sweep()`` changed.
    public struct SweepSummary: Hashable, Sendable {
        /// Activities that reached ``Configuration/maximumAge`` and are now ended.
        public var ended = 0
        /// Activities past their stale date, now stale.
        public var stale = 0
        /// Activities past ``Configuration/removalAge`` and not live, removed.
        public var removed = 0
        /// Activities whose renewal started (``Configuration/automaticRenewal``).
        public var renewed = 0
        /// Held pushes sent: their update token arrived through a manager without a client.
        public var sentHeld = 0
    }

    /// Applies the clock to every activity (see the type's discussion), renews those old enough
    /// when ``Configuration/automaticRenewal`` is set, and sends a held push whose update token has
    /// arrived (through a manager without a client). Run it every few minutes.
    @discardableResult
    public func sweep() async throws(LiveActivityError) -> SweepSummary {
        let now = self.clock.now
        var summary = SweepSummary()
        for activity in try await self.activities() {
            let age = Date.durationBetween(activity.startedAt, now)
            if !activity.state.isLive, age >= self.configuration.removalAge {
                try await self.storing { try await self.store.removeActivity(activity.id) }
                summary.removed += 1
                continue
            }
            guard activity.state.isLive else { continue }
            if self.client != nil, activity.held != nil, activity.updateToken != nil {
                if (try? await self.sendHeld(activity.id, now: now)) != nil { summary.sentHeld += 1 }
                continue
            }
            if let automatic = self.configuration.automaticRenewal, age >= automatic.age, age < self.configuration.maximumAge,
                activity.renewal == nil, activity.state == .active || activity.state == .stale, activity.attributes != nil
            {
                if (try? await self.renew(activity: activity.id, alert: automatic.alert(activity))) != nil { summary.renewed += 1 }
                continue
            }
            let ended = age >= self.configuration.maximumAge
            let stale = !ended && activity.state == .active && (activity.staleDate.map { $0 <= now } ?? false)
            guard ended || stale else { continue }
            let changed = try? await self.changeActivity(activity.id, creating: nil) { (current: inout ManagedActivity) throws(LiveActivityError) -> String? in
                guard current.state.isLive else { return "no longer live" }
                if ended {
                    current.state = .ended
                    current.held = nil
                    current.why = "iOS ended it \(Self.hours(self.configuration.maximumAge)) after it started"
                    current.record("ended", current.why ?? "", at: now)
                    self.refreshDue(&current)
                } else if current.state == .active {
                    current.state = .stale
                    current.record("stale", "past its stale date", at: now)
                }
                return nil
            }
            if changed?.applied == true {
                if ended { summary.ended += 1 } else { summary.stale += 1 }
            }
        }
        return summary
    }

    // MARK: Private

    /// The push-to-start token for `key` when one can start an activity now.
    func usablePushToStartToken(for key: PushToStartKey, now: Date) async throws(LiveActivityError) -> PushToStartRecord {
        guard let record = try await self.pushToStartToken(for: key) else {
            throw LiveActivityError(.noPushToStartToken, rule: "no push-to-start token was reported for \(key)")
        }
        if let reason = record.deadReason {
            throw LiveActivityError(.noPushToStartToken, rule: "the push-to-start token for \(key) is dead (\(reason)): the app must report a new one")
        }
        let age = Date.durationBetween(record.confirmedAt, now)
        if age > self.configuration.pushToStartConfirmationAge {
            throw LiveActivityError(
                .noPushToStartToken,
                rule: "the push-to-start token for \(key) is stale: last confirmed \(Self.hours(age)) ago, more than "
                    + "\(Self.hours(self.configuration.pushToStartConfirmationAge)); it may have rotated, and a start to it would be "
                    + "accepted and start nothing"
            )
        }
        return record
    }

    /// Spends one start of `key`'s budget (compare-and-set on its record): `nil` when it was free,
    /// else when the next one is.
    func spendStart(_ key: PushToStartKey, now: Date) async throws(LiveActivityError) -> Date? {
        let budget = self.configuration.startBudget
        let windowStart = now.addingDuration(.zero - budget.window)
        var free: Date?
        _ = try await self.changePushToStart(key) { (current: PushToStartRecord?) throws(LiveActivityError) -> (PushToStartRecord?, String?) in
            free = nil
            guard var current else { return (nil, "no push-to-start token") }
            current.startsSent.removeAll { $0 <= windowStart }
            if current.startsSent.count >= budget.count {
                free = current.startsSent.sorted()[current.startsSent.count - budget.count].addingDuration(budget.window)
                return (nil, "the start budget is spent")
            }
            current.startsSent.append(now)
            return (current, nil)
        }
        return free
    }

    static func startBudgetSpent(_ key: PushToStartKey, freeAt free: Date, budget: UpdateBudget) -> LiveActivityError {
        LiveActivityError(
            .startBudgetSpent, field: "installation",
            rule: "\(key) had \(budget.count) starts within \(Self.hours(budget.window)) already: iOS would drop another; the next is free at \(free)"
        )
    }

    /// Sends a start to a push-to-start token; a dead token's verdict kills it.
    private func sendStart(
        _ notification: some APNSNotification, key: PushToStartKey, token: DeviceToken, activity id: LiveActivityID
    ) async throws(LiveActivityError) -> APNSSendResult {
        let client = try self.sendingClient()
        do {
            return try await client.send(notification, to: token)
        } catch {
            if error.disposition == .dropToken, let reason = error.reason {
                _ = try? await self.changePushToStart(key) { (current: PushToStartRecord?) throws(LiveActivityError) -> (PushToStartRecord?, String?) in
                    guard var current, current.token == token else { return (nil, "the token changed meanwhile") }
                    current.deadReason = reason.rawValue
                    return (current, nil)
                }
            }
            throw LiveActivityError(.sendFailed, rule: "the start of \(id) was not accepted: \(error)", apnsError: error, token: token)
        }
    }

    /// The end of the activity a renewal replaced, with the last content state, dismissed at once:
    /// its successor shows the same. A failure changes nothing (the successor is what counts now).
    private func endReplaced(_ id: LiveActivityID, token: DeviceToken) async {
        guard let activity = try? await self.activity(id), let state = activity.lastContentState, let content = try? StoredJSON.value(state) else {
            return
        }
        let now = self.clock.now
        let end = APNSLiveActivityNotification(
            event: .end(dismissalDate: now), contentState: content, timestamp: max(now, activity.lastTimestamp ?? now), topic: activity.bundleID
        )
        _ = try? await self.client?.send(end, to: token)
    }

    /// Sends an update or end to `token`; a dead token's verdict kills the activity.
    private func send(_ notification: some APNSNotification, activity id: LiveActivityID, token: DeviceToken) async throws(LiveActivityError) -> APNSSendResult {
        let client = try self.sendingClient()
        do {
            return try await client.send(notification, to: token)
        } catch {
            await self.markDeadIfDropped(error, activity: id, token: token)
            throw LiveActivityError(.sendFailed, rule: "the push to \(id) was not accepted: \(error)", apnsError: error, token: token)
        }
    }

    /// Marks the activity dead when APNs' answer says its update token is (`dropToken`), unless
    /// the token changed meanwhile.
    private func markDeadIfDropped(_ error: APNSError, activity id: LiveActivityID, token: DeviceToken) async {
        guard error.disposition == .dropToken, let reason = error.reason else { return }
        _ = try? await self.changeActivity(id, creating: nil) { (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
            guard activity.updateToken == token, activity.state.isLive || activity.state == .ended else { return "the token changed" }
            activity.state = .dead(reason: reason.rawValue)
            activity.held = nil
            activity.why = "APNs answered \(reason.rawValue) for its update token"
            activity.record("dead", activity.why ?? "", at: self.clock.now)
            self.refreshDue(&activity)
            return nil
        }
    }

    /// Takes the held push of `id` off its record (compare-and-set) and sends it to its update token.
    private func sendHeld(_ id: LiveActivityID, now: Date) async throws(LiveActivityError) -> APNSSendResult? {
        var taken: (HeldPush, DeviceToken)?
        let outcome = try await self.changeActivity(id, creating: nil) { (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
            guard activity.state.isLive, let held = activity.held, let token = activity.updateToken else { return "nothing held" }
            taken = (held, token)
            activity.held = nil
            activity.record("held_sent", "the held \(held.event) goes to \(Self.short(token))", at: now)
            if held.event == "end" {
                activity.state = .ended
                activity.why = "ended by the backend"
            }
            return nil
        }
        guard outcome.applied, let (held, token) = taken else { return nil }
        return try await self.sendHeld(held, activity: id, token: token)
    }

    private func sendHeld(_ held: HeldPush, activity id: LiveActivityID, token: DeviceToken) async throws(LiveActivityError) -> APNSSendResult {
        guard let activity = try await self.activity(id) else { throw LiveActivityError(.unknownActivity, field: "activity", rule: "\(id) is gone") }
        let state = try StoredJSON.value(held.contentState)
        let event: APNSLiveActivityEvent = held.event == "end" ? .end(dismissalDate: held.dismissalDate) : .update
        let notification = APNSLiveActivityNotification(
            event: event, contentState: state, timestamp: held.requestedAt, topic: activity.bundleID, staleDate: activity.staleDate
        )
        return try await self.send(notification, activity: id, token: token)
    }

    /// Changes a live activity with `body` (compare-and-set, read again on a conflict).
    func modifyLive(
        _ id: LiveActivityID, refusing: Set<String>, reading: ManagedActivity? = nil, _ body: (inout ManagedActivity) throws(LiveActivityError) -> Void
    ) async throws(LiveActivityError) {
        var reading = reading
        for _ in 0..<Self.conflictLimit {
            let stored: ManagedActivity?
            if let first = reading.take() { stored = first } else { stored = try await self.activity(id) }
            guard var activity = stored else {
                throw LiveActivityError(.unknownActivity, field: "activity", rule: "no activity has the id \(id)")
            }
            guard activity.state.isLive, !refusing.contains(activity.state.name) else {
                throw LiveActivityError(.notLive, field: "activity", rule: "\(id) is \(activity.state)\(activity.why.map { ": \($0)" } ?? ""); nothing was sent")
            }
            let expected = activity.version
            try body(&activity)
            if try await self.storing({ try await self.store.save(activity, replacing: expected) }) { return }
        }
        throw LiveActivityError(.store, rule: "\(id) kept changing under \(Self.conflictLimit) writes in a row")
    }

    /// Applies `body` to the activity `id` (or to `creating`, when there is none and one is given):
    /// `body` returns why it changed nothing, or `nil` after changing it. `reading`, when given, is
    /// taken as the first reading of the record (one the caller read just before): the store is read
    /// only after a conflict.
    func changeActivity(
        _ id: LiveActivityID, creating: ManagedActivity?, reading: ManagedActivity? = nil,
        _ body: (inout ManagedActivity) throws(LiveActivityError) -> String?
    ) async throws(LiveActivityError) -> ReportOutcome {
        var reading = reading
        for _ in 0..<Self.conflictLimit {
            let stored: ManagedActivity?
            if let first = reading.take() { stored = first } else { stored = try await self.activity(id) }
            guard var activity = stored ?? creating else {
                throw LiveActivityError(.unknownActivity, field: "activity", rule: "no activity has the id \(id)")
            }
            if let why = try body(&activity) { return ReportOutcome(applied: false, why: why) }
            if try await self.storing({ try await self.store.save(activity, replacing: stored?.version) }) {
                return ReportOutcome(applied: true)
            }
        }
        throw LiveActivityError(.store, rule: "\(id) kept changing under \(Self.conflictLimit) writes in a row")
    }

    func changePushToStart(
        _ key: PushToStartKey, _ body: (PushToStartRecord?) throws(LiveActivityError) -> (PushToStartRecord?, String?)
    ) async throws(LiveActivityError) -> ReportOutcome {
        for _ in 0..<Self.conflictLimit {
            let stored = try await self.pushToStartToken(for: key)
            let (changed, why) = try body(stored)
            guard let changed else { return ReportOutcome(applied: false, why: why) }
            if try await self.storing({ try await self.store.save(changed, replacing: stored?.version) }) {
                return ReportOutcome(applied: true)
            }
        }
        throw LiveActivityError(.store, rule: "the push-to-start token of \(key) kept changing under \(Self.conflictLimit) writes in a row")
    }

    private static let conflictLimit = 64

    /// The client, or why there is none.
    func sendingClient() throws(LiveActivityError) -> APNSClient {
        guard let client = self.client else {
            throw LiveActivityError(.noClient, rule: "this manager was made without a client: it records reports and sends nothing")
        }
        return client
    }

    /// A token as the history shows it: its first 8 digits.
    static func short(_ token: DeviceToken) -> String {
        "\(token.hexString.prefix(8))…"
    }

    /// Why a report with `sequence` goes backwards from one applied with `applied`, if it does.
    private static func older(_ sequence: Int64?, than applied: Int64?) -> String? {
        guard let sequence, let applied, sequence < applied else { return nil }
        return "goes backwards: \(sequence) is older than \(applied), already applied; nothing changed"
    }

    static func hours(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        return seconds % 3600 == 0 ? "\(seconds / 3600) h" : "\(seconds / 60) min"
    }

    /// Runs a store call, its failure as a ``LiveActivityError/Code/store`` error.
    func storing<T>(_ body: () async throws -> T) async throws(LiveActivityError) -> T {
        do {
            return try await body()
        } catch let error as LiveActivityError {
            throw error
        } catch {
            throw LiveActivityError(.store, rule: "the store failed: \(error)")
        }
    }
}

extension Date {
    /// The time from `start` to `end`, as a duration.
    static func durationBetween(_ start: Date, _ end: Date) -> Duration {
        .milliseconds(Int64((end.timeIntervalSince(start) * 1000).rounded()))
    }
}

/// The JSON answer of ``LiveActivityManager/handleReport(body:)``.
private struct ReportAnswer: Encodable {
    struct Failure: Encodable {
        var code: String
        var field: String?
        var rule: String
    }

    var applied: Bool
    var why: String?
    var error: Failure?

    var json: [UInt8] {
        (try? StoredJSON.encode(self, field: "answer")) ?? Array(#"{"applied":false}"#.utf8)
    }
}
