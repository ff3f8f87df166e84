internal import ForgeAPNs
public import ForgeAPNsCore
internal import ForgeSupport
public import struct Foundation.Date

/// A budget of pushes within a sliding window: `count` in any `window`.
public struct UpdateBudget: Hashable, Sendable {
    public var count: Int
    public var window: Duration

    public init(count: Int, window: Duration) {
        self.count = count
        self.window = window
    }
}

extension LiveActivityManager {
    /// What became of a request: the activity's state after it, and whether it replaced a push
    /// that was still waiting.
    public struct RequestOutcome: Hashable, Sendable {
        /// The activity's state once the request was taken (`ending` after an end).
        public var state: ActivityState
        /// Whether the request replaced a waiting push (which will never be sent).
        public var superseded: Bool
    }

    /// What one ``deliverDue(limit:)`` did.
    public struct DeliverySummary: Hashable, Sendable {
        /// Pushes APNs accepted.
        public var sent = 0
        /// Pushes not accepted (a dead token's activity is now dead) or given up.
        public var failed = 0
        /// Pushes that failed and wait to be tried again.
        public var retrying = 0
        /// Alerting updates sent at priority 5: their activity's budget was spent.
        public var downgraded = 0
        /// Activities whose push another manager had taken and not finished within its lease:
        /// sent again, so they may have been delivered twice.
        public var mayHaveBeenDeliveredTwice: [LiveActivityID] = []
        /// Activities found due and left alone: another manager took them first, or their minimum
        /// interval had not passed.
        public var skipped = 0
        /// How many due activities the store gave (at most the limit: equal means more may wait).
        public var due = 0
        /// Broadcasts APNs accepted (on groups' channels).
        public var broadcasts = 0
        /// Broadcasts APNs answered with 429: their channel backs off.
        public var throttled = 0

        /// Adds the counts of `other` (a part of the same pass).
        mutating func add(_ other: DeliverySummary) {
            self.sent += other.sent
            self.failed += other.failed
            self.retrying += other.retrying
            self.downgraded += other.downgraded
            self.mayHaveBeenDeliveredTwice += other.mayHaveBeenDeliveredTwice
            self.skipped += other.skipped
            self.broadcasts += other.broadcasts
            self.throttled += other.throttled
        }
    }

    // MARK: Requests

    /// Asks for an update of a live activity, paced: at most one push of the activity is in flight
    /// and one waits; this one replaces any update still waiting (the person only ever sees the
    /// latest state), and goes no sooner than ``Configuration/minimumInterval`` after the last. It
    /// is sent by ``run(poll:)`` (or ``deliverDue(limit:)``), by whichever manager on the store gets to
    /// it first. `importance` decides its priority: `routine` goes at 5; `alerting` at 10 while the
    /// activity's budget (``Configuration/alertingBudget``) allows, else at 5, counted as
    /// downgraded. `relevanceScore` is sent only when given.
    /// - Throws: ``LiveActivityError/Code/unknownActivity``; ``LiveActivityError/Code/notLive`` for
    ///   an activity that ended, died, or has an end waiting; ``LiveActivityError/Code/invalidInput``
    ///   for a content state or alert that cannot be encoded, or a relevance score that is not finite.
    @discardableResult
    public func request<ContentState: Encodable & Sendable>(
        update id: LiveActivityID, contentState: ContentState, staleDate: Date? = nil, alert: APNSLiveActivityAlert? = nil,
        relevanceScore: Double? = nil, importance: UpdateImportance = .routine
    ) async throws(LiveActivityError) -> RequestOutcome {
        let push = try self.updatePush(
            contentState: contentState, staleDate: staleDate, alert: alert, relevanceScore: relevanceScore, importance: importance
        )
        return try await self.enqueue(push, activity: id)
    }

    /// An update asked for now, validated and encoded (for an activity or a group).
    func updatePush<ContentState: Encodable & Sendable>(
        contentState: ContentState, staleDate: Date?, alert: APNSLiveActivityAlert?, relevanceScore: Double?, importance: UpdateImportance
    ) throws(LiveActivityError) -> PendingPush {
        if let relevanceScore, !relevanceScore.isFinite {
            throw LiveActivityError(.invalidInput, field: "relevance_score", rule: "must be a finite number, not \(relevanceScore)")
        }
        return PendingPush(
            kind: .update, contentState: try StoredJSON.encode(contentState, field: "content_state"), staleDate: staleDate,
            alert: try alert.map { value throws(LiveActivityError) in try StoredJSON.encode(value, field: "alert") },
            relevanceScore: relevanceScore, importance: importance, requestedAt: self.clock.now
        )
    }

