public import ForgeNotificationTypes
internal import ForgeSupport
public import Foundation

/// What an app posts to its backend about its Live Activities, as an app built with ActivityKit
/// does: its push-to-start token (at install and after each rotation, from
/// `Activity<…>.pushToStartTokenUpdates`), each activity's update token (`activity.pushTokenUpdates`,
/// again when it changes), and the end of an activity (`activityStateUpdates`: dismissed by the
/// person, or ended by iOS).
public struct ActivityTokenReport: Hashable, Sendable, CustomStringConvertible {
    /// `push_to_start_token`, `update_token` or `ended`.
    public var kind: String
    /// The backend's id of the app install.
    public var installation: String
    public var bundleID: String
    public var attributesType: String
    /// The backend's id of the activity (update token and end reports).
    public var activity: String?
    /// The token, lower-case hex: the push-to-start token, the new update token, or the ended
    /// activity's update token.
    public var token: String?
    /// Increases with each report of the app.
    public var sequence: Int64
    /// `sandbox` or `production`: the environment the device's tokens belong to.
    public var environment: String

    /// The report as the app posts it: a JSON object with the keys `kind`, `installation`,
    /// `bundle_id`, `attributes_type`, `activity`, `token`, `sequence`, `environment` (the absent
    /// ones left out), written by Foundation's `JSONSerialization`.
    public var json: [UInt8] {
        var object: [String: Any] = [
            "kind": self.kind, "installation": self.installation, "bundle_id": self.bundleID,
            "attributes_type": self.attributesType, "sequence": self.sequence, "environment": self.environment,
        ]
        if let activity = self.activity { object["activity"] = activity }
        if let token = self.token { object["token"] = token }
        return (try? Array(JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))) ?? []
    }

    public var description: String { String(decoding: self.json, as: UTF8.self) }
}

/// How an app reports its Live Activity tokens to its backend: the installation id it sends, how it
/// names an activity (the backend's id, read from the activity's attributes), and the stream its
/// reports go to, in order. Give it to ``SimulatedApp/activityReporting`` before installing the app.
public struct ActivityReporting: Sendable {
    /// The backend's id of this install.
    public let installation: String
    /// The backend's id of an activity, from its attributes (and the device's id for it).
    public let activityID: @Sendable (_ attributes: JSONValue, _ deviceActivityID: String) -> String
    private let send: @Sendable (ActivityTokenReport) -> Void
    private let end: @Sendable () -> Void

    /// A reporting and the stream of its reports (the app's posts, oldest first; at most 100,000
    /// wait unread).
    /// - Parameter activityID: by default the attributes' `activity_id` string, else the device's id.
    public static func make(
        installation: String,
        activityID: @escaping @Sendable (_ attributes: JSONValue, _ deviceActivityID: String) -> String = { attributes, id in
            attributes["activity_id"]?.stringValue ?? id
        }
    ) -> (reporting: ActivityReporting, reports: AsyncStream<ActivityTokenReport>) {
        let (stream, continuation) = AsyncStream.makeStream(of: ActivityTokenReport.self, bufferingPolicy: .bufferingOldest(100_000))
        let reporting = ActivityReporting(
            installation: installation, activityID: activityID, post: { continuation.yield($0) }, finish: { continuation.finish() }
        )
        return (reporting, stream)
    }

    /// A reporting that hands each report to `post` as the app posts it, on the device's thread (the
    /// local server's phones forward them over HTTP this way; `post` must return at once).
    /// - Parameters:
    ///   - installation: the backend's id of this install.
    ///   - activityID: the backend's id of an activity, from its attributes and the device's id.
    ///   - post: takes each report, oldest first.
    ///   - finish: called by ``finish()``.
    package init(
        installation: String,
        activityID: @escaping @Sendable (_ attributes: JSONValue, _ deviceActivityID: String) -> String = { attributes, id in
            attributes["activity_id"]?.stringValue ?? id
        },
        post: @escaping @Sendable (ActivityTokenReport) -> Void, finish: @escaping @Sendable () -> Void = {}
    ) {
        self.installation = installation
        self.activityID = activityID
        self.send = post
        self.end = finish
    }

    func post(_ report: ActivityTokenReport) {
        self.send(report)
    }

    /// Ends the stream of reports.
    public func finish() {
        self.end()
    }
}

