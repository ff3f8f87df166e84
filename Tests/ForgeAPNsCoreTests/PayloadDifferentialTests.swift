import ForgeAPNsCore
import ForgeTestSupport
import Foundation
import Testing

// A differential test of the payload encoder: thousands of generated notifications of every push
// type, each body checked against two oracles that share no code with ForgePush's encoder:
//
// 1. `JSONSerialization` must parse it as one JSON object (what a device does first);
// 2. it must equal, as a parsed value and byte for byte, what Foundation's `JSONEncoder` (with
//    `[.sortedKeys, .withoutEscapingSlashes]` and default strategies) writes for a model built
//    here from Apple's documented key names.
//
// `JSONEncoderEquivalenceTests` checks the encoder on hand-picked values; this suite checks whole
// notifications on generated ones. The generator is seeded, so a failure names its seed and case
// and replays exactly.

/// Generated values that stress a JSON writer.
struct PayloadGenerator {
    var random: SplitMix64

    init(seed: UInt64) { self.random = SplitMix64(seed: seed) }

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &self.random) < percent }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self.random) }

    mutating func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &self.random)] }

    mutating func maybe<T>(_ percent: Int = 50, _ make: (inout PayloadGenerator) -> T) -> T? {
        self.chance(percent) ? make(&self) : nil
    }

    /// Scalars from every class that needs care: ASCII, escapes, control characters, Latin-1 and
    /// CJK, line and paragraph separators, a BOM, combining marks, and astral-plane characters.
    private static let specials: [Unicode.Scalar] = [
        "\"", "\\", "/", "\u{8}", "\u{C}", "\n", "\r", "\t", "\u{0}", "\u{1}", "\u{1F}", "\u{7F}", "\u{80}", "\u{9F}",
        "\u{A0}", "é", "ß", "\u{301}", "\u{2028}", "\u{2029}", "\u{FEFF}", "\u{FFFD}", "\u{FFFF}", "中", "文", "ㅎ",
        "\u{1F600}", "\u{1F469}", "\u{200D}", "\u{1D11E}", "\u{10FFFF}", "\u{E000}", "<", ">", "&", "'", "%", "@",
    ]

    mutating func scalar() -> Unicode.Scalar {
        switch self.int(0...9) {
        case 0...4: return Unicode.Scalar(UInt8(self.int(0x20...0x7E)))
        case 5: return Unicode.Scalar(UInt8(self.int(0x00...0x1F)))
        case 6: return Unicode.Scalar(UInt32(self.int(0xA0...0xD7FF)))!
        case 7: return Unicode.Scalar(UInt32(self.int(0x1_0000...0x10_FFFF)))!
        default: return self.pick(Self.specials)
        }
    }

    /// A string of 0 to 12 scalars; one in six is empty.
    mutating func string(maxLength: Int = 12) -> String {
        guard !self.chance(16) else { return "" }
        var scalars = String.UnicodeScalarView()
        for _ in 0..<self.int(1...maxLength) { scalars.append(self.scalar()) }
        return String(scalars)
    }

    mutating func nonEmptyString() -> String {
        let text = self.string()
        return text.isEmpty ? "x" : text
    }

    mutating func strings() -> [String] { (0..<self.int(0...3)).map { _ in self.string() } }

    /// A finite double from every region: zero and minus zero, integral values either side of
    /// 1e15, fractions, subnormals, and the extremes.
    mutating func double() -> Double {
        switch self.int(0...9) {
        case 0: return self.pick([0, -0.0, 1, -1, 0.5, 0.1, 1e15, 1e16, 9_007_199_254_740_992, 1e-7])
        case 1: return self.pick([Double.greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude, .leastNormalMagnitude, .ulpOfOne])
        case 2: return Double(self.int(-1_000_000...1_000_000))
        case 3: return Double(Int64.random(in: .min ... .max, using: &self.random))
        case 4: return Double(bitPattern: self.random.next() & 0x000F_FFFF_FFFF_FFFF)  // subnormal
        default:
            let value = Double(bitPattern: self.random.next())
            return value.isFinite ? value : 42.25
        }
    }

    mutating func unitInterval() -> Double {
        self.chance(20) ? self.pick([0, 1, 0.5, -0.0]) : Double.random(in: 0...1, using: &self.random)
    }

    mutating func date() -> Date {
        switch self.int(0...3) {
        case 0: return Date(timeIntervalSinceReferenceDate: 0)
        case 1: return Date(timeIntervalSince1970: Double(self.int(0...4_000_000_000)))
        default: return Date(timeIntervalSince1970: Double.random(in: 0..<4e9, using: &self.random))
        }
    }

    mutating func int64() -> Int64 {
        switch self.int(0...3) {
        case 0: return self.pick([0, 1, -1, .max, .min, Int64(Int32.max) + 1, 9_007_199_254_740_993])
        case 1: return Int64(self.int(-1000...1000))
        default: return Int64(bitPattern: self.random.next())
        }
    }

    /// A custom value tree, at most `depth` levels of containers deep.
    mutating func tree(depth: Int) -> CustomTree {
        let kind = depth > 0 ? self.int(0...13) : self.int(0...9)
        switch kind {
        case 0: return .string(self.string())
        case 1: return .int(self.int64())
        case 2: return .uint(self.chance(30) ? .max : self.random.next())
        case 3: return .small(Int8(truncatingIfNeeded: self.random.next()))
        case 4: return .double(self.double())
        case 5:
            let specials: [Float] = [0.1, 0.5, 1.0 / 3.0, .greatestFiniteMagnitude, .leastNonzeroMagnitude, -0.0]
            let value = self.chance(30) ? self.pick(specials) : Float(bitPattern: UInt32(truncatingIfNeeded: self.random.next()))
            return .float(value.isFinite ? value : 0.1)
        case 6: return .bool(self.chance(50))
        case 7: return .null
        case 8: return .date(self.date())
        case 9: return .data(Data((0..<self.int(0...5)).map { _ in UInt8.random(in: 0...255, using: &self.random) }))
        case 10, 11: return .object(self.members(depth: depth - 1))
        case 12: return .array((0..<self.int(0...4)).map { _ in self.tree(depth: depth - 1) })
        default: return .record(self.record(depth: depth - 1))
        }
    }

    /// Object members; one in five objects is empty, one in eight values is absent (an optional
    /// that is nil, so its key is left out).
    mutating func members(depth: Int, excluding reserved: String? = nil) -> [String: CustomTree?] {
        guard !self.chance(20) else { return [:] }
        var members: [String: CustomTree?] = [:]
        for _ in 0..<self.int(1...5) {
            let key = self.string(maxLength: 6)
            guard key != reserved else { continue }
            members[key] = self.chance(12) ? .some(nil) : self.tree(depth: depth)
        }
        return members
    }

    mutating func record(depth: Int) -> CustomRecord {
        CustomRecord(
            name: self.maybe { $0.string() },
            count: self.maybe { $0.int(Int.min...Int.max) },
            ratio: self.maybe { $0.double() },
            flag: self.maybe { $0.chance(50) },
            when: self.maybe { $0.date() },
            tags: self.maybe { $0.strings() },
            children: self.maybe(30) { generator in (0..<generator.int(0...2)).map { _ in generator.tree(depth: max(0, depth)) } },
            nested: depth > 0 ? self.maybe(40) { $0.record(depth: depth - 1) } : nil
        )
    }
}

