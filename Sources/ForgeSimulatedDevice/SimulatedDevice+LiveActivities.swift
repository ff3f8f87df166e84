public import ForgeNotificationTypes
internal import ForgeSupport
public import Foundation

extension SimulatedDevice {
    /// The Live Activities on the device (stale and dismissal dates checked against the clock first).
    public var liveActivities: [LiveActivity] {
        self.refreshLiveActivities()
        return self.state.withLock { $0.activities }
    }

    /// The Live Activity with `id`, if any.
    public func liveActivity(_ id: String) -> LiveActivity? {
        self.liveActivities.first { $0.id == id }
    }

    /// Subscribes a Live Activity to a broadcast channel, as the app does when it requests the
    /// activity with `pushType: .channel(channelID)` (replacing an earlier channel). A start push with
    /// `input-push-channel` subscribes the activity it starts by itself.
    ///
    /// Broadcasts to the channel then reach the activity with the same rules as pushes to its token:
    /// an update older than the last applied one is ignored; nothing after `end`.
    /// - Throws: ``SimulatedDeviceError/activityNotFound`` when no activity has `activityID`.
    public func subscribe(_ activityID: String, toChannel channelID: String) throws(SimulatedDeviceError) {
        let found = self.state.withLock { state -> Bool in
            guard let index = state.activities.firstIndex(where: { $0.id == activityID }) else { return false }
            state.activities[index].channelID = channelID
            return true
        }
        guard found else { throw SimulatedDeviceError.activityNotFound.with("no Live Activity \(activityID)") }
        self.record(.liveActivitySubscribed(activityID: activityID, channelID: channelID))
    }

    /// Checks the activities against the device clock: one that has run for
    /// ``maximumActivityDuration`` (eight hours) since its start is ended by iOS (and its app reports
    /// the end), an active activity whose stale date has passed becomes stale, an ended one whose
    /// dismissal date has passed is dismissed. The device does this on every push and every read; a
    /// test that moved its clock may call it directly.
    public func refreshLiveActivities() {
        let now = self.clock.now
        var endedByIOS: [LiveActivity] = []
        let events = self.state.withLock { state -> [DeviceEvent] in
            var events: [DeviceEvent] = []
            for index in state.activities.indices {
                if state.activities[index].phase == .active || state.activities[index].phase == .stale,
                    now.timeIntervalSince(state.activities[index].startedAt) >= Self.maximumActivityDuration
                {
                    state.activities[index].phase = .ended
                    state.activities[index].isAwaitingPermission = false
                    endedByIOS.append(state.activities[index])
                    events.append(.liveActivityEnded(activityID: state.activities[index].id, dismissalDate: nil))
                }
                let activity = state.activities[index]
                if activity.phase == .active, let stale = activity.current?.staleDate, now >= stale {
                    state.activities[index].phase = .stale
                    events.append(.liveActivityBecameStale(activityID: activity.id))
                }
                if activity.phase == .ended, let dismissal = activity.dismissalDate, now >= dismissal {
                    state.activities[index].phase = .dismissed
                    events.append(.liveActivityDismissed(activityID: activity.id))
                }
            }
            return events
        }
        events.forEach { self.record($0) }
        endedByIOS.forEach { self.reportEnded($0) }
    }

