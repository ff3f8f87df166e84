/// The `aps.alert` dictionary: what a visible notification shows.
///
/// Use plain strings (``title``, ``subtitle``, ``body``) or localisation keys that the app resolves
/// from its bundle (``titleLocalizationKey`` and its arguments, …). Each `%@` in a localised string is
/// replaced in order by the matching argument.
public struct APNSAlert: Hashable, Sendable, Encodable {
    /// `title`.
    public var title: String?
    /// `subtitle`.
    public var subtitle: String?
    /// `body`.
    public var body: String?
    /// `launch-image`: an image file in the app bundle shown while launching.
    public var launchImage: String?
    /// `title-loc-key`.
    public var titleLocalizationKey: String?
    /// `title-loc-args`.
    public var titleLocalizationArguments: [String]?
    /// `subtitle-loc-key`.
    public var subtitleLocalizationKey: String?
    /// `subtitle-loc-args`.
    public var subtitleLocalizationArguments: [String]?
    /// `loc-key`: the body's localisation key.
    public var localizationKey: String?
    /// `loc-args`.
    public var localizationArguments: [String]?

    /// Creates an alert; every field is optional.
    public init(
        title: String? = nil,
        subtitle: String? = nil,
        body: String? = nil,
        launchImage: String? = nil,
        titleLocalizationKey: String? = nil,
        titleLocalizationArguments: [String]? = nil,
        subtitleLocalizationKey: String? = nil,
        subtitleLocalizationArguments: [String]? = nil,
        localizationKey: String? = nil,
        localizationArguments: [String]? = nil
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.launchImage = launchImage
        self.titleLocalizationKey = titleLocalizationKey
        self.titleLocalizationArguments = titleLocalizationArguments
        self.subtitleLocalizationKey = subtitleLocalizationKey
        self.subtitleLocalizationArguments = subtitleLocalizationArguments
        self.localizationKey = localizationKey
        self.localizationArguments = localizationArguments
    }

    /// Whether no field is set (an alert that would show nothing).
    public var isEmpty: Bool { self == APNSAlert() }

    /// Writes the dictionary in sorted key order.
    func write(to object: inout APNSObjectWriter) {
        object.string("body", self.body)
        object.string("launch-image", self.launchImage)
        object.strings("loc-args", self.localizationArguments)
        object.string("loc-key", self.localizationKey)
        object.string("subtitle", self.subtitle)
        object.strings("subtitle-loc-args", self.subtitleLocalizationArguments)
        object.string("subtitle-loc-key", self.subtitleLocalizationKey)
        object.string("title", self.title)
        object.strings("title-loc-args", self.titleLocalizationArguments)
        object.string("title-loc-key", self.titleLocalizationKey)
    }

    enum CodingKeys: String, CodingKey {
        case title, subtitle, body
        case launchImage = "launch-image"
        case titleLocalizationKey = "title-loc-key"
        case titleLocalizationArguments = "title-loc-args"
        case subtitleLocalizationKey = "subtitle-loc-key"
        case subtitleLocalizationArguments = "subtitle-loc-args"
        case localizationKey = "loc-key"
        case localizationArguments = "loc-args"
    }
}

/// The `aps.sound` value: a sound file name, or the critical-alert dictionary.
public struct APNSSound: Hashable, Sendable, Encodable {
    private enum Kind: Hashable, Sendable {
        case named(String)
        case critical(name: String, volume: Double)
    }

    private let kind: Kind

    /// The system's default sound.
    public static let `default` = APNSSound.named("default")

    /// A sound file in the app bundle or `Library/Sounds`, or `"default"`.
    public static func named(_ name: String) -> APNSSound { APNSSound(kind: .named(name)) }

    /// A critical alert sound (needs Apple's critical-alert entitlement):
    /// `{"critical":1,"name":…,"volume":…}`.
    /// - Parameter volume: from 0 (silent) to 1 (full); checked when the notification is prepared.
    public static func critical(name: String = "default", volume: Double = 1) -> APNSSound {
        APNSSound(kind: .critical(name: name, volume: volume))
    }

    enum CriticalKeys: String, CodingKey { case critical, name, volume }

    public func encode(to encoder: any Encoder) throws {
        switch self.kind {
        case .named(let name):
            var container = encoder.singleValueContainer()
            try container.encode(name)
        case .critical(let name, let volume):
            var container = encoder.container(keyedBy: CriticalKeys.self)
            try container.encode(1, forKey: .critical)
            try container.encode(name, forKey: .name)
            try container.encode(volume, forKey: .volume)
        }
    }

    func write(key: StaticString, to object: inout APNSObjectWriter) throws {
        switch self.kind {
        case .named(let name):
            object.string(key, name)
        case .critical(let name, let volume):
            try object.object(key) { sound in
                sound.int("critical", 1)
                sound.string("name", name)
                try sound.double("volume", volume)
            }
        }
    }

    func validate() throws(APNSValidationError) {
        switch self.kind {
        case .named(let name):
            guard !name.isEmpty else {
                throw APNSValidationError(.badPayload, field: "aps.sound", rule: "must not be an empty name")
            }
        case .critical(let name, let volume):
            guard !name.isEmpty else {
                throw APNSValidationError(.badPayload, field: "aps.sound.name", rule: "must not be empty")
            }
            guard (0...1).contains(volume) else {
                throw APNSValidationError(
                    .badPayload,
                    field: "aps.sound.volume",
                    rule: "must be between 0 and 1 (got \(volume))"
                )
            }
        }
    }
}

/// The `aps.interruption-level` value.
public struct APNSInterruptionLevel: Hashable, Sendable, Encodable, CustomStringConvertible {
    /// The wire value.
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    /// Added to the list without lighting the screen or playing a sound.
    public static let passive = APNSInterruptionLevel("passive")
    /// The default: shown and heard at once.
    public static let active = APNSInterruptionLevel("active")
    /// Breaks through Focus (needs the Time Sensitive capability).
    public static let timeSensitive = APNSInterruptionLevel("time-sensitive")
    /// Breaks through Focus and the mute switch (needs the critical-alert entitlement).
    public static let critical = APNSInterruptionLevel("critical")

    /// Every level.
    public static let allCases: [APNSInterruptionLevel] = [.passive, .active, .timeSensitive, .critical]

    /// Parses a wire value; `nil` for anything else.
    public init?(rawValue: String) {
        guard let level = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = level
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(self.rawValue)
    }

    public var description: String { self.rawValue }
}
