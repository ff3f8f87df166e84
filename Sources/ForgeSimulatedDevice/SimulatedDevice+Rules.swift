internal import ForgeAPNsCore
internal import ForgeNotificationTypes
internal import ForgeSupport
internal import struct Foundation.Date

/// The rules iOS and APNs apply between an accepted push and what the phone shows: budgets,
/// storage while offline, tokens the device no longer has. `docs/device-rules.md` lists each rule
/// with its source and the wording of its event.
extension SimulatedDevice {
    /// What the rules decided for a push as it arrived.
    struct Admission {
        var state: DeliveryState
        var reason: String?
        /// Whether the push goes on to its route (where, for some states, the route's own event says more).
        var proceeds: Bool

        static let delivered = Admission(state: .delivered, reason: nil, proceeds: true)
    }

    // MARK: Configuration

    /// The budgets and limits the device applies now; set it to change them between pushes.
    public var rules: DeviceRules {
        get { self.state.withLock { $0.rules } }
        set { self.state.withLock { $0.rules = newValue } }
    }

    // MARK: Delivery log

    /// Every delivery state pushes reached on this device, oldest first (a push that was stored and
    /// then delivered has two).
    public var deliveryLog: [DeliveryRecord] { self.state.withLock { $0.deliveryLog } }

    /// The latest delivery state of the push with `apnsID`, if it reached the device (or APNs' storage for it).
    public func delivery(apnsID: String) -> DeliveryRecord? {
        self.state.withLock { $0.deliveryLog.last { $0.apnsID == apnsID } }
    }

    /// Records a delivery state in the log and the timeline.
    func logDelivery(_ apnsID: String, _ state: DeliveryState, reason: String?) {
        let record = DeliveryRecord(apnsID: apnsID, state: state, reason: reason, date: self.clock.now)
        self.state.withLock { deviceState in
            deviceState.deliveryLog.append(record)
            // Trimmed as the timeline is, in batches.
            if let retention = self.recorder.retention, deviceState.deliveryLog.count > retention + max(1, retention / 4) {
                deviceState.deliveryLog.removeFirst(deviceState.deliveryLog.count - retention)
            }
        }
        self.record(.delivery(apnsID: apnsID, state: state, reason: reason))
    }

    // MARK: Online and offline

    /// Whether the device is online (it is when created).
    public var isOnline: Bool { self.state.withLock { $0.isOnline } }

    /// The device loses its connection to APNs: from now on APNs stores the last push per app (an
    /// earlier stored one is discarded as replaced), honouring `apns-expiration` against the device
    /// clock (`0`: now or never, discarded), until ``goOnline()``.
    public func goOffline() {
        self.state.withLock { $0.isOnline = false }
    }

    /// The device reconnects: the stored pushes whose `apns-expiration` has not passed are delivered
    /// (delivered from storage), in the order they were stored; the others are discarded as expired.
    /// Returns when their delivery is done, as ``deliver(_:)-(DevicePush)`` does.
    public func goOnline() async {
        let pending = self.state.withLock { state -> [StoredPush] in
            state.isOnline = true
            defer { state.stored = [] }
            return state.stored
        }
        for stored in pending {
            if let expiration = Self.expiration(of: stored.push), expiration <= self.clock.now {
                self.logDelivery(
                    stored.push.apnsID, .discarded(.expired),
                    reason: "apns-expiration \(APNSLinter.iso(expiration)) passed while the device was offline"
                )
                continue
            }
            guard let arrival = self.arrive(stored.push, fromStorage: true) else { continue }
            await self.follow(arrival)
        }
    }

