/// The `apns-push-type` header: what kind of notification a request carries.
///
/// Apple documents 11 values. Each one decides the `apns-topic` suffix, the allowed priorities and
/// the payload limit, so ForgePush derives those from the push type and a caller never writes a
/// suffix by hand.
///
/// | Push type | Topic | Priority |
/// |---|---|---|
/// | `alert` | `<bundle>` | 10 or 5 (1 allowed) |
/// | `background` | `<bundle>` | 5 only |
/// | `complication` | `<bundle>.complication` | any |
/// | `controls` | `<bundle>.push-type.controls` | any |
/// | `fileprovider` | `<bundle>.pushkit.fileprovider` | any |
/// | `liveactivity` | `<bundle>.push-type.liveactivity` | 5 or 10 |
/// | `location` | `<bundle>.location-query` | any |
/// | `mdm` | the topic of the MDM push certificate, as given | any |
/// | `pushtotalk` | `<bundle>.voip-ptt` | any |
/// | `voip` | `<bundle>.voip` | any |
/// | `widgets` | `<bundle>.push-type.widgets` | any |
public struct APNSPushType: Hashable, Sendable, CustomStringConvertible, CaseIterable {
    private enum Base: String, Hashable, Sendable, CaseIterable {
        case alert, background, complication, controls, fileprovider, liveactivity, location, mdm, pushtotalk, voip,
            widgets
    }

    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// A visible alert, sound or badge.
    public static let alert = APNSPushType(.alert)
    /// Content delivered in the background (`content-available: 1`), priority 5 only.
    public static let background = APNSPushType(.background)
    /// An update to a watchOS complication.
    public static let complication = APNSPushType(.complication)
    /// A reload of a control (Control Center / Lock Screen), iOS 18+.
    public static let controls = APNSPushType(.controls)
    /// A File Provider change signal.
    public static let fileprovider = APNSPushType(.fileprovider)
    /// A Live Activity start, update or end.
    public static let liveactivity = APNSPushType(.liveactivity)
    /// A location query for a Location Push Service extension (token auth only).
    public static let location = APNSPushType(.location)
    /// A mobile device management wake-up.
    public static let mdm = APNSPushType(.mdm)
    /// A Push to Talk update.
    public static let pushtotalk = APNSPushType(.pushtotalk)
    /// A VoIP call (PushKit); payloads up to 5120 bytes.
    public static let voip = APNSPushType(.voip)
    /// A WidgetKit reload.
    public static let widgets = APNSPushType(.widgets)

    /// Every documented push type.
    public static let allCases: [APNSPushType] = Base.allCases.map(APNSPushType.init)

    /// Parses the header value; `nil` for anything but the 11 documented values (case-sensitive, as sent).
    public init?(rawValue: String) {
        guard let base = Base(rawValue: rawValue) else { return nil }
        self.base = base
    }

    /// The header value.
    public var rawValue: String { self.base.rawValue }

    public var description: String { self.base.rawValue }

    /// The suffix appended to the bundle id to form the topic: empty for `alert` and `background`,
    /// `nil` for `mdm`, whose topic comes from the MDM certificate and is taken as given.
    public var topicSuffix: String? {
        switch self.base {
        case .alert, .background: return ""
        case .complication: return ".complication"
        case .controls: return ".push-type.controls"
        case .fileprovider: return ".pushkit.fileprovider"
        case .liveactivity: return ".push-type.liveactivity"
        case .location: return ".location-query"
        case .mdm: return nil
        case .pushtotalk: return ".voip-ptt"
        case .voip: return ".voip"
        case .widgets: return ".push-type.widgets"
        }
    }

    /// The largest payload APNs accepts for this push type on `/3/device/`: 5120 bytes for VoIP,
    /// 4096 bytes for everything else (Apple documents no other exception).
    public var payloadSizeLimit: Int {
        self.base == .voip ? APNSPayloadLimit.voip : APNSPayloadLimit.standard
    }

    /// The priorities APNs accepts for this push type.
    ///
    /// - Important: `background` must use 5 (10 is an error); Live Activities use 5 or 10.
    public var allowedPriorities: [APNSPriority] {
        switch self.base {
        case .background: return [.consideringDevicePower]
        case .liveactivity: return [.immediately, .consideringDevicePower]
        default: return APNSPriority.allCases
        }
    }

    /// The priority sent when the caller chose none, where APNs' own default (10) would be wrong.
    var impliedPriority: APNSPriority? {
        self.base == .background ? .consideringDevicePower : nil
    }
}

/// Payload size limits, in bytes of the encoded JSON body.
package enum APNSPayloadLimit {
    /// Every push type but VoIP, on `/3/device/`.
    package static let standard = 4096
    /// VoIP pushes.
    package static let voip = 5120
    /// Broadcast pushes on `/4/broadcasts/`.
    package static let broadcast = 5120
}