/// A custom value of any shape: JSON's own values plus the types `JSONEncoder` treats specially.
indirect enum CustomTree: Encodable, Sendable {
    case string(String)
    case int(Int64)
    case uint(UInt64)
    case small(Int8)
    case double(Double)
    case float(Float)
    case bool(Bool)
    case null
    case date(Date)
    case data(Data)
    /// Members whose value is `nil` are absent, as a synthesized `Encodable` leaves out nil optionals.
    case object([String: CustomTree?])
    case array([CustomTree])
    case record(CustomRecord)

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var container = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in members { try container.encodeIfPresent(value, forKey: AnyKey(key)) }
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .record(let record):
            try record.encode(to: encoder)
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .string(let value): try Self.single(value, encoder)
        case .int(let value): try Self.single(value, encoder)
        case .uint(let value): try Self.single(value, encoder)
        case .small(let value): try Self.single(value, encoder)
        case .double(let value): try Self.single(value, encoder)
        case .float(let value): try Self.single(value, encoder)
        case .bool(let value): try Self.single(value, encoder)
        case .date(let value): try Self.single(value, encoder)
        case .data(let value): try Self.single(value, encoder)
        }
    }

    private static func single(_ value: some Encodable, _ encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// A synthesized `Codable` struct: nil optionals are left out, so it may encode to `{}`.
struct CustomRecord: Codable, Sendable {
    var name: String?
    var count: Int?
    var ratio: Double?
    var flag: Bool?
    var when: Date?
    var tags: [String]?
    var children: [CustomTree]?
    var nested: Box?

    init(
        name: String?, count: Int?, ratio: Double?, flag: Bool?, when: Date?, tags: [String]?, children: [CustomTree]?,
        nested: CustomRecord?
    ) {
        self.name = name
        self.count = count
        self.ratio = ratio
        self.flag = flag
        self.when = when
        self.tags = tags
        self.children = children
        self.nested = nested.map(Box.init)
    }

    /// Breaks the recursion of a struct that contains itself.
    final class Box: Codable, @unchecked Sendable {  // immutable after init
        let value: CustomRecord
        init(_ value: CustomRecord) { self.value = value }
        func encode(to encoder: any Encoder) throws { try self.value.encode(to: encoder) }
        required init(from decoder: any Decoder) throws { self.value = try CustomRecord(from: decoder) }
    }

    enum CodingKeys: String, CodingKey { case name, count, ratio, flag, when, tags, children, nested }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.name = try container.decodeIfPresent(String.self, forKey: .name)
        self.count = try container.decodeIfPresent(Int.self, forKey: .count)
        self.ratio = try container.decodeIfPresent(Double.self, forKey: .ratio)
        self.flag = try container.decodeIfPresent(Bool.self, forKey: .flag)
        self.when = try container.decodeIfPresent(Date.self, forKey: .when)
        self.tags = try container.decodeIfPresent([String].self, forKey: .tags)
        self.children = nil
        self.nested = try container.decodeIfPresent(Box.self, forKey: .nested)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(self.name, forKey: .name)
        try container.encodeIfPresent(self.count, forKey: .count)
        try container.encodeIfPresent(self.ratio, forKey: .ratio)
        try container.encodeIfPresent(self.flag, forKey: .flag)
        try container.encodeIfPresent(self.when, forKey: .when)
        try container.encodeIfPresent(self.tags, forKey: .tags)
        try container.encodeIfPresent(self.children, forKey: .children)
        try container.encodeIfPresent(self.nested, forKey: .nested)
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { self.stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

// MARK: The oracle's models, written from Apple's documented key names

/// `{"aps": <aps>, …custom}`: the custom value's keys and `aps` in one object, as Foundation merges
/// two requests for the same keyed container.
struct EnvelopeModel<APS: Encodable>: Encodable {
    var aps: APS
    var custom: CustomTree?

    func encode(to encoder: any Encoder) throws {
        if let custom { try custom.encode(to: encoder) }
        var container = encoder.container(keyedBy: AnyKey.self)
        try container.encode(self.aps, forKey: AnyKey("aps"))
    }
}

struct AlertModel: Encodable {
    var title, subtitle, body, launchImage, titleLocKey: String?
    var titleLocArgs: [String]?
    var subtitleLocKey: String?
    var subtitleLocArgs: [String]?
    var locKey: String?
    var locArgs: [String]?

    enum CodingKeys: String, CodingKey {
        case title, subtitle, body
        case launchImage = "launch-image", titleLocKey = "title-loc-key", titleLocArgs = "title-loc-args"
        case subtitleLocKey = "subtitle-loc-key", subtitleLocArgs = "subtitle-loc-args", locKey = "loc-key", locArgs = "loc-args"
    }

    var isEmpty: Bool {
        [self.title, self.subtitle, self.body, self.launchImage, self.titleLocKey, self.subtitleLocKey, self.locKey]
            .allSatisfy { $0 == nil } && self.titleLocArgs == nil && self.subtitleLocArgs == nil && self.locArgs == nil
    }
}

enum SoundModel: Encodable {
    case named(String)
    case critical(name: String, volume: Double)

    enum CodingKeys: String, CodingKey { case critical, name, volume }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .named(let name):
            var container = encoder.singleValueContainer()
            try container.encode(name)
        case .critical(let name, let volume):
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(1, forKey: .critical)
            try container.encode(name, forKey: .name)
            try container.encode(volume, forKey: .volume)
        }
    }
}

struct AlertAPSModel: Encodable {
    var alert: AlertModel?
    var badge: Int?
    var sound: SoundModel?
    var threadID, category: String?
    var contentAvailable, mutableContent: Int?
    var targetContentID, interruptionLevel: String?
    var relevanceScore: Double?
    var filterCriteria: String?

    enum CodingKeys: String, CodingKey {
        case alert, badge, sound, category
        case threadID = "thread-id", contentAvailable = "content-available", mutableContent = "mutable-content"
        case targetContentID = "target-content-id", interruptionLevel = "interruption-level"
        case relevanceScore = "relevance-score", filterCriteria = "filter-criteria"
    }
}

struct BackgroundAPSModel: Encodable {
    var contentAvailable = 1
    enum CodingKeys: String, CodingKey { case contentAvailable = "content-available" }
}

enum LiveTextModel: Encodable {
    case plain(String)
    case localized(key: String, arguments: [String])

    enum CodingKeys: String, CodingKey { case key = "loc-key", arguments = "loc-args" }

    func encode(to encoder: any Encoder) throws {
        switch self {
        case .plain(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .localized(let key, let arguments):
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(key, forKey: .key)
            if !arguments.isEmpty { try container.encode(arguments, forKey: .arguments) }
        }
    }

    var library: APNSLiveActivityAlert.Text {
        switch self {
        case .plain(let text): return .plain(text)
        case .localized(let key, let arguments): return .localized(key: key, arguments: arguments)
        }
    }
}

struct LiveAlertModel: Encodable {
    var title: LiveTextModel
    var body: LiveTextModel
    var sound: String?

    var library: APNSLiveActivityAlert { APNSLiveActivityAlert(title: self.title.library, body: self.body.library, sound: self.sound) }
}

struct LiveActivityAPSModel: Encodable {
    var alert: LiveAlertModel?
    var attributes: CustomTree?
    var attributesType: String?
    var contentState: CustomTree
    var dismissalDate: Int?
    var event: String
    var inputPushChannel: String?
    var inputPushToken: Int?
    var relevanceScore: Double?
    var staleDate: Int?
    var timestamp: Int

    enum CodingKeys: String, CodingKey {
        case alert, attributes, event, timestamp
        case attributesType = "attributes-type", contentState = "content-state", dismissalDate = "dismissal-date"
        case inputPushChannel = "input-push-channel", inputPushToken = "input-push-token"
        case relevanceScore = "relevance-score", staleDate = "stale-date"
    }
}

// MARK: Cases

/// The push types and shapes the library builds, each generated on its own seed.
enum GeneratedFamily: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case alert, background, liveActivityStart, liveActivityUpdate, liveActivityEnd, broadcast
    case voip, complication, fileProvider, location, pushToTalk, anyPushType, widgets, controls, mdm

    var testDescription: String { self.rawValue }
    var seed: UInt64 { 0xF0F0_5EED &+ UInt64(Self.allCases.firstIndex(of: self)!) &* 7919 }
}

/// One generated notification: ForgePush's body, and the model Foundation encodes.
struct GeneratedCase {
    var body: [UInt8]
    var expected: any Encodable

    /// The text ForgePush must write: Foundation's, except that `aps` comes first and the custom
    /// keys follow it in sorted order (the documented `{"aps":{…}, <custom keys>}`).
    func expectedBytes(encoder: JSONEncoder) throws -> [UInt8] {
        guard let envelope = self.expected as? any EnvelopeEncodable else { return Array(try encoder.encode(self.expected)) }
        var text = Array(#"{"aps":"#.utf8) + Array(try encoder.encode(envelope.apsValue))
        if let custom = envelope.customValue {
            let keys = Array(try encoder.encode(custom))
            if keys.count > 2 { text += [UInt8(ascii: ",")] + keys.dropFirst().dropLast() }
        }
        return text + [UInt8(ascii: "}")]
    }
}

protocol EnvelopeEncodable: Encodable {
    var apsValue: any Encodable { get }
    var customValue: CustomTree? { get }
}

extension EnvelopeModel: EnvelopeEncodable {
    var apsValue: any Encodable { self.aps }
    var customValue: CustomTree? { self.custom }
}

private let bundle = try! APNSBundleID("com.example.app")
private let channel = try! APNSChannelID("dHJhY2tpbmctY2hhbm5lbC0x")

extension PayloadGenerator {
    /// Custom keys beside `aps`: nothing, an object (maybe empty) or a record (maybe `{}`).
    mutating func customKeys() -> CustomTree? {
        switch self.int(0...3) {
        case 0: return nil
        case 1, 2: return .object(self.members(depth: 3, excluding: "aps"))
        default: return .record(self.record(depth: 2))
        }
    }

    /// A value that encodes as a JSON object: the whole payload of the payload push types.
    mutating func objectTree() -> CustomTree {
        self.chance(75) ? .object(self.members(depth: 3)) : .record(self.record(depth: 2))
    }

    mutating func liveAlert() -> LiveAlertModel {
        func text(_ generator: inout PayloadGenerator) -> LiveTextModel {
            generator.chance(60) ? .plain(generator.string()) : .localized(key: generator.string(), arguments: generator.strings())
        }
        return LiveAlertModel(title: text(&self), body: text(&self), sound: self.maybe { $0.string() })
    }

    mutating func makeCase(_ family: GeneratedFamily) throws -> GeneratedCase {
        switch family {
        case .alert: return try self.alertCase()
        case .background:
            let custom = self.customKeys()
            let body: [UInt8] = if let custom {
                try APNSBackgroundNotification(topic: bundle, payload: custom).prepared().body
            } else {
                try APNSBackgroundNotification(topic: bundle).prepared().body
            }
            return GeneratedCase(body: body, expected: EnvelopeModel(aps: BackgroundAPSModel(), custom: custom))
        case .liveActivityStart, .liveActivityUpdate, .liveActivityEnd, .broadcast:
            return try self.liveActivityCase(family)
        case .voip, .complication, .fileProvider, .location, .pushToTalk, .anyPushType:
            let payload = self.objectTree()
            let notification: APNSPayloadNotification
            switch family {
            case .voip: notification = try .voip(payload, bundleID: bundle)
            case .complication: notification = try .complication(payload, bundleID: bundle)
            case .fileProvider: notification = try .fileProvider(payload, bundleID: bundle)
            case .location: notification = try .location(payload, bundleID: bundle)
            case .pushToTalk: notification = try .pushToTalk(payload, bundleID: bundle)
            default:
                let type = self.pick(APNSPushType.allCases.filter { $0 != .mdm && $0 != .background })
                notification = try APNSPayloadNotification(
                    pushType: type, topic: APNSTopic(bundleID: bundle, pushType: type), payload: payload
                )
            }
            return GeneratedCase(body: try notification.prepared().body, expected: payload)
        case .widgets, .controls:
            let notification: APNSPayloadNotification = family == .widgets ? .widgets(bundleID: bundle) : .controls(bundleID: bundle)
            return GeneratedCase(body: try notification.prepared().body, expected: ["aps": ["content-changed": true]])
        case .mdm:
            let magic = self.string()
            let notification = try APNSPayloadNotification.mdm(pushMagic: magic, topic: "com.apple.mgmt.External.0f2e8c5a-3b1d-4e6f")
            return GeneratedCase(body: try notification.prepared().body, expected: ["mdm": magic])
        }
    }

    private mutating func alertCase() throws -> GeneratedCase {
        var alert = AlertModel(
            title: self.maybe { $0.string() }, subtitle: self.maybe(30) { $0.string() }, body: self.maybe { $0.string() },
            launchImage: self.maybe(10) { $0.string() }, titleLocKey: self.maybe(15) { $0.string() },
            titleLocArgs: self.maybe(15) { $0.strings() }, subtitleLocKey: self.maybe(10) { $0.string() },
            subtitleLocArgs: self.maybe(10) { $0.strings() }, locKey: self.maybe(15) { $0.string() },
            locArgs: self.maybe(15) { $0.strings() }
        )
        let badge = self.maybe(30) { $0.chance(20) ? $0.pick([0, Int.max]) : $0.int(0...10_000) }
        var sound: SoundModel? = self.maybe(30) { generator in
            generator.chance(70)
                ? .named(generator.nonEmptyString()) : .critical(name: generator.nonEmptyString(), volume: generator.unitInterval())
        }
        if alert.isEmpty && badge == nil && sound == nil {
            alert.title = self.string()  // an alert push needs something to show
            if self.chance(50) { sound = .named("default") }
        }
        let aps = AlertAPSModel(
            alert: alert.isEmpty ? nil : alert, badge: badge, sound: sound, threadID: self.maybe(20) { $0.string() },
            category: self.maybe(20) { $0.string() }, contentAvailable: self.chance(20) ? 1 : nil,
            mutableContent: self.chance(20) ? 1 : nil, targetContentID: self.maybe(10) { $0.string() },
            interruptionLevel: self.maybe(20) { $0.pick(APNSInterruptionLevel.allCases).rawValue },
            relevanceScore: self.maybe(20) { $0.unitInterval() }, filterCriteria: self.maybe(10) { $0.string() }
        )
        let custom = self.customKeys()
        let libraryAlert = APNSAlert(
            title: alert.title, subtitle: alert.subtitle, body: alert.body, launchImage: alert.launchImage,
            titleLocalizationKey: alert.titleLocKey, titleLocalizationArguments: alert.titleLocArgs,
            subtitleLocalizationKey: alert.subtitleLocKey, subtitleLocalizationArguments: alert.subtitleLocArgs,
            localizationKey: alert.locKey, localizationArguments: alert.locArgs
        )
        let librarySound: APNSSound? = sound.map {
            switch $0 {
            case .named(let name): return .named(name)
            case .critical(let name, let volume): return .critical(name: name, volume: volume)
            }
        }
        let level = aps.interruptionLevel.flatMap(APNSInterruptionLevel.init(rawValue:))
        func make<P: Encodable & Sendable>(_ payload: P) -> APNSAlertNotification<P> {
            APNSAlertNotification(
                alert: libraryAlert, topic: bundle, badge: badge, sound: librarySound, threadID: aps.threadID,
                category: aps.category, mutableContent: aps.mutableContent != nil, contentAvailable: aps.contentAvailable != nil,
                targetContentID: aps.targetContentID, interruptionLevel: level, relevanceScore: aps.relevanceScore,
                filterCriteria: aps.filterCriteria, payload: payload
            )
        }
        let body = try custom.map { try make($0).prepared().body } ?? make(APNSNoCustomKeys()).prepared().body
        return GeneratedCase(body: body, expected: EnvelopeModel(aps: aps, custom: custom))
    }

    private mutating func liveActivityCase(_ family: GeneratedFamily) throws -> GeneratedCase {
        let contentState = self.objectTree()
        let timestamp = self.date()
        let staleDate = self.maybe(30) { $0.date() }
        let relevance = self.maybe(30) { $0.double() }
        let alert = family == .liveActivityStart ? self.liveAlert() : self.maybe(30) { $0.liveAlert() }
        let dismissal = family == .liveActivityEnd || (family == .broadcast && self.chance(50)) ? self.maybe { $0.date() } : nil
        let ends = family == .liveActivityEnd || dismissal != nil
        var aps = LiveActivityAPSModel(
            alert: alert, contentState: contentState, dismissalDate: dismissal.map(Self.epoch), event: ends ? "end" : "update",
            relevanceScore: relevance, staleDate: staleDate.map(Self.epoch), timestamp: Self.epoch(timestamp)
        )
        let event: APNSLiveActivityEvent = ends ? .end(dismissalDate: dismissal) : .update
        let body: [UInt8]
        switch family {
        case .liveActivityStart:
            let attributes = self.objectTree()
            let type = self.nonEmptyString()
            let input = self.int(0...2)
            aps.event = "start"
            aps.attributes = attributes
            aps.attributesType = type
            aps.inputPushToken = input == 1 ? 1 : nil
            aps.inputPushChannel = input == 2 ? channel.rawValue : nil
            body = try APNSLiveActivityStartNotification(
                attributesType: type, attributes: attributes, contentState: contentState, alert: alert!.library,
                timestamp: timestamp, topic: bundle, staleDate: staleDate, relevanceScore: relevance, inputPushToken: input == 1,
                inputPushChannel: input == 2 ? channel : nil
            ).prepared().body
        case .broadcast:
            body = try APNSBroadcastNotification(
                channelID: channel, bundleID: bundle, event: event, contentState: contentState, timestamp: timestamp,
                staleDate: staleDate, relevanceScore: relevance, alert: alert?.library
            ).prepared().body
        default:
            body = try APNSLiveActivityNotification(
                event: event, contentState: contentState, timestamp: timestamp, topic: bundle, staleDate: staleDate,
                relevanceScore: relevance, alert: alert?.library
            ).prepared().body
        }
        return GeneratedCase(body: body, expected: EnvelopeModel(aps: aps, custom: nil))
    }

    /// Whole seconds since 1970, rounded down, as the `aps` date fields are documented.
    static func epoch(_ date: Date) -> Int { Int(date.timeIntervalSince1970.rounded(.down)) }
}

@Suite("Payload encoder against Foundation, on generated notifications")
struct PayloadDifferentialTests {
    static let casesPerFamily = 400

    private static func foundation() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    @Test("Every body parses with JSONSerialization and equals JSONEncoder's output", arguments: GeneratedFamily.allCases)
    func differential(_ family: GeneratedFamily) throws {
        var generator = PayloadGenerator(seed: family.seed)
        var failures = 0
        var tooLarge = 0
        for index in 0..<Self.casesPerFamily where failures <= 3 {
            let label = "\(family) seed \(family.seed) case \(index)"
            let generated: GeneratedCase
            do {
                generated = try generator.makeCase(family)
            } catch let error as APNSValidationError where error.code == .payloadTooLarge {
                tooLarge += 1
                continue
            }
            let text = String(decoding: generated.body, as: UTF8.self)
            guard let parsed = try? JSONSerialization.jsonObject(with: Data(generated.body)) as? [String: Any] else {
                Issue.record("\(label): not one JSON object: \(text)")
                failures += 1
                continue
            }
            let encoder = Self.foundation()
            let expectedBytes = try generated.expectedBytes(encoder: encoder)
            let expected = try #require(
                try JSONSerialization.jsonObject(with: encoder.encode(generated.expected)) as? [String: Any]
            )
            let expectedText = String(decoding: expectedBytes, as: UTF8.self)
            if !NSDictionary(dictionary: parsed).isEqual(NSDictionary(dictionary: expected)) {
                Issue.record("\(label): parsed values differ\nForgePush:  \(text)\nFoundation: \(expectedText)")
                failures += 1
            } else if generated.body != expectedBytes {
                Issue.record("\(label): same value, other bytes\nForgePush:  \(text)\nFoundation: \(expectedText)")
                failures += 1
            }
        }
        // Generated payloads are small: nearly every case must have been checked.
        #expect(tooLarge < Self.casesPerFamily / 10, "\(tooLarge) of \(Self.casesPerFamily) cases were over the size limit")
    }

    /// Edits that break JSON in the ways a hand-written or corrupted payload does.
    private static let fragments: [[UInt8]] = [
        [0x00], [0x80], [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0xF0, 0x9F, 0x98],
        Array(#"\ud800"#.utf8), Array(#"\udc00"#.utf8), Array(#"\ud83d\ude00"#.utf8), Array(#"\u00e9"#.utf8), Array(#"\x"#.utf8),
        Array("e999".utf8), Array("1e999".utf8), Array("-1e400".utf8), Array("1e-999".utf8), Array(repeating: UInt8(ascii: "9"), count: 320),
        Array("01".utf8), Array("-".utf8), Array(".5".utf8), Array("1.".utf8), Array("true".utf8), Array("nul".utf8),
        [UInt8(ascii: "\"")], [UInt8(ascii: "\\")], [UInt8(ascii: "{")], [UInt8(ascii: "}")], [UInt8(ascii: "[")], [UInt8(ascii: "]")],
        [UInt8(ascii: ",")], [UInt8(ascii: ":")], [UInt8(ascii: " ")], [0x0A], [0x09], Array("é".utf8), Array("😀".utf8),
    ]

    @Test("The payload check agrees with JSONSerialization on damaged bodies", arguments: [UInt64(1), 2, 3])
    func damagedBodies(_ seed: UInt64) throws {
        var generator = PayloadGenerator(seed: seed)
        var disagreements = 0
        for index in 0..<700 where disagreements <= 3 {
            let family = generator.pick(GeneratedFamily.allCases)
            guard var body = try? generator.makeCase(family).body else { continue }
            for _ in 0..<generator.int(1...2) {
                let at = generator.int(0...body.count)
                let fragment = generator.pick(Self.fragments)
                switch generator.int(0...2) {
                case 0: body.insert(contentsOf: fragment, at: at)
                case 1: body.replaceSubrange(at..<min(body.count, at + fragment.count), with: fragment)
                default: body.removeSubrange(at..<min(body.count, at + generator.int(1...3)))
                }
            }
            let foundation = (try? JSONSerialization.jsonObject(with: Data(body))) is [String: Any]
            let problem = APNSPayloadLint.jsonProblem(in: body)
            if foundation != (problem == nil) {
                disagreements += 1
                let text = String(decoding: body, as: UTF8.self)
                Issue.record("seed \(seed) case \(index): JSONSerialization \(foundation ? "parses" : "refuses"), the check says \(problem ?? "valid"): \(text)")
            }
        }
    }
}
