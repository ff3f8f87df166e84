internal import ForgeAPNs
public import ForgeAPNsCore
internal import ForgeSupport
public import struct Foundation.Date

extension LiveActivityManager {
    /// What a request for a whole group did.
    public struct GroupRequestOutcome: Hashable, Sendable {
        /// Members that get the push through their own token (each coalesced as one activity's
        /// request is).
        public var members = 0
        /// Channels that get one broadcast (each coalesced as one activity's pushes are).
        public var channels = 0
        /// Members reached through those channels.
        public var onChannels = 0
        /// Members and channels whose waiting push this request replaced.
        public var superseded = 0
        /// Members left alone: ended, dead, or with an end already waiting.
        public var skipped = 0
    }

    // MARK: Reading

    /// The activities of `group`, in id order.
    public func activities(inGroup group: LiveActivityGroupID) async throws(LiveActivityError) -> [ManagedActivity] {
        try await self.storing { try await self.store.activities(inGroup: group) }
    }

    /// The broadcast channels of `group` (one per app), with their pacing and counts.
    public func channels(of group: LiveActivityGroupID) async throws(LiveActivityError) -> [GroupChannel] {
        try await self.storing { try await self.store.groupChannels(of: group) }
    }

    // MARK: Requests

    /// Asks for one update of every member of `group`, in one call: one broadcast to each of the
    /// group's open channels (which reaches every member started on it), and an update to every
    /// other live member through its own token. Each is paced and coalesced as
    /// ``request(update:contentState:staleDate:alert:relevanceScore:importance:)`` is (a newer
    /// group update replaces a waiting one: the members only ever see the latest state), and sent
    /// by ``run(poll:)`` through the batched engine; a channel that APNs answers with 429 waits on
    /// its own (``Configuration/channelBackoff``) while everything else goes on. `relevanceScore`
    /// is sent only when given.
    /// - Throws: ``LiveActivityError/Code/unknownActivity`` (field `group`) for a group with no
    ///   member; ``LiveActivityError/Code/invalidInput`` for a content state or alert that cannot
    ///   be encoded, or a relevance score that is not finite; ``LiveActivityError/Code/store``.
    @discardableResult
    public func request<ContentState: Encodable & Sendable>(
        groupUpdate group: LiveActivityGroupID, contentState: ContentState, staleDate: Date? = nil, alert: APNSLiveActivityAlert? = nil,
        relevanceScore: Double? = nil, importance: UpdateImportance = .routine
    ) async throws(LiveActivityError) -> GroupRequestOutcome {
        let push = try self.updatePush(
            contentState: contentState, staleDate: staleDate, alert: alert, relevanceScore: relevanceScore, importance: importance
        )
        return try await self.enqueue(push, group: group)
    }

    /// Asks for the end of every member of `group`: one end broadcast to each open channel (its
    /// channel is deleted once APNs accepted it, and the members on it are ended), and an end to
    /// every other live member through its token (never dropped, as
    /// ``request(end:contentState:dismissalDate:)``). `contentState` `nil` ends each on the latest
    /// state asked for or sent.
    /// - Throws: as ``request(groupUpdate:contentState:staleDate:alert:relevanceScore:importance:)``.
    @discardableResult
    public func request<ContentState: Encodable & Sendable>(
        groupEnd group: LiveActivityGroupID, contentState: ContentState?, dismissalDate: Date? = nil
    ) async throws(LiveActivityError) -> GroupRequestOutcome {
        try await self.enqueue(try self.endPush(contentState: contentState, dismissalDate: dismissalDate), group: group)
    }

