internal import ForgeAPNsCore
internal import struct Foundation.UUID

extension SimulatedDevice {
    /// Delivers a `.apns` file as the Simulator does when one is dragged onto it (or given to
    /// `xcrun simctl push`): to the app its `"Simulator Target Bundle"` names, or `bundleID`, through
    /// that app's device token, as an alert push, or a background one when `aps` holds only
    /// `content-available`. The same fixture then drives a Simulator on a Mac and this device.
    /// - Parameter bundleID: the app, when the file names none (as `simctl push DEVICE BUNDLE FILE`).
    /// - Throws: ``SimulatedDeviceError/badSimulatorFile`` with the rule the file breaks (over 4096
    ///   bytes, not one JSON object, no `aps` object, no app named); ``SimulatedDeviceError/unknownApp``
    ///   when the app is not installed.
    public func deliver(apnsFile contents: [UInt8], bundleID: String? = nil) async throws(SimulatedDeviceError) {
        let file: APNSSimulatorFile
        do throws(APNSSimulatorFile.Problem) { file = try APNSSimulatorFile(contents: contents) } catch {
            throw .badSimulatorFile.with("a .apns file \(error.rule)")
        }
        guard let target = file.targetBundle ?? bundleID else {
            throw .badSimulatorFile.with("a .apns file needs \"\(APNSSimulatorFile.targetBundleKey)\", or the app's bundle id beside it")
        }
        guard let app = self.app(target) else { throw .unknownApp.with("no app \(target) is installed") }
        guard let token = app.deviceTokens[.sandbox] ?? app.deviceTokens.values.sorted().first else {
            throw .unknownApp.with("\(target) has no device token")
        }
        let push = DevicePush(
            token: token, pushType: Self.simulatorPushType(file.payload), headers: ["apns-topic": target], payload: file.payload,
            apnsID: UUID().uuidString, date: self.clock.now
        )
        await self.deliver(push)
    }

    /// `background` for an `aps` with `content-available` and nothing a user sees, else `alert`.
    private static func simulatorPushType(_ payload: [UInt8]) -> String {
        let shown = ["\"alert\"", "\"sound\"", "\"badge\""].contains { payload.firstRange(of: Array($0.utf8)) != nil }
        return !shown && payload.firstRange(of: Array("\"content-available\"".utf8)) != nil ? "background" : "alert"
    }
}