    /// An end asked for now (`contentState` `nil`: the latest state, filled in when it is recorded).
    func endPush<ContentState: Encodable & Sendable>(contentState: ContentState?, dismissalDate: Date?) throws(LiveActivityError) -> PendingPush {
        let encoded = try contentState.map { value throws(LiveActivityError) in try StoredJSON.encode(value, field: "content_state") }
        return PendingPush(kind: .end, contentState: encoded ?? [], dismissalDate: dismissalDate, requestedAt: self.clock.now)
    }

    /// Asks for the end of a live activity: it replaces any waiting update and is never dropped
    /// (it is sent, after ``Configuration/minimumInterval``, once the activity has its update token),
    /// with `contentState` or, when `nil`, the latest state asked for or sent. The activity is
    /// `ending` until the end is sent, then `ended`.
    /// - Throws: as ``request(update:contentState:staleDate:alert:relevanceScore:importance:)``.
    @discardableResult
    public func request<ContentState: Encodable & Sendable>(
        end id: LiveActivityID, contentState: ContentState?, dismissalDate: Date? = nil
    ) async throws(LiveActivityError) -> RequestOutcome {
        try await self.enqueue(try self.endPush(contentState: contentState, dismissalDate: dismissalDate), activity: id)
    }

    /// Puts `push` as the activity's waiting push (compare-and-set, from `reading` when given).
    func enqueue(_ push: PendingPush, activity id: LiveActivityID, reading: ManagedActivity? = nil) async throws(LiveActivityError) -> RequestOutcome {
        var outcome = RequestOutcome(state: .active, superseded: false)
        try await self.modifyLive(id, refusing: ["ending"], reading: reading) { activity throws(LiveActivityError) in
            if let channel = activity.channelID, activity.updateToken == nil, activity.delivery.waiting?.kind != .start {
                throw LiveActivityError(
                    .invalidInput, field: "activity",
                    rule: "\(id) listens to the channel \(channel) and has no update token: update or end its group\(activity.group.map { " \($0)" } ?? "")"
                )
            }
            var push = push
            if push.kind == .end, push.contentState.isEmpty {
                guard let state = activity.delivery.waiting?.contentState ?? activity.delivery.inFlight?.push.contentState
                    ?? activity.lastContentState
                else {
                    throw LiveActivityError(.invalidInput, field: "content_state", rule: "is required: \(activity.id) has no content state yet")
                }
                push.contentState = state
            }
            activity.delivery.requested += 1
            if var start = activity.delivery.waiting, start.kind == .start {
                // A start still deferred by the start budget: an update rides on it (the activity
                // starts showing the latest state); an end means it never needs to start.
                activity.delivery.superseded += 1
                outcome.superseded = true
                if push.kind == .update {
                    start.contentState = push.contentState
                    if let staleDate = push.staleDate { start.staleDate = staleDate }
                    activity.delivery.waiting = start
                    activity.lastContentState = push.contentState
                } else {
                    activity.delivery.waiting = nil
                    activity.state = .ended
                    activity.why = "ended by the backend before its deferred start was sent"
                    activity.record("ended", activity.why ?? "", at: push.requestedAt)
                }
                self.refreshDue(&activity)
                outcome.state = activity.state
                return
            }
            outcome.superseded = activity.delivery.waiting != nil
            if outcome.superseded { activity.delivery.superseded += 1 }
            activity.delivery.waiting = push
            if push.kind == .end {
                activity.state = .ending
                activity.record("ending", "an end was asked for; it goes once the pushes before it have", at: push.requestedAt)
            }
            self.refreshDue(&activity)
            outcome.state = activity.state
        }
        self.doorbell.advance(by: 1)
        self.metrics.requested(push.kind)
        if outcome.superseded { self.metrics.superseded() }
        return outcome
    }

    // MARK: Delivering