extension SimulatedDevice {
    /// How long iOS lets a Live Activity run before it ends it: eight hours ("Displaying live data
    /// with Live Activities", Apple Developer Documentation).
    public static let maximumActivityDuration: TimeInterval = 8 * 3600

    /// The app's update-token report for `activity`, when it reports.
    func reportUpdateToken(of activity: LiveActivity) {
        guard let app = self.app(activity.bundleID) else { return }
        app.report(kind: "update_token", attributesType: activity.attributesType, activity: activity, token: activity.updateToken, environment: self.reportEnvironment(app))
    }

    /// The app's end report for `activity`, when it reports.
    func reportEnded(_ activity: LiveActivity) {
        guard let app = self.app(activity.bundleID) else { return }
        // An activity that ended while it awaited permission never had an update token.
        app.report(
            kind: "ended", attributesType: activity.attributesType, activity: activity,
            token: activity.updateToken.isEmpty ? nil : activity.updateToken,
            environment: self.reportEnvironment(app)
        )
    }

    /// The app's push-to-start token reports (one per activity type), when it reports.
    func reportPushToStartTokens(of app: SimulatedApp) {
        guard let token = app.pushToStartToken else { return }
        for type in app.activityTypeNames {
            app.report(kind: "push_to_start_token", attributesType: type, activity: nil, token: token, environment: self.reportEnvironment(app))
        }
    }

    private func reportEnvironment(_ app: SimulatedApp) -> String {
        app.deviceTokens[.sandbox] != nil && app.deviceTokens[.production] == nil ? "sandbox" : "production"
    }

    /// The activity gets a new update token while it runs (ActivityKit's `pushTokenUpdates` yields
    /// it); pushes to the old one reach nothing from now on.
    /// - Returns: the new token.
    /// - Throws: ``SimulatedDeviceError/activityNotFound`` when no running activity has `activityID`.
    @discardableResult
    public func rotateUpdateToken(of activityID: String) throws(SimulatedDeviceError) -> String {
        let rotated = self.state.withLock { state -> (LiveActivity, [@Sendable (String, String) -> Void])? in
            guard let index = state.activities.firstIndex(where: {
                $0.id == activityID && ($0.phase == .active || $0.phase == .stale) && !$0.isAwaitingPermission
            }) else {
                return nil
            }
            let old = state.activities[index].updateToken
            state.retiredTokens[old] = RetiredToken(
                reason: .tokenUnregistered, text: "the Live Activity \(activityID) has a new update token; this one is no longer its own"
            )
            state.activities[index].updateToken = state.activityTokens.next()
            return (state.activities[index], Array(state.tokenObservers.values))
        }
        guard let (activity, observers) = rotated else {
            throw SimulatedDeviceError.activityNotFound.with("no running Live Activity \(activityID)")
        }
        for observer in observers { observer(activity.updateToken, activity.bundleID) }
        self.reportUpdateToken(of: activity)
        return activity.updateToken
    }

    /// The person dismisses a Live Activity from the Lock Screen: it ends and leaves at once, and the
    /// app reports its end.
    /// - Throws: ``SimulatedDeviceError/activityNotFound`` when no activity on the screen has `activityID`.
    public func dismissActivity(_ activityID: String) throws(SimulatedDeviceError) {
        let dismissed = self.state.withLock { state -> LiveActivity? in
            guard let index = state.activities.firstIndex(where: { $0.id == activityID && $0.phase != .dismissed }) else { return nil }
            state.activities[index].phase = .dismissed
            return state.activities[index]
        }
        guard let dismissed else { throw SimulatedDeviceError.activityNotFound.with("no Live Activity \(activityID) on the screen") }
        self.record(.liveActivityDismissed(activityID: activityID))
        self.reportEnded(dismissed)
    }
}

extension SimulatedApp {
    /// Posts one report with the app's next sequence number, when the app reports.
    func report(kind: String, attributesType: String, activity: LiveActivity?, token: String?, environment: String) {
        guard let (reporting, sequence) = self.nextReport() else { return }
        reporting.post(ActivityTokenReport(
            kind: kind, installation: reporting.installation, bundleID: self.bundleID, attributesType: attributesType,
            activity: activity.map { reporting.activityID($0.attributes, $0.id) }, token: token, sequence: sequence, environment: environment
        ))
    }
}
