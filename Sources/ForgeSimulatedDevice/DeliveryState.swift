public import struct Foundation.Date

/// What became of a push at the device, in the words of Apple's Push Notifications Console
/// (https://developer.apple.com/documentation/usernotifications/viewing-the-status-of-push-notifications-using-metrics-and-apns),
/// plus the throttles iOS applies on the device.
public enum DeliveryState: Hashable, Sendable, CustomStringConvertible {
    /// Delivered to the device ("Delivered to Device").
    case delivered
    /// The device is offline: APNs stored it ("Stored - Device Offline").
    case stored
    /// Delivered when the device came back online ("Delivered to Device (From Storage)").
    case deliveredFromStorage
    /// Not delivered ("Discarded - …").
    case discarded(DiscardReason)
    /// Delivered but not applied: a budget iOS keeps is spent.
    case throttled(ThrottleReason)

    /// Why a push was discarded.
    public enum DiscardReason: String, Hashable, Sendable, CaseIterable {
        /// Its `apns-expiration` passed (or was 0) while the device was offline ("Discarded - Expired").
        case expired
        /// The token is no longer registered on the device: rotated, or never issued here
        /// ("Discarded - Token Unregistered").
        case tokenUnregistered = "token_unregistered"
        /// The app that owned the token was uninstalled.
        case appUninstalled = "app_uninstalled"
        /// The user turned the app's notifications off ("Discarded - Disabled").
        case disabled
        /// A later push to the same app replaced it in storage while the device was offline.
        case replacedInStorage = "replaced_in_storage"
        /// The user force-quit the app: iOS does not launch it for a background push.
        case forceQuit = "force_quit"
        /// ActivityKit could not decode the Live Activity push's `content-state` (or a start's
        /// `attributes`) into the app's type: the update or start is dropped, with nothing shown.
        case decodingFailed = "decoding_failed"
    }

    /// Which budget throttled a push.
    public enum ThrottleReason: String, Hashable, Sendable, CaseIterable {
        /// The Live Activity's priority-10 update budget.
        case liveActivityBudget = "live_activity_budget"
        /// The app's push-to-start window.
        case pushToStartBudget = "push_to_start_budget"
        /// The app's background push allowance.
        case backgroundBudget = "background_budget"
        /// The widget's daily reload budget.
        case widgetBudget = "widget_budget"
    }

    /// `delivered`, `stored`, `delivered from storage`, `discarded (expired)`, `throttled (background budget)`.
    public var description: String {
        switch self {
        case .delivered: return "delivered"
        case .stored: return "stored (device offline)"
        case .deliveredFromStorage: return "delivered from storage"
        case .discarded(let reason): return "discarded (\(reason.rawValue.replacingOccurrences(of: "_", with: " ")))"
        case .throttled(let reason): return "throttled (\(reason.rawValue.replacingOccurrences(of: "_", with: " ")))"
        }
    }

    /// The state's name for JSON and metric labels: `delivered`, `stored`, `delivered_from_storage`,
    /// `discarded`, `throttled`.
    public var name: String {
        switch self {
        case .delivered: return "delivered"
        case .stored: return "stored"
        case .deliveredFromStorage: return "delivered_from_storage"
        case .discarded: return "discarded"
        case .throttled: return "throttled"
        }
    }

    /// The discard or throttle reason's name (`expired`, `background_budget`, …); `nil` for the others.
    public var cause: String? {
        switch self {
        case .discarded(let reason): return reason.rawValue
        case .throttled(let reason): return reason.rawValue
        default: return nil
        }
    }
}

/// One line of the device's delivery log: a push, the state it reached and why.
public struct DeliveryRecord: Hashable, Sendable, CustomStringConvertible {
    /// The push's `apns-id`.
    public var apnsID: String
    /// What became of it.
    public var state: DeliveryState
    /// Why, in words, when it was not simply delivered.
    public var reason: String?
    /// When, by the device clock.
    public var date: Date

    /// Creates a record.
    package init(apnsID: String, state: DeliveryState, reason: String?, date: Date) {
        self.apnsID = apnsID
        self.state = state
        self.reason = reason
        self.date = date
    }

    /// `push X throttled (live activity budget): update ignored: …`.
    public var description: String { Self.text(apnsID: self.apnsID, state: self.state, reason: self.reason) }

    static func text(apnsID: String, state: DeliveryState, reason: String?) -> String {
        "push \(apnsID) \(state)" + (reason.map { ": \($0)" } ?? "")
    }
}