    /// Sends the pushes that are due now (at most `limit` activities): each activity's waiting
    /// push, once its minimum interval has passed and no other manager holds it. Each is taken with
    /// a compare-and-set that records this manager and a lease (``Configuration/lease``), so
    /// managers sharing a store never send the same push twice while each keeps its leases; a push
    /// whose manager stopped before its verdict is taken over after the lease, and counted as
    /// possibly delivered twice. ``run(poll:)`` does the same continuously, taking the next due pushes
    /// while earlier ones are in flight; a test with a manual clock calls this after moving the clock.
    /// - Throws: ``LiveActivityError/Code/store``; ``LiveActivityError/Code/noClient``.
    @discardableResult
    public func deliverDue(limit: Int = 1000) async throws(LiveActivityError) -> DeliverySummary {
        let client = try self.sendingClient()
        let now = self.clock.now
        let due = try await self.storing { try await self.store.dueActivities(at: now, limit: limit) }
        var summary = DeliverySummary()
        summary.due = due.count
        let claims = try await self.claim(due, now: now, summary: &summary)
        let window = self.deliveryWindow(client)
        let size = min(Self.sendBatch, window)
        let batches = stride(from: 0, to: claims.count, by: size).map { Array(claims[$0..<min($0 + size, claims.count)]) }
        let verdicts = await withTaskGroup(of: (Int, [Result<APNSSendResult, APNSError>]).self) { group in
            var verdicts = [[Result<APNSSendResult, APNSError>]](repeating: [], count: batches.count)
            var next = 0
            var inFlight = 0
            while next < batches.count || inFlight > 0 {
                while next < batches.count, inFlight < window {
                    let (index, batch) = (next, batches[next])
                    group.addTask { (index, await Self.send(batch, client: client)) }
                    next += 1
                    inFlight += batch.count
                }
                guard let (index, sent) = await group.next() else { break }
                verdicts[index] = sent
                inFlight -= sent.count
            }
            return verdicts
        }
        for (batch, sent) in zip(batches, verdicts) {
            try await self.settle(batch, verdicts: sent, summary: &summary)
        }
        // The groups' channels: each broadcast on its own, so that one channel's wait holds no other.
        let channelClaims = try await self.claimDueChannels(now: now)
        let channelSummaries = await withTaskGroup(of: DeliverySummary.self) { group in
            for claim in channelClaims {
                group.addTask {
                    var one = DeliverySummary()
                    await self.deliver(claim, client: client, summary: &one)
                    return one
                }
            }
            return await group.reduce(into: [DeliverySummary]()) { $0.append($1) }
        }
        for one in channelSummaries {
            summary.broadcasts += one.broadcasts
            summary.throttled += one.throttled
            summary.failed += one.failed
        }
        return summary
    }