    /// A `liveactivity` push: start by push-to-start token (subscribing the activity to
    /// `input-push-channel` when given), update or end by activity token.
    ///
    /// - An update whose `timestamp` is older than the last applied one is ignored; one with the
    ///   same timestamp is applied (timestamps have one-second resolution, so two updates sent within
    ///   a second both count, in arrival order).
    /// - Pushes after `end` are ignored.
    /// - A content state that does not decode as the activity type's `ContentState` is rejected.
    func deliverLiveActivity(_ push: DevicePush, payload: JSONValue) {
        let aps = payload["aps"]
        guard let (event, timestamp) = self.eventAndTimestamp(of: push, aps: aps) else { return }
        if let app = self.apps.first(where: { $0.pushToStartToken == push.token }) {
            guard event == "start" else {
                self.record(
                    .liveActivityPushRejected(apnsID: push.apnsID, reason: "\(event) sent to a push-to-start token")
                )
                return
            }
            self.start(push, aps: aps, timestamp: timestamp, app: app)
        } else if let activity = self.state.withLock({ $0.activities.first { $0.updateToken == push.token } }) {
            guard event != "start" else {
                self.record(.liveActivityPushRejected(apnsID: push.apnsID, reason: "start sent to an activity token"))
                return
            }
            self.apply(push, event: event, aps: aps, timestamp: timestamp, to: activity)
        } else {
            self.record(.droppedUnknownToken(apnsID: push.apnsID, token: push.token))
            return
        }
        self.refreshLiveActivities()
    }

    /// A broadcast on `channelID`: an update or end for every Live Activity subscribed to the channel,
    /// each with the rules of a push to its token (older timestamps ignored, nothing after `end`).
    func deliverBroadcast(_ push: DevicePush, channelID: String, payload: JSONValue) {
        let aps = payload["aps"]
        guard let (event, timestamp) = self.eventAndTimestamp(of: push, aps: aps) else { return }
        guard event != "start" else {
            self.record(.liveActivityPushRejected(apnsID: push.apnsID, reason: "start sent to a broadcast channel"))
            return
        }
        let subscribed = self.state.withLock { $0.activities.filter { $0.channelID == channelID } }
        guard !subscribed.isEmpty else {
            self.record(.broadcastNotSubscribed(apnsID: push.apnsID, channelID: channelID))
            return
        }
        for activity in subscribed {
            self.apply(push, event: event, aps: aps, timestamp: timestamp, to: activity)
        }
        self.refreshLiveActivities()
    }

    /// `aps.event` (start, update or end) and `aps.timestamp`; `nil` (and a rejection recorded) when
    /// either is missing or wrong.
    private func eventAndTimestamp(of push: DevicePush, aps: JSONValue?) -> (String, Date)? {
        guard let event = aps?["event"]?.stringValue, ["start", "update", "end"].contains(event) else {
            self.record(.liveActivityPushRejected(apnsID: push.apnsID, reason: "aps.event is not start, update or end"))
            return nil
        }
        guard let seconds = aps?["timestamp"]?.doubleValue else {
            self.record(.liveActivityPushRejected(apnsID: push.apnsID, reason: "aps.timestamp is missing"))
            return nil
        }
        return (event, Date(timeIntervalSince1970: seconds))
    }