    /// Puts `push` on each open channel of `group` and on each live member that is not on one.
    private func enqueue(_ push: PendingPush, group: LiveActivityGroupID) async throws(LiveActivityError) -> GroupRequestOutcome {
        let members = try await self.activities(inGroup: group)
        guard !members.isEmpty else {
            throw LiveActivityError(.unknownActivity, field: "group", rule: "no activity belongs to the group \(group)")
        }
        var outcome = GroupRequestOutcome()
        var open: Set<APNSChannelID> = []
        for channel in try await self.channels(of: group) {
            guard case .open(let id) = channel.phase else { continue }
            var channelPush = push
            if push.kind == .end, push.contentState.isEmpty {
                // The latest state the channel was asked for or sent; else that of a member on it.
                let latest = channel.delivery.waiting?.contentState ?? channel.delivery.inFlight?.push.contentState
                    ?? members.first { $0.channelID == id }?.lastContentState
                guard let latest else { continue }
                channelPush.contentState = latest
            }
            let superseded = try await self.changeChannel(group, bundleID: channel.bundleID, reading: channel) { (current: inout GroupChannel) -> Bool? in
                guard case .open = current.phase else { return nil }
                let replaced = current.delivery.waiting != nil
                current.delivery.requested += 1
                if replaced { current.delivery.superseded += 1 }
                current.delivery.waiting = channelPush
                self.refreshDue(&current)
                return replaced
            }
            guard let superseded else { continue }
            open.insert(id)
            outcome.channels += 1
            if superseded {
                outcome.superseded += 1
                self.metrics.superseded()
            }
            self.metrics.requested(push.kind)
        }
        let channelsOpen = open
        let parts = try await Self.inParts(members) { (part: ArraySlice<ManagedActivity>) async throws(LiveActivityError) -> GroupRequestOutcome in
            var outcome = GroupRequestOutcome()
            for member in part {
                if let channel = member.channelID, channelsOpen.contains(channel) {
                    outcome.onChannels += member.state.isLive ? 1 : 0
                    continue
                }
                guard member.state.isLive, member.state != .ending else {
                    outcome.skipped += 1
                    continue
                }
                do throws(LiveActivityError) {
                    let result = try await self.enqueue(push, activity: member.id, reading: member)
                    outcome.members += 1
                    if result.superseded { outcome.superseded += 1 }
                } catch {
                    // Ended, died or began ending since the group was read; any other error is the store's.
                    guard error.code == .notLive || error.code == .unknownActivity || error.code == .invalidInput else { throw error }
                    outcome.skipped += 1
                }
            }
            return outcome
        }
        for part in parts {
            outcome.members += part.members
            outcome.onChannels += part.onChannels
            outcome.superseded += part.superseded
            outcome.skipped += part.skipped
        }
        self.doorbell.advance(by: 1)
        return outcome
    }

    // MARK: Channels

    /// The open channel of `group` for `bundleID`, created when the group has none: a create is
    /// sent only after the app's channels were listed, and one whose answer never came is looked
    /// for among them before another is made.
    /// - Throws: ``LiveActivityError/Code/sendFailed`` when the channel API fails;
    ///   ``LiveActivityError/Code/notLive`` (field `group`) for a group whose channel was closed.
    func openChannel(
        _ group: LiveActivityGroupID, bundleID: APNSBundleID, policy: APNSMessageStoragePolicy
    ) async throws(LiveActivityError) -> APNSChannelID {
        let client = try self.sendingClient()
        guard await self.channelOpening.acquire() else { throw LiveActivityError(.sendFailed, field: "group", rule: "cancelled") }
        defer { self.channelOpening.release() }
        for _ in 0..<4 {
            let now = self.clock.now
            let current = try await self.storing { try await self.store.groupChannel(group, bundleID: bundleID) }
            switch current?.phase {
            case .open(let id): return id
            case .closing, .deleted:
                throw LiveActivityError(.notLive, field: "group", rule: "\(group) has ended: its channel for \(bundleID) is closed")
            case .creating(let owner, let since, let listedBefore):
                if owner != self.configuration.instanceName, since.addingDuration(self.configuration.lease) > now {
                    throw LiveActivityError(
                        .sendFailed, field: "group", rule: "\(owner) is creating the channel of \(group) for \(bundleID); try again after it"
                    )
                }
                // A create whose answer never came: the channel may exist. Listed first, never created blind.
                let listed = try await self.listChannels(bundleID, client: client)
                let claimed = Set(try await self.storing { try await self.store.groupChannels(of: nil) }.compactMap(\.channelID))
                let known = Set(listedBefore)
                if let found = listed.first(where: { !known.contains($0) && !claimed.contains($0) }) {
                    let adopted = try await self.changeChannel(group, bundleID: bundleID, reading: current) { (channel: inout GroupChannel) -> Bool? in
                        guard case .creating = channel.phase else { return nil }
                        channel.phase = .open(found)
                        return true
                    }
                    if adopted != nil { return found }
                    continue
                }
                guard let current, try await self.saveChannel(creating(current, listed: listed, now: now), replacing: current.version) else { continue }
            case nil:
                let listed = try await self.listChannels(bundleID, client: client)
                let fresh = GroupChannel(group: group, bundleID: bundleID, phase: .creating(owner: self.configuration.instanceName, since: now, listedBefore: listed))
                guard try await self.saveChannel(fresh, replacing: nil) else { continue }
            }
            let id: APNSChannelID
            do {
                id = try await client.createChannel(bundleID: bundleID, storagePolicy: policy)
            } catch {
                // Left `creating`: the next start lists the app's channels before any new create.
                throw LiveActivityError(.sendFailed, field: "group", rule: "the channel of \(group) for \(bundleID) was not created: \(error)")
            }
            let opened = try await self.changeChannel(group, bundleID: bundleID, reading: nil) { (channel: inout GroupChannel) -> Bool? in
                guard case .creating = channel.phase else { return nil }
                channel.phase = .open(id)
                return true
            }
            if opened != nil { return id }
            // Another manager settled it meanwhile (after this one's lease): its channel is the
            // group's, and this one is deleted.
            try? await client.deleteChannel(id, bundleID: bundleID)
        }
        throw LiveActivityError(.store, rule: "the channel of \(group) for \(bundleID) kept changing under writes")
    }

