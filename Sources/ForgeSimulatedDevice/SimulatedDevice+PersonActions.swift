public import typealias Foundation.TimeInterval

/// What a person does to the phone itself, by app: swipe an app away, turn its notifications off
/// or on in Settings, move the date forward. Each is what the app's own property does
/// (``SimulatedApp/forceQuit()``, ``SimulatedApp/authorization``), by bundle id, so a server or a
/// test that holds only the device can do it.
extension SimulatedDevice {
    /// The person swipes the app away in the app switcher: background pushes no longer reach it
    /// until it is launched again (``SimulatedApp/forceQuit()``).
    /// - Throws: ``SimulatedDeviceError/unknownApp`` when no app `bundleID` is installed.
    public func forceQuit(_ bundleID: String) throws(SimulatedDeviceError) {
        guard let app = self.app(bundleID) else { throw SimulatedDeviceError.unknownApp.with("no app \(bundleID) on the device") }
        app.forceQuit()
    }

    /// The person turns the app's notifications on or off in Settings: while off, its alerts are
    /// not shown (``DeviceEvent/notShown(bundleID:identifier:reason:)``, not authorized) and no error
    /// reaches the app or its server (``SimulatedApp/authorization``).
    /// - Throws: ``SimulatedDeviceError/unknownApp`` when no app `bundleID` is installed.
    public func setNotificationsAllowed(_ allowed: Bool, for bundleID: String) throws(SimulatedDeviceError) {
        guard let app = self.app(bundleID) else { throw SimulatedDeviceError.unknownApp.with("no app \(bundleID) on the device") }
        app.authorization = allowed ? .granted : .denied
    }

    /// Moves the device's clock forward by `seconds`, then checks the Live Activities against it
    /// (``refreshLiveActivities()``): every rule that reads the clock sees the new date, stale and
    /// dismissal dates pass, and an activity that has now run for ``maximumActivityDuration`` ends.
    /// Zero or less moves nothing.
    /// - Throws: ``SimulatedDeviceError/clockNotAdjustable`` when the device's ``clock`` is not an
    ///   ``AdjustableDeviceClock`` (the default ``SystemDeviceClock`` is not).
    public func advanceClock(by seconds: TimeInterval) throws(SimulatedDeviceError) {
        guard let clock = self.clock as? any AdjustableDeviceClock else {
            throw SimulatedDeviceError.clockNotAdjustable.with("the device's clock (\(type(of: self.clock))) cannot be moved")
        }
        guard seconds > 0 else { return }
        clock.advance(by: seconds)
        self.refreshLiveActivities()
    }
}