    private func start(_ push: DevicePush, aps: JSONValue?, timestamp: Date, app: SimulatedApp) {
        guard let typeName = aps?["attributes-type"]?.stringValue else {
            self.record(.liveActivityPushRejected(apnsID: push.apnsID, reason: "aps.attributes-type is missing"))
            return
        }
        guard let type = app.activityType(named: typeName) else {
            self.record(
                .liveActivityPushRejected(apnsID: push.apnsID, reason: "\(app.bundleID) has no activity type \(typeName)")
            )
            return
        }
        guard let attributes = aps?["attributes"], attributes.objectValue != nil else {
            self.record(.liveActivityPushRejected(apnsID: push.apnsID, reason: "aps.attributes is missing"))
            return
        }
        do {
            try type.decodeAttributes(attributes.jsonData)
        } catch {
            let why = "attributes do not decode as \(typeName)'s attributes: \(error)"
            self.logDelivery(push.apnsID, .discarded(.decodingFailed), reason: why)
            self.record(.liveActivityPushRejected(apnsID: push.apnsID, reason: why))
            return
        }
        guard let contentState = self.decodedContentState(aps, type: type, push: push, required: true) else { return }
        self.checkContentStateDates(contentState, type: type, push: push, timestamp: timestamp)
        let state = Self.state(event: "start", aps: aps, timestamp: timestamp, contentState: contentState)
        let channelID = aps?["input-push-channel"]?.stringValue
        let (activity, observers) = self.state.withLock { deviceState in
            deviceState.activityCount += 1
            // On a phone that asks first, an app the person has not allowed yet gets its activity
            // on the Lock Screen with no update token (see SimulatedDevice+ActivityPermission.swift).
            let awaiting = deviceState.asksBeforeActivities && deviceState.activityPermissions[app.bundleID] == nil
            let (id, token) = ("activity-\(deviceState.activityCount)", awaiting ? "" : deviceState.activityTokens.next())
            let activity = LiveActivity(
                id: id, bundleID: app.bundleID, attributesType: typeName, attributes: attributes, updateToken: token,
                channelID: channelID, phase: .active, dismissalDate: nil, history: [state], startedAt: self.clock.now,
                isAwaitingPermission: awaiting
            )
            deviceState.activities.append(activity)
            return (activity, awaiting ? [] : Array(deviceState.tokenObservers.values))
        }
        guard !activity.isAwaitingPermission else {
            self.record(.liveActivityAwaitingPermission(activityID: activity.id, bundleID: app.bundleID, attributesType: typeName))
            if let channelID { self.record(.liveActivitySubscribed(activityID: activity.id, channelID: channelID)) }
            return
        }
        for observer in observers { observer(activity.updateToken, app.bundleID) }
        self.record(
            .liveActivityStarted(
                activityID: activity.id, bundleID: app.bundleID, attributesType: typeName, updateToken: activity.updateToken
            )
        )
        if let channelID { self.record(.liveActivitySubscribed(activityID: activity.id, channelID: channelID)) }
        self.reportUpdateToken(of: activity)
    }

    private func apply(_ push: DevicePush, event: String, aps: JSONValue?, timestamp: Date, to activity: LiveActivity) {
        guard activity.phase != .ended, activity.phase != .dismissed else {
            self.record(.liveActivityPushIgnored(activityID: activity.id, reason: "the activity has ended"))
            return
        }
        if let last = activity.current?.timestamp, timestamp < last {
            self.record(
                .liveActivityPushIgnored(
                    activityID: activity.id,
                    reason: "timestamp \(ISODate.string(timestamp)) is older than the last applied \(ISODate.string(last))"
                )
            )
            return
        }
        guard let app = self.app(activity.bundleID), let type = app.activityType(named: activity.attributesType) else {
            self.record(
                .liveActivityPushRejected(
                    apnsID: push.apnsID, reason: "\(activity.bundleID) no longer has activity type \(activity.attributesType)"
                )
            )
            return
        }
        // An end push may leave the content state out: the last one stays.
        let required = event == "update"
        guard let decoded = self.decodedContentState(aps, type: type, push: push, required: required) else { return }
        if decoded != .null { self.checkContentStateDates(decoded, type: type, push: push, timestamp: timestamp) }
        let contentState = decoded == .null ? (activity.current?.contentState ?? .null) : decoded
        let state = Self.state(event: event, aps: aps, timestamp: timestamp, contentState: contentState)
        let dismissalDate = aps?["dismissal-date"]?.doubleValue.map { Date(timeIntervalSince1970: $0) }
        self.state.withLock { deviceState in
            guard let index = deviceState.activities.firstIndex(where: { $0.id == activity.id }) else { return }
            deviceState.activities[index].history.append(state)
            if event == "end" {
                deviceState.activities[index].phase = .ended
                deviceState.activities[index].isAwaitingPermission = false
                deviceState.activities[index].dismissalDate = dismissalDate
            } else {
                deviceState.activities[index].phase = .active
            }
        }
        if event == "end" {
            self.record(.liveActivityEnded(activityID: activity.id, dismissalDate: dismissalDate))
            // The app sees the end in `activityStateUpdates`, as with any end.
            self.reportEnded(activity)
        } else {
            self.record(.liveActivityUpdated(activityID: activity.id, timestamp: timestamp))
        }
    }

