public import ForgeNotificationTypes
internal import struct Foundation.Date
internal import ForgeSupport

/// An iPhone for loopback tests: installed apps receive what the local APNs server accepted and
/// react as iOS would, and every step lands in a timeline.
///
/// ## Overview
/// The loopback wiring turns each accepted request into a ``DevicePush`` and delivers it
/// (``deliver(_:)-(DevicePush)``, or ``deliver(_:)-(AsyncSequence)`` for a stream of them, each push
/// concurrently with the others in the order iOS keeps). Each push first gets its
/// ``DeliveryState`` from the ``DeviceRules`` (budgets, storage while ``goOffline()``, tokens the
/// device no longer has; `docs/device-rules.md`), in the timeline and ``deliveryLog``. The device
/// finds the app that owns the token and follows iOS:
/// - a background push (`content-available: 1`, no alert, sound or badge) goes to the app's
///   `SilentPushRouter`, unless the app was force-quit; the completion result, or a budget violation
///   when the completion handler is not called in time, is recorded;
/// - an alert with `mutable-content: 1` goes through the app's ``ServiceExtension`` first, then
///   attachments whose files are gone are dropped, then it is shown: in the foreground by the app's
///   will-present decision, otherwise in the notification list, replacing a notification with the
///   same identifier (`apns-collapse-id`, else `apns-id`); nothing is shown when the user denied
///   notifications;
/// - a `liveactivity` push starts (push-to-start token), updates or ends a ``LiveActivity``; a
///   broadcast updates or ends every activity subscribed to its channel.
///
/// An alert that also has `content-available: 1` is shown; the background launch iOS may add for
/// it is not simulated.
///
/// Simulated user actions (``tap(_:in:)``, ``dismiss(_:in:)``, ``perform(action:userText:on:in:)``)
/// produce responses for the app's `VisiblePushRouter` along UIKit's route for the app's state
/// (`UNUserNotificationCenterDelegate`, `UISceneDelegate`): for an app that is not running, the launch and the scene connecting come first (see
/// ``SimulatedAppDelegate``); handlers see ``SimulatedApp/applicationState`` in their context.
///
/// ## Determinism
/// Dates come from the injected ``DeviceClock``. Time limits (the service extension's and the
/// background budget) run on real timers only when configured; with `nil` limits, tests end the
/// pending work with ``expireServiceExtensions()`` and ``expireBackgroundBudgets()``, the path iOS
/// takes when time runs out. ``awaitEvent(from:timeout:where:)`` waits for an event without sleeping.
public final class SimulatedDevice: Sendable {
    struct Shown {
        var notification: DeliveredNotification
        var inList: Bool
        /// The push that showed it, and its `apns-collapse-id`.
        var apnsID: String
        var collapseID: String?
    }

    struct State {
        var apps: [SimulatedApp] = []
        var shown: [String: [Shown]] = [:]
        var activities: [LiveActivity] = []
        /// Update tokens for Live Activities: the same on every run, so a timeline reads the same.
        var activityTokens = DeviceTokenGenerator(seed: 0x5EED_F0A6_E9B5_0001)
        var activityCount = 0
        var lanes: [LaneKey: Lane] = [:]
        var nextTokenObserver = 0
        var tokenObservers: [Int: @Sendable (_ token: String, _ bundleID: String) -> Void] = [:]
        /// Background pushes that reached an app's delegate.
        var backgroundPushes = 0
        /// The app icon badge per app, as the last push that carried `aps.badge` set it.
        var badges: [String: Int] = [:]
        /// The budgets and limits the device applies.
        var rules: DeviceRules
        /// What the rules spent so far.
        var budgets = RollingWindows<BudgetKey>()
        /// Whether the device is online; offline, APNs stores one push per app.
        var isOnline = true
        /// The pushes APNs stores while the device is offline: the last per app (or channel), in arrival order.
        var stored: [StoredPush] = []
        /// Tokens that once reached an app here and no longer do, with why.
        var retiredTokens: [String: RetiredToken] = [:]
        /// Every delivery state reached, oldest first.
        var deliveryLog: [DeliveryRecord] = []
        /// Whether remotely started Live Activities wait for the person's permission (iOS 17.2 and later).
        var asksBeforeActivities = false
        /// The apps uninstalled and not installed again, by bundle id.
        var uninstalled: Set<String> = []
        /// The person's answer per app (bundle id) to "Allow Live Activities?"; absent: not asked yet.
        var activityPermissions: [String: ActivityPermission] = [:]