    private func creating(_ channel: GroupChannel, listed: [APNSChannelID], now: Date) -> GroupChannel {
        var channel = channel
        channel.phase = .creating(owner: self.configuration.instanceName, since: now, listedBefore: listed)
        return channel
    }

    private func listChannels(_ bundleID: APNSBundleID, client: APNSClient) async throws(LiveActivityError) -> [APNSChannelID] {
        do {
            return try await client.channels(bundleID: bundleID)
        } catch {
            throw LiveActivityError(.sendFailed, field: "group", rule: "the channels of \(bundleID) could not be listed: \(error)")
        }
    }

    private func saveChannel(_ channel: GroupChannel, replacing expected: Int?) async throws(LiveActivityError) -> Bool {
        try await self.storing { try await self.store.save(channel, replacing: expected) }
    }

    /// Applies `body` to the channel (compare-and-set, read again on a conflict); `body` returns
    /// `nil` to change nothing. `reading`, when given, is the first reading.
    func changeChannel<Result>(
        _ group: LiveActivityGroupID, bundleID: APNSBundleID, reading: GroupChannel?, _ body: (inout GroupChannel) throws(LiveActivityError) -> Result?
    ) async throws(LiveActivityError) -> Result? {
        var reading = reading
        for _ in 0..<64 {
            let stored: GroupChannel?
            if let first = reading.take() { stored = first } else { stored = try await self.storing { try await self.store.groupChannel(group, bundleID: bundleID) } }
            guard var channel = stored else { return nil }
            guard let result = try body(&channel) else { return nil }
            if try await self.saveChannel(channel, replacing: stored?.version) { return result }
        }
        throw LiveActivityError(.store, rule: "the channel of \(group) for \(bundleID) kept changing under 64 writes in a row")
    }

    /// A channel's next due date: its lease while a broadcast is in flight; its waiting broadcast's
    /// once the minimum interval and any 429 back-off have passed; now for a closing channel to
    /// delete; none otherwise.
    func refreshDue(_ channel: inout GroupChannel) {
        if let inFlight = channel.delivery.inFlight {
            channel.delivery.dueAt = inFlight.leaseUntil
        } else if let waiting = channel.delivery.waiting {
            let interval = channel.delivery.lastSentAt?.addingDuration(self.configuration.minimumInterval) ?? waiting.requestedAt
            channel.delivery.dueAt = max(interval, waiting.requestedAt, channel.backoffUntil ?? .distantPast)
        } else if case .closing = channel.phase {
            channel.delivery.dueAt = max(channel.delivery.lastSentAt ?? .distantPast, channel.backoffUntil ?? .distantPast)
        } else {
            channel.delivery.dueAt = nil
        }
    }

    // MARK: Delivering broadcasts

    /// A channel's work taken by this manager.
    struct ChannelClaim: Sendable {
        enum Work: Sendable {
            case broadcast(APNSPreparedBroadcast, InFlightPush)
            case delete
        }
        var channel: GroupChannel
        var channelID: APNSChannelID
        var work: Work
        var tookOver: Bool
    }

