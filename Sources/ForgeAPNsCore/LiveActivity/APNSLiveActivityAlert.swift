/// The alert of a Live Activity push: lights the screen and shows the expanded presentation.
///
/// Apple's Live Activity samples write `title` and `body` as plain strings or as
/// `{"loc-key":…,"loc-args":[…]}` dictionaries, with `sound` inside the alert.
public struct APNSLiveActivityAlert: Hashable, Sendable, Encodable {
    /// A plain or localised string.
    public struct Text: Hashable, Sendable, Encodable, ExpressibleByStringLiteral {
        private enum Kind: Hashable, Sendable {
            case plain(String)
            case localized(key: String, arguments: [String])
        }

        private let kind: Kind

        /// A string shown as is.
        public static func plain(_ text: String) -> Text { Text(kind: .plain(text)) }

        /// A key the app resolves from its `Localizable.strings`, with `%@` arguments.
        public static func localized(key: String, arguments: [String] = []) -> Text {
            Text(kind: .localized(key: key, arguments: arguments))
        }

        private init(kind: Kind) { self.kind = kind }

        /// A plain string.
        public init(stringLiteral value: String) { self.kind = .plain(value) }

        func write(key: StaticString, to object: inout APNSObjectWriter) throws {
            switch self.kind {
            case .plain(let text):
                object.string(key, text)
            case .localized(let localizationKey, let arguments):
                object.object(key) { text in
                    text.strings("loc-args", arguments.isEmpty ? nil : arguments)
                    text.string("loc-key", localizationKey)
                }
            }
        }

        enum LocalizedKeys: String, CodingKey {
            case key = "loc-key"
            case arguments = "loc-args"
        }

        public func encode(to encoder: any Encoder) throws {
            switch self.kind {
            case .plain(let text):
                var container = encoder.singleValueContainer()
                try container.encode(text)
            case .localized(let key, let arguments):
                var container = encoder.container(keyedBy: LocalizedKeys.self)
                try container.encode(key, forKey: .key)
                if !arguments.isEmpty { try container.encode(arguments, forKey: .arguments) }
            }
        }
    }

    /// `alert.title`.
    public var title: Text
    /// `alert.body`.
    public var body: Text
    /// `alert.sound`: a sound file name or `"default"`.
    public var sound: String?

    /// Writes the dictionary in sorted key order.
    func write(to object: inout APNSObjectWriter) throws {
        try self.body.write(key: "body", to: &object)
        object.string("sound", self.sound)
        try self.title.write(key: "title", to: &object)
    }

    /// Creates an alert.
    public init(title: Text, body: Text, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }
}