        init(rules: DeviceRules) { self.rules = rules }
    }

    /// What a budget is kept for.
    enum BudgetKey: Hashable {
        case liveActivityUpdates(activityID: String)
        case pushToStarts(bundleID: String)
        case backgroundPushes(bundleID: String)
        case widgetReloads(bundleID: String)
    }

    /// A push APNs holds for an offline device, under the app (or broadcast channel) it is for.
    struct StoredPush {
        var owner: String
        var push: DevicePush
    }

    /// A token that no longer reaches an app on the device.
    struct RetiredToken {
        var reason: DeliveryState.DiscardReason
        var text: String
    }

    /// Which line a push waits in (see ``Lane``).
    enum LaneKey: Hashable {
        case alerts(bundleID: String)
        case background(bundleID: String)
        case liveActivities
    }

    /// A push that arrived and where it goes next, with its place in its lane.
    struct Arrival: Sendable {
        enum Route: Sendable {
            case alert(SimulatedApp)
            case background(SimulatedApp)
            case liveActivity
            case widget(SimulatedApp)
        }

        var push: DevicePush
        var payload: JSONValue
        var route: Route
        var turn: Turn
    }

    /// The device's clock.
    public let clock: any DeviceClock
    /// How long an app may take to call the background completion handler; `nil` means only
    /// ``expireBackgroundBudgets()`` ends the wait.
    public let backgroundBudget: Duration?
    let recorder: Timeline
    let serviceExtensions = ExpiryRegistry()
    let backgroundBudgets = ExpiryRegistry()
    let state: LockedBox<State>
    /// The most notifications kept per app in the notification list (the oldest go first); `nil`: all.
    let notificationRetention: Int?

    /// Creates a device with no apps.
    /// - Parameters:
    ///   - clock: the wall clock for event dates and Live Activity dates.
    ///   - backgroundBudget: the time to call the background completion handler; 30 s as on iOS;
    ///     `nil` for a manual trigger only.
    ///   - rules: the budgets and limits iOS and APNs apply (``DeviceRules``); the defaults by default.
    ///   - activityTokenSeed: seeds the update tokens of the Live Activities it starts: the same
    ///     tokens on every run. Devices side by side (several in one loopback) need different seeds,
    ///     or their activities get the same update tokens; by default every device has the same one.
    public init(
        clock: any DeviceClock = SystemDeviceClock(), backgroundBudget: Duration? = .seconds(30), rules: DeviceRules = DeviceRules(),
        activityTokenSeed: UInt64? = nil
    ) {
        self.clock = clock
        self.backgroundBudget = backgroundBudget
        self.recorder = Timeline()
        var state = State(rules: rules)
        if let activityTokenSeed { state.activityTokens = DeviceTokenGenerator(seed: activityTokenSeed) }
        self.state = LockedBox(state)
        self.notificationRetention = nil
    }

    /// A device for a long-running server: its own seed for Live Activity update tokens (so devices
    /// side by side issue different ones), and bounds on what it keeps.
    /// - Parameters:
    ///   - activityTokenSeed: seeds the update tokens of the activities it starts.
    ///   - timelineRetention: the most timeline entries kept (the oldest are forgotten).
    ///   - notificationRetention: the most notifications kept per app in the notification list.
    package init(
        clock: any DeviceClock = SystemDeviceClock(), backgroundBudget: Duration? = .seconds(30), rules: DeviceRules = DeviceRules(),
        activityTokenSeed: UInt64, timelineRetention: Int?, notificationRetention: Int?
    ) {
        self.clock = clock
        self.backgroundBudget = backgroundBudget
        self.recorder = Timeline(retention: timelineRetention)
        var state = State(rules: rules)
        state.activityTokens = DeviceTokenGenerator(seed: activityTokenSeed)
        self.state = LockedBox(state)
        self.notificationRetention = notificationRetention
    }