    /// Takes each due channel's broadcast (or its deletion) with a lease, as activities' pushes are taken.
    func claimDueChannels(now: Date) async throws(LiveActivityError) -> [ChannelClaim] {
        let channels = try await self.storing { try await self.store.groupChannels(of: nil) }
        var claims: [ChannelClaim] = []
        for channel in channels where (channel.delivery.dueAt ?? .distantFuture) <= now {
            var claim: ChannelClaim?
            let taken = try await self.changeChannel(channel.group, bundleID: channel.bundleID, reading: channel) {
                (current: inout GroupChannel) throws(LiveActivityError) -> Bool? in
                claim = nil
                guard let dueAt = current.delivery.dueAt, dueAt <= now, let id = current.channelID else { return nil }
                var tookOver = false
                if let inFlight = current.delivery.inFlight {
                    guard inFlight.leaseUntil <= now else { return nil }
                    tookOver = true
                    current.delivery.inFlight = nil
                    if current.delivery.waiting == nil { current.delivery.waiting = inFlight.push }
                }
                let lease = now.addingDuration(self.configuration.lease)
                guard let push = current.delivery.waiting else {
                    guard case .closing = current.phase else {
                        self.refreshDue(&current)
                        return true
                    }
                    // The deletion, under a lease of its own.
                    current.delivery.dueAt = lease
                    claim = ChannelClaim(channel: current, channelID: id, work: .delete, tookOver: tookOver)
                    return true
                }
                var delivery = current.delivery
                let priority = self.priority(of: push, delivery: &delivery, bundleID: current.bundleID, now: now)
                current.delivery = delivery
                let timestamp = max(now, current.delivery.inFlight?.timestamp ?? now)
                let inFlight = InFlightPush(
                    push: push, owner: self.configuration.instanceName, leaseUntil: lease, priority: priority, timestamp: timestamp
                )
                let prepared: APNSPreparedBroadcast
                do throws(APNSValidationError) {
                    prepared = try self.broadcast(push, channel: id, bundleID: current.bundleID, priority: priority, timestamp: timestamp, now: now)
                } catch {
                    current.delivery.waiting = nil
                    current.delivery.failed += 1
                    self.refreshDue(&current)
                    return true
                }
                current.delivery.waiting = nil
                current.delivery.inFlight = inFlight
                current.delivery.dueAt = lease
                if tookOver { current.delivery.mayHaveBeenDeliveredTwice += 1 }
                claim = ChannelClaim(channel: current, channelID: id, work: .broadcast(prepared, inFlight), tookOver: tookOver)
                return true
            }
            if taken != nil, var claim {
                claim.channel.version += 1
                claims.append(claim)
            }
        }
        return claims
    }

    /// The broadcast of `push` on a channel; it expires with the stored message (8 hours) on a
    /// channel that stores one, at once otherwise.
    private func broadcast(
        _ push: PendingPush, channel: APNSChannelID, bundleID: APNSBundleID, priority: Int, timestamp: Date, now: Date
    ) throws(APNSValidationError) -> APNSPreparedBroadcast {
        let state = (try? StoredJSON.value(push.contentState)) ?? .object([:])
        let event: APNSLiveActivityEvent = push.kind == .end ? .end(dismissalDate: push.dismissalDate) : .update
        let expiration: APNSExpiration =
            self.configuration.groupChannels == .mostRecentMessageStored ? .at(now.addingTimeInterval(8 * 3600)) : .immediately
        return try APNSBroadcastNotification(
            channelID: channel, bundleID: bundleID, event: event, contentState: state, timestamp: timestamp, staleDate: push.staleDate,
            relevanceScore: push.relevanceScore, alert: push.alert.flatMap(StoredAlert.alert),
            priority: priority == 10 ? .immediately : .consideringDevicePower, expiration: expiration
        ).prepared()
    }

