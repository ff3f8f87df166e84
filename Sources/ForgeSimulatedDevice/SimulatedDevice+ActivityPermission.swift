internal import ForgeSupport

/// The person's answer to "Allow Live Activities from this app?", per app.
enum ActivityPermission: Hashable, Sendable {
    case allowed
    case denied
}

/// A phone that asks before an app's remotely started Live Activities get an update token.
///
/// Since iOS 17.2 an activity started by a push-to-start push shows on the Lock Screen with "Allow"
/// and "Don't Allow" buttons, and it gets no update token (ActivityKit's `pushTokenUpdates` yields
/// nothing) until the person taps Allow; updates sent meanwhile have no token to go to
/// (https://mfaani.com/posts/liveactivities/5-product-decisions, quoting Apple DTS; developer forums
/// thread https://developer.apple.com/forums/thread/800669). The answer holds for the
/// app, so the device keeps it per bundle id:
/// - not asked yet: each start creates an activity that ``LiveActivity/isAwaitingPermission``, with
///   no update token and no update-token report;
/// - Allow (``allowActivities(of:)``): every activity of the app that awaits gets its update token,
///   reported through the app's ``SimulatedApp/activityReporting``; later starts get theirs at once;
/// - Don't Allow (``denyActivities(of:)``): the app's running activities end and leave the Lock
///   Screen (reported `ended`), and later starts are discarded (``DeliveryState/discarded(_:)`` with
///   ``DeliveryState/DiscardReason/disabled``, the reason saying so), as with Live Activities turned
///   off for the app in Settings.
///
/// Activities the app starts itself (``requestActivity(bundleID:attributesType:attributes:contentState:updateToken:startedAt:)``,
/// with the app open) are not asked about.
extension SimulatedDevice {
    /// Whether the phone asks the person before an app's remotely started Live Activities get an
    /// update token, as iOS 17.2 and later do (see the overview of this extension); `false` when created.
    public var asksBeforeActivities: Bool {
        get { self.state.withLock { $0.asksBeforeActivities } }
        set { self.state.withLock { $0.asksBeforeActivities = newValue } }
    }

    /// The person taps Allow for the app's Live Activities: each of its activities awaiting
    /// permission gets its update token (in start order), recorded in the timeline and reported
    /// through the app's ``SimulatedApp/activityReporting``; the app's later starts get their tokens at once.
    /// - Parameter bundleID: the app whose activities the person allows.
    /// - Returns: the activities that got an update token now.
    /// - Throws: ``SimulatedDeviceError/unknownApp`` when no app `bundleID` is installed.
    @discardableResult
    public func allowActivities(of bundleID: String) throws(SimulatedDeviceError) -> [LiveActivity] {
        guard self.app(bundleID) != nil else { throw SimulatedDeviceError.unknownApp.with("no app \(bundleID) on the device") }
        self.refreshLiveActivities()
        let (issued, observers) = self.state.withLock { state -> ([LiveActivity], [@Sendable (String, String) -> Void]) in
            state.activityPermissions[bundleID] = .allowed
            var issued: [LiveActivity] = []
            for index in state.activities.indices where state.activities[index].bundleID == bundleID && state.activities[index].isAwaitingPermission {
                state.activities[index].isAwaitingPermission = false
                state.activities[index].updateToken = state.activityTokens.next()
                issued.append(state.activities[index])
            }
            return (issued, Array(state.tokenObservers.values))
        }
        self.record(.liveActivitiesAllowed(bundleID: bundleID))
        for activity in issued {
            for observer in observers { observer(activity.updateToken, bundleID) }
            self.record(.liveActivityTokenIssued(activityID: activity.id, updateToken: activity.updateToken))
            self.reportUpdateToken(of: activity)
        }
        return issued
    }

    /// The person taps Don't Allow for the app's Live Activities: its running activities end and
    /// leave the Lock Screen (each reported `ended` through the app's
    /// ``SimulatedApp/activityReporting``), and its later push-to-start starts are discarded, with a
    /// delivery state (``DeliveryState/DiscardReason/disabled``) whose reason says so, until
    /// ``allowActivities(of:)``.
    /// - Parameter bundleID: the app whose activities the person refuses.
    /// - Returns: the activities that ended now.
    /// - Throws: ``SimulatedDeviceError/unknownApp`` when no app `bundleID` is installed.
    @discardableResult
    public func denyActivities(of bundleID: String) throws(SimulatedDeviceError) -> [LiveActivity] {
        guard self.app(bundleID) != nil else { throw SimulatedDeviceError.unknownApp.with("no app \(bundleID) on the device") }
        self.refreshLiveActivities()
        let ended = self.state.withLock { state -> [LiveActivity] in
            state.activityPermissions[bundleID] = .denied
            var ended: [LiveActivity] = []
            for index in state.activities.indices
            where state.activities[index].bundleID == bundleID && [.active, .stale].contains(state.activities[index].phase) {
                state.activities[index].isAwaitingPermission = false
                state.activities[index].phase = .dismissed
                ended.append(state.activities[index])
            }
            return ended
        }
        self.record(.liveActivitiesDenied(bundleID: bundleID))
        for activity in ended {
            self.record(.liveActivityDismissed(activityID: activity.id))
            self.reportEnded(activity)
        }
        return ended
    }
}