    /// Delivers requested pushes until the task is cancelled: whenever a request arrives in this
    /// process, whenever the earliest due activity comes due, and at least every `poll` (for
    /// requests taken by other managers on the same store). Pushes go in batches, up to
    /// ``Configuration/deliveryConcurrency`` (at most the client's streams) in flight; the next due
    /// activities are taken while earlier pushes wait for their verdicts. Run it beside the client,
    /// in the same task group or service group. A store that fails is tried again after `poll`
    /// (what was taken and not finished is taken over after its lease).
    /// - Throws: ``LiveActivityError/Code/noClient``.
    public func run(poll: Duration = .milliseconds(250)) async throws(LiveActivityError) {
        let client = try self.sendingClient()
        let window = self.deliveryWindow(client)
        let size = min(Self.sendBatch, window)
        // Pushes taken, and pushes whose verdicts are recorded: their difference is in flight.
        let settled = ProgressGate()
        do {
            try await withThrowingDiscardingTaskGroup { group in
                var taken = 0
                while !Task.isCancelled {
                    let rung = self.doorbell.reached
                    let room = window - (taken - settled.reached)
                    if room < size {
                        // The window is full: wait for verdicts.
                        _ = await settled.wait(untilReached: taken - window + size)
                        continue
                    }
                    let limit = min(room, Self.takeLimit)
                    let now = self.clock.now
                    let due: [ManagedActivity]
                    let claims: [Claim]
                    let channelClaims: [ChannelClaim]
                    do throws(LiveActivityError) {
                        due = try await self.storing { try await self.store.dueActivities(at: now, limit: limit) }
                        var summary = DeliverySummary()
                        claims = try await self.claim(due, now: now, summary: &summary)
                        channelClaims = try await self.claimDueChannels(now: now)
                    } catch {
                        // A store that fails is tried again after `poll`; what was taken meanwhile is in flight.
                        guard error.code == .store else { throw error }
                        try? await Task.sleep(for: poll)
                        continue
                    }
                    for start in stride(from: 0, to: claims.count, by: size) {
                        let batch = Array(claims[start..<min(start + size, claims.count)])
                        taken += batch.count
                        group.addTask {
                            let verdicts = await Self.send(batch, client: client)
                            var summary = DeliverySummary()
                            // A verdict the store cannot take now is taken over after its lease.
                            try? await self.settle(batch, verdicts: verdicts, summary: &summary)
                            settled.advance(by: batch.count)
                            // A waiting push may be due at a new time: the loop looks again.
                            self.doorbell.advance(by: 1)
                        }
                    }
                    for claim in channelClaims {
                        group.addTask {
                            var summary = DeliverySummary()
                            await self.deliver(claim, client: client, summary: &summary)
                            self.doorbell.advance(by: 1)
                        }
                    }
                    if due.count >= limit { continue }
                    var wait = poll
                    let channelsDue = ((try? await self.store.groupChannels(of: nil)) ?? []).compactMap(\.delivery.dueAt).min()
                    if let next = [(try? await self.store.earliestDue()) ?? nil, channelsDue].compactMap({ $0 }).min() {
                        let untilDue = Date.durationBetween(self.clock.now, next)
                        wait = min(poll, max(.zero, untilDue))
                    }
                    if wait == .zero, !claims.isEmpty { continue }
                    // A short pause at the least: an activity due now but held by another manager's lease.
                    let doorbell = self.doorbell
                    _ = await withTimeout(max(wait, .milliseconds(5))) { await doorbell.wait(untilReached: rung + 1) ? true : nil }
                }
            }
        } catch let error as LiveActivityError {
            throw error
        } catch {
            throw LiveActivityError(.store, rule: "delivering failed: \(error)")
        }
    }

    /// Pushes sent together, in one task (``APNSClient/send(batch:deadline:)``).
    static let sendBatch = 64
    /// The most due activities ``run(poll:)`` takes at once.
    static let takeLimit = 1000

    /// Pushes in flight at once: ``Configuration/deliveryConcurrency``, at most the streams of the
    /// client's pool (its connections × streams each).
    func deliveryWindow(_ client: APNSClient) -> Int {
        let pool = client.configuration.pool
        return max(1, min(self.configuration.deliveryConcurrency, pool.maximumConnections * pool.maxStreamsPerConnection))
    }

    /// A push taken to be sent.
    struct Claim: Sendable {
        var id: LiveActivityID
        var inFlight: InFlightPush
        var token: DeviceToken
        var bundleID: APNSBundleID
        var tookOver: Bool
        /// The record as this manager saved it when it took the push: the first reading when its
        /// verdict is recorded.
        var record: ManagedActivity
        /// For a start: its attributes type and attributes (JSON).
        var attributesType: String = ""
        var attributes: [UInt8]? = nil
        /// For a start: the push-to-start token's key.
        var key: PushToStartKey? = nil
    }

