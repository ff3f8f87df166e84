public import typealias Foundation.TimeInterval

/// How many of something fit in a rolling window: `limit` in any `window` seconds.
public struct RateBudget: Sendable, Hashable, CustomStringConvertible {
    /// The most allowed in any window.
    public var limit: Int
    /// The window's length, in seconds.
    public var window: TimeInterval

    /// Creates a budget of `limit` per `window` seconds.
    public init(limit: Int, window: TimeInterval) {
        precondition(limit >= 0 && window > 0, "a budget needs a limit of at least 0 and a window above 0")
        self.limit = limit
        self.window = window
    }

    /// `limit` per hour.
    public static func perHour(_ limit: Int) -> RateBudget { RateBudget(limit: limit, window: 3_600) }

    /// `limit` per 24 hours.
    public static func perDay(_ limit: Int) -> RateBudget { RateBudget(limit: limit, window: 86_400) }

    /// `10 in the last hour`: the budget as the device's events say it.
    public var description: String { "\(self.limit) in the last \(Self.windowText(self.window))" }

    static func windowText(_ window: TimeInterval) -> String {
        switch window {
        case 3_600: return "hour"
        case 86_400: return "24 hours"
        case let seconds where seconds.truncatingRemainder(dividingBy: 3_600) == 0: return "\(Int(seconds / 3_600)) hours"
        case let seconds where seconds.truncatingRemainder(dividingBy: 60) == 0: return "\(Int(seconds / 60)) minutes"
        default: return "\(window) seconds"
        }
    }
}

/// The limits iOS and APNs apply to what a phone receives, where Apple gives no fixed number: values
/// on the device, each defaulting to what Apple's pages or observed behaviour say (the table in
/// `docs/device-rules.md` gives every source). `nil` turns a rule off.
///
/// The device applies them with its ``DeviceClock``: a test moves a ``ManualDeviceClock`` to spend
/// or refill a budget, never sleeps.
public struct DeviceRules: Sendable, Hashable {
    /// Priority-10 `update` pushes each Live Activity may receive (priority 5 spends nothing); the
    /// excess is throttled, not applied. Apple documents a budget but no number; about 10 an hour is
    /// what senders observe.
    public var liveActivityUpdates: RateBudget? = .perHour(10)
    /// The same budget for an app with `NSSupportsLiveActivitiesFrequentUpdates`
    /// (``SimulatedApp/supportsFrequentUpdates``); observed: about one a minute.
    public var frequentLiveActivityUpdates: RateBudget? = .perHour(60)
    /// Push-to-start pushes per app; the excess is dropped. Observed (Apple Developer Forums): about
    /// 10 starts in a short window.
    public var pushToStarts: RateBudget? = .perHour(10)
    /// Background pushes delivered per app; the excess is throttled. Apple: "don't try to send more
    /// than two or three per hour".
    public var backgroundPushes: RateBudget? = .perHour(3)
    /// Widget reloads by `widgets` push per app; the excess is throttled. Apple (WidgetKit): a
    /// frequently viewed widget's daily budget typically includes 40 to 70 reloads; the low end.
    public var widgetReloads: RateBudget? = .perDay(40)
    /// How far (seconds) a `Date` in a Live Activity's content state may decode from the push's
    /// `timestamp` before the device says the app would show the wrong date: one year.
    public var contentStateDateTolerance: TimeInterval? = 365 * 86_400

    /// The defaults.
    public init() {}

    /// Every rule off: the device shows whatever arrives, as before the rules existed.
    public static let none: DeviceRules = {
        var rules = DeviceRules()
        rules.liveActivityUpdates = nil
        rules.frequentLiveActivityUpdates = nil
        rules.pushToStarts = nil
        rules.backgroundPushes = nil
        rules.widgetReloads = nil
        rules.contentStateDateTolerance = nil
        return rules
    }()
}