    // MARK: Apps

    /// Installs `app` (replacing an app with the same bundle identifier). Its tokens reach it again
    /// when an earlier ``uninstall(_:)`` of the app had retired them.
    public func install(_ app: SimulatedApp) {
        self.state.withLock { state in
            for token in Array(app.deviceTokens.values) + [app.pushToStartToken].compactMap({ $0 })
            where state.retiredTokens[token]?.reason == .appUninstalled {
                state.retiredTokens[token] = nil
            }
            state.uninstalled.remove(app.bundleID)
            state.apps.removeAll { $0.bundleID == app.bundleID }
            state.apps.append(app)
        }
        self.reportPushToStartTokens(of: app)
    }

    /// The installed app with `bundleID`.
    public func app(_ bundleID: String) -> SimulatedApp? {
        self.state.withLock { $0.apps.first { $0.bundleID == bundleID } }
    }

    /// The installed apps, in installation order.
    public var apps: [SimulatedApp] { self.state.withLock { $0.apps } }

    /// Whether `token` (lower-case hex, or any case) belongs to this device: a device token of an
    /// installed app (either environment), an app's push-to-start token, or a Live Activity's update token.
    public func owns(token: String) -> Bool {
        let token = token.lowercased()
        return self.state.withLock { state in
            state.apps.contains { $0.ownsDeviceToken(token, environment: nil) || $0.pushToStartToken == token }
                || state.activities.contains { $0.updateToken == token }
        }
    }

    /// Calls `observer` with each token the device issues from now on (a started Live Activity's
    /// update token) and its app, before the start is recorded: the loopback registers it with the
    /// server, as a real device registers its tokens with APNs.
    /// - Returns: an id for ``stopObservingIssuedTokens(_:)``.
    package func observeIssuedTokens(_ observer: @escaping @Sendable (_ token: String, _ bundleID: String) -> Void) -> Int {
        self.state.withLock { state in
            state.nextTokenObserver += 1
            state.tokenObservers[state.nextTokenObserver] = observer
            return state.nextTokenObserver
        }
    }

    /// Stops calling an observer of ``observeIssuedTokens(_:)``.
    package func stopObservingIssuedTokens(_ id: Int) {
        _ = self.state.withLock { $0.tokenObservers.removeValue(forKey: id) }
    }

    /// The notifications in `bundleID`'s notification list (notification centre), oldest first.
    public func notificationList(for bundleID: String) -> [DeliveredNotification] {
        self.state.withLock { $0.shown[bundleID, default: []].filter(\.inList).map(\.notification) }
    }

    // MARK: Timeline

    /// Every event so far, oldest first.
    public var timeline: [TimelineEntry] { self.recorder.entries }

    /// The timeline's one-line descriptions, oldest first (what the demo prints).
    public var timelineDescription: [String] { self.recorder.entries.map(\.description) }

    /// The events recorded from now on, as they happen.
    public func events() -> AsyncStream<TimelineEntry> { self.recorder.stream() }

    /// The first event, already recorded or still to come, for which `predicate` is true.
    /// - Parameters:
    ///   - position: the timeline position to look from (`timeline.count` before a step: only what
    ///     the step caused); from the start by default.
    ///   - timeout: how long to wait at most (a safety net: a deterministic test never reaches it).
    ///   - predicate: picks the event.
    /// - Throws: ``SimulatedDeviceError/timedOut`` when no such event comes in time or the task is cancelled.
    @discardableResult
    public func awaitEvent(
        from position: Int = 0,
        timeout: Duration = .seconds(10),
        where predicate: @escaping @Sendable (DeviceEvent) -> Bool
    ) async throws(SimulatedDeviceError) -> TimelineEntry {
        let entry = await withTimeout(timeout) { await self.recorder.first(from: position, where: predicate) }
        guard let entry else {
            // Say which pushes never got that far: a dropped push is the usual reason for a wait in vain.
            let dropped = self.timeline.map(\.event).filter {
                switch $0 {
                case .droppedInvalidPayload, .droppedUnknownToken, .broadcastNotSubscribed: return true
                case .delivery(_, .discarded, _), .delivery(_, .throttled, _), .delivery(_, .stored, _): return true
                default: return false
                }
            }
            let detail = dropped.isEmpty ? "" : "; pushes dropped: " + dropped.map(\.description).joined(separator: "; ")
            throw SimulatedDeviceError.timedOut.with("no matching event within \(timeout)\(detail)")
        }
        return entry
    }