    /// Takes a deferred start when the install's start budget frees one (compare-and-set on the
    /// push-to-start record, then on the activity); moves its due date to when one is free otherwise.
    private func claimStart(_ candidate: ManagedActivity, now: Date, summary: inout DeliverySummary) async throws(LiveActivityError) -> Claim? {
        let id = candidate.id
        guard let installation = candidate.installation else { return nil }
        let key = PushToStartKey(installation: installation, bundleID: candidate.bundleID, attributesType: candidate.attributesType)
        let record: PushToStartRecord
        do {
            record = try await self.usablePushToStartToken(for: key, now: now)
        } catch {
            guard error.code == .noPushToStartToken else { throw error }
            _ = try await self.changeActivity(id, creating: nil) { (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
                guard activity.delivery.waiting?.kind == .start else { return "not a deferred start" }
                activity.delivery.waiting = nil
                activity.delivery.failed += 1
                activity.state = .ended
                activity.why = "its deferred start could not be sent: \(error.rule)"
                activity.record("ended", activity.why ?? "", at: now)
                self.refreshDue(&activity)
                return nil
            }
            summary.failed += 1
            return nil
        }
        if let free = try await self.spendStart(key, now: now) {
            _ = try await self.changeActivity(id, creating: nil) { (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
                guard activity.delivery.waiting?.kind == .start, activity.delivery.inFlight == nil else { return "not a deferred start" }
                activity.delivery.dueAt = free
                return nil
            }
            summary.skipped += 1
            return nil
        }
        var claim: Claim?
        let outcome = try await self.changeActivity(id, creating: nil) { (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
            claim = nil
            guard let push = activity.delivery.waiting, push.kind == .start, activity.delivery.inFlight == nil, activity.state == .starting else {
                return "not a deferred start"
            }
            let timestamp = max(now, activity.lastTimestamp ?? now)
            activity.lastContentState = push.contentState
            activity.lastTimestamp = timestamp
            let inFlight = InFlightPush(
                push: push, owner: self.configuration.instanceName, leaseUntil: now.addingDuration(self.configuration.lease), priority: 10,
                timestamp: timestamp
            )
            activity.delivery.waiting = nil
            activity.delivery.inFlight = inFlight
            activity.delivery.dueAt = inFlight.leaseUntil
            claim = Claim(
                id: id, inFlight: inFlight, token: record.token, bundleID: activity.bundleID, tookOver: false,
                record: activity, attributesType: activity.attributesType, attributes: activity.attributes, key: key
            )
            return nil
        }
        guard outcome.applied, var claim else {
            summary.skipped += 1
            return nil
        }
        // As the store now holds it (a save adds one to the version).
        claim.record.version += 1
        return claim
    }

    /// What taking an activity's push did to its record.
    private enum Taking {
        /// Nothing: why.
        case unchanged(String)
        /// Its due date, but nothing to send.
        case changed
        /// Its push, taken.
        case taken(Claim)
    }

    /// Takes each due activity's push: one compare-and-set each, on the record `due` holds (no
    /// second reading unless another writer changed it meanwhile).
    private func claim(_ due: [ManagedActivity], now: Date, summary: inout DeliverySummary) async throws(LiveActivityError) -> [Claim] {
        // Several writes at once: a durable store commits them together.
        let parts = try await Self.inParts(due) { (part: ArraySlice<ManagedActivity>) async throws(LiveActivityError) -> ([Claim], DeliverySummary) in
            var claims: [Claim] = []
            var summary = DeliverySummary()
            for candidate in part {
                if candidate.delivery.inFlight == nil, candidate.delivery.waiting?.kind == .start {
                    if let claim = try await self.claimStart(candidate, now: now, summary: &summary) { claims.append(claim) }
                } else if let claim = try await self.claim(candidate, now: now, summary: &summary) {
                    claims.append(claim)
                }
            }
            return (claims, summary)
        }
        var claims: [Claim] = []
        claims.reserveCapacity(due.count)
        for (part, counted) in parts {
            claims += part
            summary.add(counted)
        }
        return claims
    }

    /// Writes a store takes at once from one pass (``claim(_:now:summary:)``, a group's requests).
    static let writers = 16

    /// `body` over consecutive parts of `items`, up to ``writers`` at once (one part when there are
    /// few); the parts' results in order; the first error thrown, after every part finished.
    static func inParts<Item: Sendable, Output: Sendable>(
        _ items: [Item], _ body: @escaping @Sendable (ArraySlice<Item>) async throws(LiveActivityError) -> Output
    ) async throws(LiveActivityError) -> [Output] {
        let size = max(64, (items.count + Self.writers - 1) / Self.writers)
        guard items.count > size else { return [try await body(items[...])] }
        let results = await withTaskGroup(of: (Int, Result<Output, LiveActivityError>).self) { group in
            for (index, start) in stride(from: 0, to: items.count, by: size).enumerated() {
                let part = items[start..<min(start + size, items.count)]
                group.addTask {
                    do throws(LiveActivityError) {
                        return (index, .success(try await body(part)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            return await group.reduce(into: [(Int, Result<Output, LiveActivityError>)]()) { $0.append($1) }
        }
        var outputs: [Output] = []
        for (_, result) in results.sorted(by: { $0.0 < $1.0 }) { outputs.append(try result.get()) }
        return outputs
    }

    /// Takes the activity's waiting push, or a lapsed lease's push, when it is due (compare-and-set,
    /// starting from `candidate`).
    private func claim(_ candidate: ManagedActivity, now: Date, summary: inout DeliverySummary) async throws(LiveActivityError) -> Claim? {
        var claim: Claim?
        let outcome = try await self.changeActivity(candidate.id, creating: nil, reading: candidate) {
            (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
            claim = nil
            switch self.take(&activity, now: now) {
            case .unchanged(let why): return why
            case .changed: return nil
            case .taken(let taken):
                claim = taken
                return nil
            }
        }
        guard outcome.applied, var claim else {
            summary.skipped += 1
            return nil
        }
        // As the store now holds it (a save adds one to the version).
        claim.record.version += 1
        if claim.inFlight.priority == 5, claim.inFlight.push.importance == .alerting {
            summary.downgraded += 1
            self.metrics.downgradedUpdate()
        }
        if claim.tookOver {
            summary.mayHaveBeenDeliveredTwice.append(claim.id)
            self.metrics.takenOver()
        }
        return claim
    }

    /// Takes the activity's push when it is due: the record changed in place, and what was taken.
    private func take(_ activity: inout ManagedActivity, now: Date) -> Taking {
        guard let dueAt = activity.delivery.dueAt, dueAt <= now else { return .unchanged("not due") }
        var tookOver = false
        if let inFlight = activity.delivery.inFlight {
            guard inFlight.leaseUntil <= now else { return .unchanged("in flight") }
            tookOver = true
            activity.delivery.inFlight = nil
            // The newer push, if one waits; else the lapsed one again.
            if activity.delivery.waiting == nil { activity.delivery.waiting = inFlight.push }
            activity.record(
                "taken_over", "\(inFlight.owner) took its \(inFlight.push.kind.rawValue) and did not finish within its lease: it may have been delivered",
                at: now
            )
        }
        guard let push = activity.delivery.waiting, let token = activity.updateToken, activity.state.isLive else {
            self.refreshDue(&activity)
            return .changed
        }
        if let last = activity.delivery.lastSentAt, last.addingDuration(self.configuration.minimumInterval) > now, !tookOver {
            self.refreshDue(&activity)
            return .changed
        }
        let priority = self.priority(of: push, delivery: &activity.delivery, bundleID: activity.bundleID, now: now)
        let timestamp = max(now, activity.lastTimestamp ?? now)
        activity.lastContentState = push.contentState
        activity.lastTimestamp = timestamp
        if let staleDate = push.staleDate { activity.staleDate = staleDate }
        if activity.state == .stale, (activity.staleDate ?? .distantPast) > now { activity.state = .active }
        let inFlight = InFlightPush(
            push: push, owner: self.configuration.instanceName, leaseUntil: now.addingDuration(self.configuration.lease), priority: priority,
            timestamp: timestamp
        )
        activity.delivery.waiting = nil
        activity.delivery.inFlight = inFlight
        activity.delivery.dueAt = inFlight.leaseUntil
        return .taken(
            Claim(
                id: activity.id, inFlight: inFlight, token: token, bundleID: activity.bundleID, tookOver: tookOver,
                record: activity
            )
        )
    }

    /// The priority of `push`, spending the budget of `delivery` (an activity's or a channel's)
    /// for an alerting update.
    func priority(of push: PendingPush, delivery: inout ActivityDelivery, bundleID: APNSBundleID, now: Date) -> Int {
        guard push.kind == .update else { return 10 }
        guard push.importance == .alerting else { return 5 }
        let budget =
            self.configuration.frequentUpdatesBundleIDs.contains(bundleID)
            ? self.configuration.frequentAlertingBudget : self.configuration.alertingBudget
        let windowStart = now.addingDuration(.zero - budget.window)
        delivery.alertingSent.removeAll { $0 <= windowStart }
        guard delivery.alertingSent.count < budget.count else {
            delivery.downgraded += 1
            return 5
        }
        delivery.alertingSent.append(now)
        return 10
    }

    /// Sends a batch of claims together; the verdicts in the claims' order.
    private static func send(_ claims: [Claim], client: APNSClient) async -> [Result<APNSSendResult, APNSError>] {
        var verdicts = [Result<APNSSendResult, APNSError>?](repeating: nil, count: claims.count)
        var batch: [(notification: APNSPreparedNotification, token: DeviceToken)] = []
        var positions: [Int] = []
        batch.reserveCapacity(claims.count)
        positions.reserveCapacity(claims.count)
        // Pushes with the same payload (a group's members, one state) are encoded once.
        var encoded: [PayloadKey: APNSPreparedNotification] = [:]
        for (position, claim) in claims.enumerated() {
            do throws(APNSValidationError) {
                let key = claim.inFlight.push.kind == .start
                    ? nil : PayloadKey(push: claim.inFlight.push, bundleID: claim.bundleID, priority: claim.inFlight.priority, timestamp: claim.inFlight.timestamp)
                let prepared: APNSPreparedNotification
                if let key, let known = encoded[key] {
                    prepared = known
                } else {
                    prepared = try Self.notification(for: claim).prepared()
                    if let key { encoded[key] = prepared }
                }
                batch.append((prepared, claim.token))
                positions.append(position)
            } catch {
                verdicts[position] = .failure(APNSError(kind: .invalidNotification, detail: "\(error.field) \(error.rule)"))
            }
        }
        for (position, verdict) in zip(positions, await client.send(batch: batch)) { verdicts[position] = verdict }
        return verdicts.map { $0! }
    }

    /// What decides an update's or an end's payload and headers: claims with equal keys send the same bytes.
    private struct PayloadKey: Hashable {
        var push: PendingPush
        var bundleID: APNSBundleID
        var priority: Int
        var timestamp: Date
    }

    /// The push a claim sends.
    private static func notification(for claim: Claim) -> any APNSNotification {
        let push = claim.inFlight.push
        // Both were written by StoredJSON from a value that encoded: they read back.
        let state = (try? StoredJSON.value(push.contentState)) ?? .object([:])
        if push.kind == .start {
            let attributes = claim.attributes.flatMap { try? StoredJSON.value($0) } ?? .object([:])
            return APNSLiveActivityStartNotification(
                attributesType: claim.attributesType, attributes: attributes, contentState: state,
                alert: push.alert.flatMap(StoredAlert.alert) ?? APNSLiveActivityAlert(title: "", body: ""), timestamp: claim.inFlight.timestamp,
                topic: claim.bundleID, staleDate: push.staleDate, relevanceScore: push.relevanceScore, inputPushChannel: claim.record.channelID,
                collapseID: try? APNSCollapseID(claim.id.rawValue)
            )
        }
        let event: APNSLiveActivityEvent = push.kind == .end ? .end(dismissalDate: push.dismissalDate) : .update
        return APNSLiveActivityNotification(
            event: event, contentState: state, timestamp: claim.inFlight.timestamp, topic: claim.bundleID, staleDate: push.staleDate,
            relevanceScore: push.relevanceScore, alert: push.alert.flatMap(StoredAlert.alert),
            priority: claim.inFlight.priority == 10 ? .immediately : .consideringDevicePower
        )
    }

    /// Records each claim's verdict on its activity.
    private func settle(_ claims: [Claim], verdicts: [Result<APNSSendResult, APNSError>], summary: inout DeliverySummary) async throws(LiveActivityError) {
        for (claim, verdict) in zip(claims, verdicts) {
            try await self.settle(claim, verdict: verdict, summary: &summary)
        }
    }

    /// Records a claim's verdict on its activity, unless another manager took the push over
    /// meanwhile (compare-and-set, starting from the record as the claim saved it).
    private func settle(_ claim: Claim, verdict: Result<APNSSendResult, APNSError>, summary: inout DeliverySummary) async throws(LiveActivityError) {
        let now = self.clock.now
        var counted: (sent: Bool, failed: Bool, retrying: Bool) = (false, false, false)
        _ = try await self.changeActivity(claim.id, creating: nil, reading: claim.record) {
            (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
            counted = (false, false, false)
            // The claim is this manager's and this lease's (a durable store keeps dates to the millisecond).
            guard let inFlight = activity.delivery.inFlight, inFlight.owner == claim.inFlight.owner,
                inFlight.leaseUntil.storedMilliseconds == claim.inFlight.leaseUntil.storedMilliseconds,
                inFlight.timestamp.storedMilliseconds == claim.inFlight.timestamp.storedMilliseconds
            else { return "taken over by another manager" }
            activity.delivery.inFlight = nil
            activity.delivery.dueAt = nil
            switch verdict {
            case .success:
                counted.sent = true
                activity.delivery.sent += 1
                activity.delivery.lastSentAt = now
                if claim.tookOver { activity.delivery.mayHaveBeenDeliveredTwice += 1 }
                if inFlight.push.kind == .start {
                    activity.record("start_sent", "the deferred start went through the push-to-start token \(Self.short(claim.token))", at: now)
                    // On a channel, nothing more is needed: its updates come by broadcast.
                    if activity.channelID != nil, activity.state == .starting { activity.state = .active }
                }
                if inFlight.push.kind == .end {
                    activity.state = .ended
                    activity.why = "ended by the backend"
                    activity.delivery.waiting = nil
                    activity.record("ended", "by the backend: the end went to \(Self.short(claim.token))", at: now)
                }
            case .failure(let error):
                if error.disposition == .dropToken, let reason = error.reason, inFlight.push.kind == .start {
                    counted.failed = true
                    activity.delivery.failed += 1
                    activity.state = .dead(reason: reason.rawValue)
                    activity.why = "APNs answered \(reason.rawValue) for the push-to-start token its start went to"
                    activity.record("dead", activity.why ?? "", at: now)
                } else if error.disposition == .dropToken, let reason = error.reason, activity.updateToken == claim.token {
                    counted.failed = true
                    activity.delivery.failed += 1
                    activity.delivery.waiting = nil
                    activity.state = .dead(reason: reason.rawValue)
                    activity.why = "APNs answered \(reason.rawValue) for its update token"
                    activity.record("dead", activity.why ?? "", at: now)
                } else if inFlight.push.attempts + 1 < self.configuration.deliveryAttempts, error.disposition != .fixRequest {
                    // Tried again after the minimum interval, unless a newer push waits already.
                    counted.retrying = true
                    activity.delivery.lastSentAt = now
                    if activity.delivery.waiting == nil {
                        var again = inFlight.push
                        again.attempts += 1
                        activity.delivery.waiting = again
                    }
                } else {
                    counted.failed = true
                    activity.delivery.failed += 1
                    activity.delivery.lastSentAt = now
                    activity.record("failed", "the \(inFlight.push.kind.rawValue) was not accepted: \(error)", at: now)
                    if inFlight.push.kind == .end, activity.delivery.waiting == nil {
                        // An end is never dropped: iOS would keep showing the activity for hours.
                        var again = inFlight.push
                        again.attempts = 0
                        activity.delivery.waiting = again
                    }
                }
            }
            self.refreshDue(&activity)
            return nil
        }
        if case .failure(let error) = verdict, error.disposition == .dropToken, let reason = error.reason, let key = claim.key {
            _ = try? await self.changePushToStart(key) { (current: PushToStartRecord?) throws(LiveActivityError) -> (PushToStartRecord?, String?) in
                guard var current, current.token == claim.token else { return (nil, "the token changed meanwhile") }
                current.deadReason = reason.rawValue
                return (current, nil)
            }
        }
        if counted.sent || counted.failed {
            self.metrics.verdict(claim.inFlight.push.kind, sent: counted.sent, requestedAt: claim.inFlight.push.requestedAt, now: now)
        }
        if counted.sent { summary.sent += 1 }
        if counted.failed { summary.failed += 1 }
        if counted.retrying { summary.retrying += 1 }
    }

    /// Sets ``ActivityDelivery/dueAt`` from the activity's delivery: a push in flight is due when
    /// its lease ends; a waiting one once the activity has its update token and the minimum
    /// interval since the last push has passed; nothing otherwise. A waiting push of an activity
    /// that is no longer live is dropped.
    func refreshDue(_ activity: inout ManagedActivity) {
        if !activity.state.isLive, activity.delivery.waiting != nil { activity.delivery.waiting = nil }
        if let inFlight = activity.delivery.inFlight {
            activity.delivery.dueAt = inFlight.leaseUntil
        } else if let waiting = activity.delivery.waiting, waiting.kind == .start {
            let retry = activity.delivery.lastSentAt?.addingDuration(self.configuration.minimumInterval) ?? waiting.requestedAt
            activity.delivery.dueAt = max(activity.delivery.dueAt ?? retry, retry)
        } else if let waiting = activity.delivery.waiting, activity.updateToken != nil {
            let earliest = activity.delivery.lastSentAt?.addingDuration(self.configuration.minimumInterval) ?? waiting.requestedAt
            activity.delivery.dueAt = max(earliest, waiting.requestedAt)
        } else {
            activity.delivery.dueAt = nil
        }
    }
}