    /// `apns-expiration` as a date; `nil` when absent or not a number.
    static func expiration(of push: DevicePush) -> Date? {
        push.headers["apns-expiration"].flatMap { Int64($0) }.map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// While offline: stores the push as APNs would, or discards it; `false` when the device is online.
    func storeIfOffline(_ push: DevicePush) -> Bool {
        let now = self.clock.now
        let outcome = self.state.withLock { state -> [(String, DeliveryState, String?)]? in
            guard !state.isOnline else { return nil }
            let owner: String
            if let channelID = push.channelID {
                // APNs keeps a broadcast for the devices subscribed to its channel, and this one is not.
                guard state.activities.contains(where: { $0.channelID == channelID }) else { return [] }
                owner = "channel \(channelID)"
            } else if let retired = state.retiredTokens[push.token] {
                return [(push.apnsID, .discarded(retired.reason), retired.text)]
            } else if let bundleID = Self.bundleID(owning: push, in: state) {
                owner = bundleID
            } else {
                return [(push.apnsID, .discarded(.tokenUnregistered), "no app on the device has this token")]
            }
            let expiration = Self.expiration(of: push)
            if push.headers["apns-expiration"] == "0" {
                return [(push.apnsID, .discarded(.expired), "apns-expiration is 0 (now or never) and the device is offline: APNs does not store it")]
            }
            if let expiration, expiration <= now {
                return [(push.apnsID, .discarded(.expired), "apns-expiration \(APNSLinter.iso(expiration)) has passed and the device is offline")]
            }
            var records: [(String, DeliveryState, String?)] = []
            if let index = state.stored.firstIndex(where: { $0.owner == owner }) {
                let previous = state.stored.remove(at: index)
                records.append((
                    previous.push.apnsID, .discarded(.replacedInStorage),
                    "replaced by push \(push.apnsID): APNs stores one push per app while the device is offline, the last"
                ))
            }
            state.stored.append(StoredPush(owner: owner, push: push))
            let until = expiration.map { ", or until apns-expiration \(APNSLinter.iso($0))" } ?? ""
            records.append((push.apnsID, .stored, "the device is offline: APNs keeps the last push for \(owner) until it reconnects\(until)"))
            return records
        }
        guard let outcome else { return false }
        for (apnsID, state, reason) in outcome { self.logDelivery(apnsID, state, reason: reason) }
        return true
    }

    /// Whether a Live Activity on the device is subscribed to `channelID`.
    func listens(toChannel channelID: String) -> Bool {
        self.state.withLock { $0.activities.contains { $0.channelID == channelID } }
    }

    /// The bundle id of the app a push's token reaches: a device token, a push-to-start token or a
    /// Live Activity's update token.
    private static func bundleID(owning push: DevicePush, in state: State) -> String? {
        if let app = state.apps.first(where: { $0.ownsDeviceToken(push.token, environment: push.environment) || $0.pushToStartToken == push.token }) {
            return app.bundleID
        }
        return state.activities.first { $0.updateToken == push.token }?.bundleID
    }

    // MARK: Tokens

    /// The app gets a new push-to-start token (ActivityKit's `pushToStartTokenUpdates` yields it),
    /// reported as the device's issued tokens are; the old one stays valid at APNs, which accepts
    /// pushes to it, but reaches no app here: they are discarded (token unregistered).
    /// - Returns: the new token.
    /// - Throws: ``SimulatedDeviceError/unknownApp`` when `bundleID` is not installed or has no push-to-start token.
    @discardableResult
    public func rotatePushToStartToken(of bundleID: String) throws(SimulatedDeviceError) -> String {
        guard let app = self.app(bundleID), let old = app.pushToStartToken else {
            throw SimulatedDeviceError.unknownApp.with("no app \(bundleID) with a push-to-start token on the device")
        }
        let (token, observers) = self.state.withLock { state in
            state.retiredTokens[old] = RetiredToken(
                reason: .tokenUnregistered,
                text: "\(bundleID) rotated its push-to-start token; this one is no longer registered on the device (send to the new one)"
            )
            return (state.activityTokens.next(), Array(state.tokenObservers.values))
        }
        app.pushToStartToken = token
        for observer in observers { observer(token, bundleID) }
        self.reportPushToStartTokens(of: app)
        return token
    }

    /// Removes the app with `bundleID`, its Live Activities with it; pushes to its tokens are then
    /// discarded (app uninstalled). A device token another installed app also has stays its.
    public func uninstall(_ bundleID: String) {
        self.state.withLock { state in
            guard let app = state.apps.first(where: { $0.bundleID == bundleID }) else { return }
            let text = "\(bundleID) was uninstalled from the device"
            let others = state.apps.filter { $0.bundleID != bundleID }
            let tokens = app.deviceTokens.values.filter { token in !others.contains { $0.ownsDeviceToken(token, environment: nil) } }
                + [app.pushToStartToken].compactMap { $0 }
                + state.activities.filter { $0.bundleID == bundleID && !$0.updateToken.isEmpty }.map(\.updateToken)
            for token in tokens { state.retiredTokens[token] = RetiredToken(reason: .appUninstalled, text: text) }
            state.uninstalled.insert(bundleID)
            state.apps.removeAll { $0.bundleID == bundleID }
            state.activities.removeAll { $0.bundleID == bundleID }
            state.shown[bundleID] = nil
            state.badges[bundleID] = nil
        }
    }

    /// Whether the app with `bundleID` was uninstalled (``uninstall(_:)``) and not installed again.
    package func wasUninstalled(_ bundleID: String) -> Bool {
        self.state.withLock { $0.uninstalled.contains(bundleID) }
    }

    /// Records a push for an uninstalled app as received and discarded (app uninstalled), as
    /// ``deliver(_:)-(DevicePush)`` does when the push's token was the app's alone: for a server whose
    /// phones' apps share the device token.
    package func discardForUninstalledApp(_ push: DevicePush, bundleID: String) {
        self.record(.pushReceived(apnsID: push.apnsID, token: push.token, pushType: push.pushType))
        self.logDelivery(push.apnsID, .discarded(.appUninstalled), reason: "\(bundleID) was uninstalled from the device")
    }

    // MARK: Admission

    /// The delivery state of an arriving push, with the budgets it spends: one decision under the
    /// device's lock, so concurrent arrivals spend a budget once each.
    func admit(_ push: DevicePush, payload: JSONValue?) -> Admission {
        let now = self.clock.now
        let aps = payload?["aps"]
        let priority = push.headers["apns-priority"].flatMap { Int($0) } ?? 10
        return self.state.withLock { state -> Admission in
            let rules = state.rules
            if push.channelID != nil { return .delivered }
            if let retired = state.retiredTokens[push.token] {
                return Admission(state: .discarded(retired.reason), reason: retired.text, proceeds: false)
            }
            func spend(_ key: BudgetKey, _ budget: RateBudget?, _ reason: DeliveryState.ThrottleReason, _ text: (RateBudget) -> String) -> Admission {
                guard let budget, !state.budgets.spend(key, budget: budget, at: now) else { return .delivered }
                return Admission(state: .throttled(reason), reason: text(budget), proceeds: false)
            }
            if push.pushType == "liveactivity" {
                guard payload != nil else { return .delivered }
                let event = aps?["event"]?.stringValue
                if let app = state.apps.first(where: { $0.pushToStartToken == push.token }) {
                    guard event == "start" else { return .delivered }
                    if state.activityPermissions[app.bundleID] == .denied {
                        return Admission(
                            state: .discarded(.disabled),
                            reason: "start discarded: the person chose Don't Allow for \(app.bundleID)'s Live Activities; iOS starts none of its "
                                + "activities until they are allowed again (Settings, the app, Live Activities)",
                            proceeds: false
                        )
                    }
                    return spend(.pushToStarts(bundleID: app.bundleID), rules.pushToStarts, .pushToStartBudget) { budget in
                        "start ignored: \(app.bundleID)'s push-to-start budget is spent (\(budget)); iOS drops starts beyond it, "
                            + "so retry later with the same apns-collapse-id"
                    }
                }
                if let activity = state.activities.first(where: { $0.updateToken == push.token }) {
                    guard event == "update", priority == 10 else { return .delivered }
                    let frequent = state.apps.first { $0.bundleID == activity.bundleID }?.supportsFrequentUpdates ?? false
                    let budget = frequent ? rules.frequentLiveActivityUpdates : rules.liveActivityUpdates
                    return spend(.liveActivityUpdates(activityID: activity.id), budget, .liveActivityBudget) { budget in
                        frequent
                            ? "update ignored: the activity's priority-10 budget is spent (\(budget), frequent updates on); send priority 5"
                            : "update ignored: the activity's priority-10 budget is spent (\(budget)); send priority 5 or enable frequent updates"
                    }
                }
                // The Live Activity route says so (dropped: no app owns the token).
                return Admission(state: .discarded(.tokenUnregistered), reason: "no app or Live Activity on the device has this token", proceeds: true)
            }
            guard let app = state.apps.first(where: { $0.ownsDeviceToken(push.token, environment: push.environment) }) else {
                return Admission(state: .discarded(.tokenUnregistered), reason: "no app on the device has this token", proceeds: true)
            }
            guard let payload else { return .delivered }
            if push.pushType == "widgets" {
                return spend(.widgetReloads(bundleID: app.bundleID), rules.widgetReloads, .widgetBudget) { budget in
                    "widget reload skipped: \(app.bundleID)'s widget reload budget is spent (\(budget)); WidgetKit spreads a widget's reloads over the day"
                }
            }
            if Self.isBackground(payload) {
                if app.isForceQuit {
                    return Admission(
                        state: .discarded(.forceQuit), reason: "the user force-quit \(app.bundleID): iOS does not launch it for background pushes",
                        proceeds: true
                    )
                }
                return spend(.backgroundPushes(bundleID: app.bundleID), rules.backgroundPushes, .backgroundBudget) { budget in
                    "background push not delivered: \(app.bundleID)'s background allowance is spent (\(budget)); "
                        + "iOS throttles background pushes (Apple: no more than two or three an hour)"
                }
            }
            if aps?["alert"] != nil, app.authorization == .denied {
                return Admission(
                    state: .discarded(.disabled), reason: "the user turned notifications off for \(app.bundleID); APNs and the app get no error",
                    proceeds: true
                )
            }
            return .delivered
        }
    }

    // MARK: Content-state dates

    /// Records every `Date` of the content state that decodes more than the tolerance away from the
    /// push's `timestamp`: what the app would show, and why (the lints' reading of Unix seconds sent
    /// where seconds since 2001 are expected, ``APNSLinter``).
    func checkContentStateDates(_ contentState: JSONValue, type: LiveActivityType, push: DevicePush, timestamp: Date) {
        guard let tolerance = self.rules.contentStateDateTolerance else { return }
        for date in type.decodedDates(contentState) {
            let shown = Date(timeIntervalSinceReferenceDate: date.seconds)
            let distance = shown.timeIntervalSince(timestamp)
            guard abs(distance) > tolerance else { continue }
            let years = Int((abs(distance) / (365.25 * 86_400)).rounded())
            let far = years >= 1 ? "\(years) year\(years == 1 ? "" : "s")" : "\(Int(abs(distance) / 86_400)) days"
            let side = distance > 0 ? "after" : "before"
            let why = APNSLinter.unixReading(of: date.seconds, near: timestamp).map(\.explanation)
                ?? "a Date decoded with JSONDecoder's default reads seconds since 2001-01-01; check how the sender encodes it"
            self.record(
                .contentStateDateMisread(
                    apnsID: push.apnsID, field: date.path, shows: shown,
                    reason: "would show \(APNSLinter.iso(shown)), \(far) \(side) the push's timestamp \(APNSLinter.iso(timestamp)): \(why)"
                )
            )
        }
    }
}