    /// The push's content state once it decodes as the type's `ContentState`; `.null` when absent
    /// and not required; `nil` (and a rejection recorded) otherwise.
    private func decodedContentState(
        _ aps: JSONValue?, type: LiveActivityType, push: DevicePush, required: Bool
    ) -> JSONValue? {
        guard let contentState = aps?["content-state"] else {
            if required {
                self.record(.liveActivityPushRejected(apnsID: push.apnsID, reason: "aps.content-state is missing"))
                return nil
            }
            return .null
        }
        do {
            try type.decodeContentState(contentState.jsonData)
            return contentState
        } catch {
            let why = "content-state does not decode as \(type.attributesType).ContentState: \(error)"
            self.logDelivery(push.apnsID, .discarded(.decodingFailed), reason: why)
            self.record(.liveActivityPushRejected(apnsID: push.apnsID, reason: why))
            return nil
        }
    }

    private static func state(event: String, aps: JSONValue?, timestamp: Date, contentState: JSONValue) -> LiveActivityState {
        LiveActivityState(
            event: event, timestamp: timestamp, contentState: contentState,
            staleDate: aps?["stale-date"]?.doubleValue.map { Date(timeIntervalSince1970: $0) },
            relevanceScore: aps?["relevance-score"]?.doubleValue, alert: aps?["alert"]
        )
    }
}

extension SimulatedDevice {
    /// The app starts a Live Activity itself, as with ActivityKit's
    /// `Activity.request(attributes:content:pushType: .token)`: the activity is active at once with
    /// `contentState`, and its update token (what the app sends its server) is `updateToken`, or
    /// one the device issues; `startedAt` is the start's timestamp (now by default), against which
    /// later pushes' `timestamp`s are compared.
    /// - Throws: ``SimulatedDeviceError/unknownApp`` when `bundleID` is not installed or has no
    ///   activity type `attributesType`, or when `contentState` does not decode as its `ContentState`.
    @discardableResult
    public func requestActivity(
        bundleID: String, attributesType: String, attributes: JSONValue = .object([:]), contentState: JSONValue,
        updateToken: String? = nil, startedAt: Date? = nil
    ) throws(SimulatedDeviceError) -> LiveActivity {
        guard let app = self.app(bundleID) else { throw SimulatedDeviceError.unknownApp.with("no app \(bundleID) on the device") }
        guard let type = app.activityType(named: attributesType) else {
            throw SimulatedDeviceError.unknownApp.with("\(bundleID) has no activity type \(attributesType)")
        }
        do {
            try type.decodeContentState(contentState.jsonData)
        } catch {
            throw SimulatedDeviceError.unknownApp.with("content state does not decode as \(attributesType).ContentState: \(error)")
        }
        let state = LiveActivityState(event: "start", timestamp: startedAt ?? self.clock.now, contentState: contentState)
        let (activity, observers) = self.state.withLock { deviceState in
            deviceState.activityCount += 1
            let token = updateToken?.lowercased() ?? deviceState.activityTokens.next()
            let activity = LiveActivity(
                id: "activity-\(deviceState.activityCount)", bundleID: bundleID, attributesType: attributesType,
                attributes: attributes, updateToken: token, channelID: nil, phase: .active, dismissalDate: nil, history: [state],
                startedAt: self.clock.now
            )
            deviceState.activities.append(activity)
            return (activity, Array(deviceState.tokenObservers.values))
        }
        for observer in observers { observer(activity.updateToken, bundleID) }
        self.record(
            .liveActivityStarted(activityID: activity.id, bundleID: bundleID, attributesType: attributesType, updateToken: activity.updateToken)
        )
        self.reportUpdateToken(of: activity)
        return activity
    }
}