    func record(_ event: DeviceEvent) {
        self.recorder.record(event, date: self.clock.now)
    }

    // MARK: Delivery

    /// Receives one push the server accepted and follows it through, as iOS would; returns when the
    /// device is done with it (for a service extension or a background push, once it completed or
    /// its time ran out).
    ///
    /// Calls from several tasks proceed concurrently, each push in its place among the pushes that
    /// iOS orders (see ``deliver(_:)-(AsyncSequence)``); the place is taken when the call starts.
    ///
    /// - Important: With the default 30 s limits this can take up to 30 s for an app that never
    ///   completes; a server should answer its client first and deliver afterwards. Cancelling the
    ///   call ends the push's pending service extension or background budget at once (the
    ///   time-out path).
    public func deliver(_ push: DevicePush) async {
        guard let arrival = self.arrive(push) else { return }
        await self.follow(arrival)
    }

    /// Delivers every push of `pushes` as it arrives, each concurrently with the others, and returns
    /// when the sequence has ended and every delivery is done.
    ///
    /// iOS's order is kept where iOS has one: per app, alerts are shown in arrival order (a slow
    /// service extension holds that app's later alerts) and background pushes reach the app's
    /// delegate in arrival order; Live Activity pushes are applied in arrival order and, as always,
    /// by their `timestamp` (an older one is ignored). Nothing else waits: a background handler that
    /// never completes holds only its own push until its budget runs out, and different apps never
    /// wait for each other.
    ///
    /// When the budget runs out the handlers' task is cancelled (iOS suspends the app): a handler
    /// should return when cancelled, as `Task.sleep` and URL loading do; one that ignores
    /// cancellation keeps this call from returning. Cancelling this call ends every pending service
    /// extension and background budget at once.
    public func deliver(_ pushes: some AsyncSequence<DevicePush, Never>) async {
        await withDiscardingTaskGroup { group in
            for await push in pushes {
                guard let arrival = self.arrive(push) else { continue }
                group.addTask { await self.follow(arrival) }
            }
        }
    }

