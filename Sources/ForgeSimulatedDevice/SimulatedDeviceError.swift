/// Why a simulated user action, a channel subscription or a wait on the timeline failed.
///
/// Compared by code only; ``message`` says which app, notification or action.
public struct SimulatedDeviceError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case unknownApp
        case notificationNotFound
        case unknownAction
        case missingUserText
        case timedOut
        case activityNotFound
        case badSimulatorFile
        case clockNotAdjustable
    }

    private let code: Code
    /// What failed, in words.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// No installed app has the bundle identifier.
    public static let unknownApp = SimulatedDeviceError(.unknownApp, "unknown app")
    /// The app shows no notification with the identifier (never shown, replaced, or already acted on).
    public static let notificationNotFound = SimulatedDeviceError(.notificationNotFound, "notification not found")
    /// The notification's category has no action with the identifier.
    public static let unknownAction = SimulatedDeviceError(.unknownAction, "unknown action")
    /// A text-input action was performed without text.
    public static let missingUserText = SimulatedDeviceError(.missingUserText, "missing user text")
    /// No Live Activity has the identifier.
    public static let activityNotFound = SimulatedDeviceError(.activityNotFound, "Live Activity not found")
    /// A `.apns` file that simctl would refuse (not an object, no `aps`, over 4096 bytes, no app named).
    public static let badSimulatorFile = SimulatedDeviceError(.badSimulatorFile, "bad .apns file")
    /// The device's clock cannot be moved (it is not an ``AdjustableDeviceClock``).
    public static let clockNotAdjustable = SimulatedDeviceError(.clockNotAdjustable, "the device clock cannot be moved")
    /// No matching event was recorded in time.
    public static let timedOut = SimulatedDeviceError(.timedOut, "timed out")

    /// The same error with a more precise message.
    func with(_ message: String) -> SimulatedDeviceError { SimulatedDeviceError(self.code, message) }

    public static func == (lhs: SimulatedDeviceError, rhs: SimulatedDeviceError) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }

    public var description: String { self.message }
}