    /// Does a claimed channel's work and records its verdict.
    func deliver(_ claim: ChannelClaim, client: APNSClient, summary: inout DeliverySummary) async {
        switch claim.work {
        case .delete:
            let verdict: Result<Void, APNSError>
            do {
                try await client.deleteChannel(claim.channelID, bundleID: claim.channel.bundleID)
                verdict = .success(())
            } catch {
                verdict = error.reason == .channelNotRegistered ? .success(()) : .failure(error)
            }
            let now = self.clock.now
            _ = try? await self.changeChannel(claim.channel.group, bundleID: claim.channel.bundleID, reading: claim.channel) {
                (channel: inout GroupChannel) -> Bool? in
                guard case .closing(let id) = channel.phase else { return nil }
                switch verdict {
                case .success: channel.phase = .deleted(id)
                case .failure: channel.backoffUntil = now.addingDuration(self.configuration.channelBackoff)
                }
                self.refreshDue(&channel)
                return true
            }
        case .broadcast(let prepared, let inFlight):
            let verdict: Result<APNSSendResult, APNSError>
            do {
                verdict = .success(try await client.send(prepared))
            } catch {
                verdict = .failure(error)
            }
            await self.settle(claim, inFlight: inFlight, verdict: verdict, summary: &summary)
        }
    }

    private func settle(_ claim: ChannelClaim, inFlight: InFlightPush, verdict: Result<APNSSendResult, APNSError>, summary: inout DeliverySummary) async {
        let now = self.clock.now
        var counted: (sent: Bool, throttled: Bool, failed: Bool) = (false, false, false)
        let changed = try? await self.changeChannel(claim.channel.group, bundleID: claim.channel.bundleID, reading: claim.channel) {
            (channel: inout GroupChannel) -> Bool? in
            counted = (false, false, false)
            guard let current = channel.delivery.inFlight, current.owner == inFlight.owner,
                current.leaseUntil.storedMilliseconds == inFlight.leaseUntil.storedMilliseconds
            else { return nil }
            channel.delivery.inFlight = nil
            switch verdict {
            case .success:
                counted.sent = true
                channel.delivery.sent += 1
                channel.delivery.lastSentAt = now
                channel.throttledInARow = 0
                channel.backoffUntil = nil
                if inFlight.push.kind == .end, case .open(let id) = channel.phase {
                    channel.phase = .closing(id)
                    channel.delivery.waiting = nil
                }
            case .failure(let error) where error.reason == .tooManyRequests:
                // Throttled: this channel waits, doubling each time; the broadcast goes again
                // unless a newer one waits.
                counted.throttled = true
                channel.throttled += 1
                channel.throttledInARow += 1
                let factor = 1 << min(channel.throttledInARow - 1, 6)
                channel.backoffUntil = now.addingDuration(min(self.configuration.channelBackoff * factor, .seconds(60)))
                if channel.delivery.waiting == nil { channel.delivery.waiting = inFlight.push }
            case .failure(let error) where error.reason == .channelNotRegistered:
                counted.failed = true
                channel.delivery.failed += 1
                channel.delivery.waiting = nil
                channel.phase = .deleted(claim.channelID)
            case .failure(let error):
                channel.delivery.lastSentAt = now
                if inFlight.push.attempts + 1 < self.configuration.deliveryAttempts || inFlight.push.kind == .end,
                    error.disposition != .fixRequest || inFlight.push.kind == .end
                {
                    if channel.delivery.waiting == nil {
                        var again = inFlight.push
                        again.attempts += 1
                        channel.delivery.waiting = again
                    }
                } else {
                    counted.failed = true
                    channel.delivery.failed += 1
                }
            }
            self.refreshDue(&channel)
            return true
        }
        guard changed != nil else { return }
        if counted.sent {
            summary.broadcasts += 1
            self.metrics.broadcastSent(inFlight.push.kind, requestedAt: inFlight.push.requestedAt, now: now)
            if inFlight.push.kind == .end { await self.endMembers(of: claim.channel.group, on: claim.channelID, now: now) }
        }
        if counted.throttled {
            summary.throttled += 1
            self.metrics.channelThrottled()
        }
        if counted.failed { summary.failed += 1 }
    }

    /// Ends the members that listened to a channel whose end broadcast APNs accepted.
    private func endMembers(of group: LiveActivityGroupID, on channel: APNSChannelID, now: Date) async {
        guard let members = try? await self.activities(inGroup: group) else { return }
        for member in members where member.channelID == channel && member.state.isLive {
            _ = try? await self.changeActivity(member.id, creating: nil, reading: member) { (activity: inout ManagedActivity) throws(LiveActivityError) -> String? in
                guard activity.state.isLive else { return "already \(activity.state)" }
                activity.state = .ended
                activity.why = "ended by the backend: its group's end went to its channel"
                activity.record("ended", activity.why ?? "", at: now)
                self.refreshDue(&activity)
                return nil
            }
        }
    }
}