    /// What happens at once when a push arrives: stored when the device is offline; otherwise it is
    /// recorded and read, gets its delivery state (``DeviceRules``), and takes its place in its lane;
    /// `nil` when it goes no further.
    func arrive(_ push: DevicePush, fromStorage: Bool = false) -> Arrival? {
        if !fromStorage, self.storeIfOffline(push) { return nil }
        if let channelID = push.channelID {
            self.record(.broadcastReceived(apnsID: push.apnsID, channelID: channelID))
        } else {
            self.record(.pushReceived(apnsID: push.apnsID, token: push.token, pushType: push.pushType))
        }
        self.refreshLiveActivities()
        let parsed: Result<JSONValue, JSONValue.ParseError>
        do throws(JSONValue.ParseError) {
            parsed = .success(try JSONValue(parsing: push.payload))
        } catch {
            parsed = .failure(error)
        }
        let object = (try? parsed.get()).flatMap { $0.objectValue != nil ? $0 : nil }
        let admission = self.admit(push, payload: object)
        let state = admission.state == .delivered && fromStorage ? .deliveredFromStorage : admission.state
        // A broadcast is this phone's only when one of its Live Activities listens to the channel.
        if push.channelID.map(self.listens(toChannel:)) ?? true {
            self.logDelivery(push.apnsID, state, reason: admission.reason)
        }
        guard admission.proceeds else { return nil }
        let payload: JSONValue
        switch parsed {
        case .success(let value): payload = value
        case .failure(let error):
            self.record(.droppedInvalidPayload(apnsID: push.apnsID, reason: "the payload is not valid JSON: \(error.reason)"))
            return nil
        }
        guard payload.objectValue != nil else {
            self.record(.droppedInvalidPayload(apnsID: push.apnsID, reason: "the payload is not a JSON object"))
            return nil
        }
        if push.channelID != nil || push.pushType == "liveactivity" {
            return Arrival(push: push, payload: payload, route: .liveActivity, turn: self.lane(.liveActivities).ticket())
        }
        guard let app = self.app(owningDeviceToken: push.token, environment: push.environment) else {
            self.record(.droppedUnknownToken(apnsID: push.apnsID, token: push.token))
            return nil
        }
        if push.pushType == "widgets" {
            return Arrival(push: push, payload: payload, route: .widget(app), turn: self.lane(.alerts(bundleID: app.bundleID)).ticket())
        }
        if Self.isBackground(payload) {
            let turn = self.lane(.background(bundleID: app.bundleID)).ticket()
            return Arrival(push: push, payload: payload, route: .background(app), turn: turn)
        }
        return Arrival(push: push, payload: payload, route: .alert(app), turn: self.lane(.alerts(bundleID: app.bundleID)).ticket())
    }

    /// The rest of a push's delivery, in its turn.
    func follow(_ arrival: Arrival) async {
        switch arrival.route {
        case .liveActivity:
            await arrival.turn.begin()
            if let channelID = arrival.push.channelID {
                self.deliverBroadcast(arrival.push, channelID: channelID, payload: arrival.payload)
            } else {
                self.deliverLiveActivity(arrival.push, payload: arrival.payload)
            }
            arrival.turn.end()
        case .alert(let app):
            await arrival.turn.begin()
            await self.deliverAlert(arrival.push, payload: arrival.payload, to: app)
            arrival.turn.end()
        case .background(let app):
            // Ends its turn once the delegate has been called; the handlers then run on their own.
            await self.deliverBackground(arrival.push, payload: arrival.payload, to: app, turn: arrival.turn)
        case .widget(let app):
            await arrival.turn.begin()
            self.record(.widgetReloaded(bundleID: app.bundleID, apnsID: arrival.push.apnsID))
            arrival.turn.end()
        }
    }

    private func lane(_ key: LaneKey) -> Lane {
        self.state.withLock { state in
            if let lane = state.lanes[key] { return lane }
            let lane = Lane()
            state.lanes[key] = lane
            return lane
        }
    }

    /// Runs the time-will-expire path of every service extension still running: each delivers its
    /// best-attempt content.
    /// - Returns: how many were running.
    @discardableResult
    public func expireServiceExtensions() -> Int { self.serviceExtensions.expireAll() }

    /// Ends the background time of every app that has not called its completion handler yet: each
    /// is recorded as a budget violation.
    /// - Returns: how many were waiting.
    @discardableResult
    public func expireBackgroundBudgets() -> Int { self.backgroundBudgets.expireAll() }

    /// How many service extensions are running.
    public var runningServiceExtensions: Int { self.serviceExtensions.count }

    /// How many background pushes wait for their completion handler.
    public var pendingBackgroundPushes: Int { self.backgroundBudgets.count }

    /// Whether `payload` is a background push: `content-available: 1` and no alert, sound or badge.
    static func isBackground(_ payload: JSONValue) -> Bool {
        guard let aps = payload["aps"], aps["content-available"]?.intValue == 1 else { return false }
        return aps["alert"] == nil && aps["sound"] == nil && aps["badge"] == nil
    }

    private func app(owningDeviceToken token: String, environment: DeviceEnvironment?) -> SimulatedApp? {
        self.state.withLock { $0.apps.first { $0.ownsDeviceToken(token, environment: environment) } }
    }
}
