import ForgeAPNsCore
import Foundation
import Testing

/// The lint engine: every lint from a payload that has it, none from one that does not, and the
/// date lints checked against Foundation's own JSONEncoder and JSONDecoder.
@Suite("Lints: what an iPhone would get wrong, found before sending")
struct LintTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21

    func lints(_ json: String, _ type: APNSPushType = .liveactivity, priority: Int? = nil, collapseID: String? = nil) -> [APNSLint] {
        APNSLinter.lints(body: Array(json.utf8), pushType: type, priority: priority, collapseID: collapseID, now: self.now)
    }

    struct ContentState: Codable {
        var status: String
        var eta: Date
    }

    @Test("A content-state Date as JSONEncoder writes it by default passes; as Unix seconds or milliseconds it is LA001, with the date the app would show")
    func contentStateDates() throws {
        let eta = self.now.addingTimeInterval(1_800)
        let encoded = String(decoding: try JSONEncoder().encode(ContentState(status: "on its way", eta: eta)), as: UTF8.self)
        let good = #"{"aps":{"timestamp":\#(Int(self.now.timeIntervalSince1970)),"event":"update","content-state":\#(encoded)}}"#
        #expect(self.lints(good, collapseID: nil).isEmpty)
        for (value, unit) in [("\(Int(eta.timeIntervalSince1970))", "Unix seconds"), ("\(Int(eta.timeIntervalSince1970 * 1000))", "Unix milliseconds")] {
            let bad = #"{"aps":{"timestamp":\#(Int(self.now.timeIntervalSince1970)),"event":"update","content-state":{"status":"x","eta":\#(value)}}}"#
            let found = self.lints(bad)
            #expect(found.map(\.id) == ["LA001"], "\(found)")
            // The date the lint says the app would show is the one Foundation's decoder gives.
            let decoded = try JSONDecoder().decode(ContentState.self, from: Data(#"{"status":"x","eta":\#(value)}"#.utf8)).eta
            let shown = decoded.formatted(Date.ISO8601FormatStyle())
            #expect(found.first?.message.contains("looks like \(unit)") == true && found.first?.message.contains("shows \(shown)") == true,
                    "\(found.first?.message ?? "")")
        }
        let iso = #"{"aps":{"timestamp":\#(Int(self.now.timeIntervalSince1970)),"event":"update","content-state":{"eta":"2026-09-21T10:00:00Z"}}}"#
        #expect(self.lints(iso).map(\.id) == ["LA002"])
        // And the decoder agrees that such a string is no Date.
        #expect(throws: (any Error).self) { try JSONDecoder().decode(ContentState.self, from: Data(#"{"status":"x","eta":"2026-09-21T10:00:00Z"}"#.utf8)) }
    }

    @Test("Live Activity timestamps and dates, and a start without a collapse id")
    func liveActivity() {
        let unix = Int(self.now.timeIntervalSince1970)
        #expect(self.lints(#"{"aps":{"event":"update","content-state":{}}}"#).map(\.id) == ["LA003"])
        #expect(self.lints(#"{"aps":{"timestamp":\#(unix - 7_200),"event":"update","content-state":{}}}"#).map(\.id) == ["LA004"])
        #expect(self.lints(#"{"aps":{"timestamp":\#(unix + 600),"event":"update","content-state":{}}}"#).map(\.id) == ["LA004"])
        #expect(self.lints(#"{"aps":{"timestamp":\#(unix),"event":"end","dismissal-date":\#(unix - 60),"content-state":{}}}"#).map(\.id) == ["LA005"])
        let start = #"{"aps":{"timestamp":\#(unix),"event":"start","attributes-type":"A","attributes":{},"content-state":{},"alert":{"title":"Hi"}}}"#
        #expect(self.lints(start).map(\.id) == ["LA006"])
        #expect(self.lints(start, collapseID: "order-17").isEmpty)
    }

    @Test("Background pushes at priority 10 or with alert, sound or badge; alerts without text or with a lone mutable-content")
    func backgroundAndAlerts() {
        #expect(self.lints(#"{"aps":{"content-available":1}}"#, .background, priority: 10).map(\.id) == ["BG001"])
        #expect(self.lints(#"{"aps":{"content-available":1,"badge":3}}"#, .background, priority: 5).map(\.id) == ["BG002"])
        #expect(self.lints(#"{"aps":{"mutable-content":1}}"#, .alert).map(\.id) == ["AL001"])
        #expect(self.lints(#"{"aps":{"alert":{"subtitle":"only"}}}"#, .alert).map(\.id) == ["AL002"])
        #expect(self.lints(#"{"aps":{"alert":{"title":"Hi"},"mutable-content":1}}"#, .alert).isEmpty)
        #expect(self.lints("not json", .alert).isEmpty)
    }

    @Test("Every lint found has an id in the catalog")
    func catalog() {
        let ids = Set(APNSLint.catalog.map(\.id))
        #expect(ids.count == APNSLint.catalog.count)
        for id in ["LA001", "LA002", "LA003", "LA004", "LA005", "LA006", "LA007", "LA008", "LA009", "LA010", "LA011", "LA012", "LA013", "LA014",
                   "BG001", "BG002", "AL001", "AL002"] { #expect(ids.contains(id)) }
    }

    @Test("LA007: a priority-10 update under a minute after the previous one, with the interval; a minute or more is fine")
    func frequentUpdate() {
        let lint = APNSLinter.frequentUpdate(after: .milliseconds(12_300))
        #expect(lint?.id == "LA007")
        #expect(lint?.message == "a priority-10 update 12.3 s after the previous one to this activity: priority-10 updates spend a budget "
                + "iOS then throttles; send frequent updates at priority 5")
        #expect(APNSLinter.frequentUpdate(after: .seconds(60)) == nil)
        #expect(APNSLinter.frequentUpdate(after: .seconds(-1)) == nil)
    }

    /// A clean start and a clean update, as the new lints' negative cases: none of them fires.
    var cleanStart: String {
        let unix = Int(self.now.timeIntervalSince1970)
        return #"{"aps":{"timestamp":\#(unix),"event":"start","attributes-type":"Order","attributes":{"order":"17"},"#
            + #""content-state":{"status":"packing","items":["tea"]},"stale-date":\#(unix + 3_600),"alert":{"title":"Order 17"}}}"#
    }

    var cleanUpdate: String {
        let unix = Int(self.now.timeIntervalSince1970)
        return #"{"aps":{"timestamp":\#(unix),"event":"update","content-state":{"status":"on its way"},"dismissal-date":\#(unix + 86_400)}}"#
    }

    @Test("The clean start and update used below have no lints")
    func cleanLiveActivity() {
        #expect(self.lints(self.cleanStart, collapseID: "order-17").isEmpty)
        #expect(self.lints(self.cleanUpdate).isEmpty)
    }

    @Test("LA008: an alert in an update, with its path")
    func alertInUpdate() {
        let unix = Int(self.now.timeIntervalSince1970)
        let found = self.lints(#"{"aps":{"timestamp":\#(unix),"event":"update","content-state":{},"alert":{"title":"Delayed"}}}"#, priority: 5)
        #expect(found.map(\.id) == ["LA008"])
        #expect(found.first?.path == "aps.alert")
        #expect(!self.lints(self.cleanUpdate, priority: 5).contains { $0.id == "LA008" })
        // An end may alert: the lint is about updates only.
        #expect(self.lints(#"{"aps":{"timestamp":\#(unix),"event":"end","content-state":{},"alert":{"title":"Delivered"}}}"#).isEmpty)
    }

    @Test("LA009: aps.timestamp in milliseconds, instead of LA004, with the seconds to send")
    func timestampInMilliseconds() {
        let unix = Int(self.now.timeIntervalSince1970)
        let found = self.lints(#"{"aps":{"timestamp":\#(unix * 1000 + 250),"event":"update","content-state":{}}}"#)
        #expect(found.map(\.id) == ["LA009"])
        #expect(found.first?.message.hasSuffix("send \(unix)") == true, "\(found)")
        #expect(found.first?.path == "aps.timestamp")
        #expect(!self.lints(self.cleanUpdate).contains { $0.id == "LA009" })
    }

    @Test("LA010: a stale-date or dismissal-date more than ten years ahead, milliseconds named as such")
    func datesFarAhead() {
        let unix = Int(self.now.timeIntervalSince1970)
        let millis = self.lints(#"{"aps":{"timestamp":\#(unix),"event":"update","content-state":{},"stale-date":\#((unix + 3_600) * 1000)}}"#)
        #expect(millis.map(\.id) == ["LA010"])
        #expect(millis.first?.message.contains("milliseconds") == true && millis.first?.message.hasSuffix("send \(unix + 3_600)") == true, "\(millis)")
        #expect(millis.first?.path == "aps.stale-date")
        let far = self.lints(#"{"aps":{"timestamp":\#(unix),"event":"end","content-state":{},"dismissal-date":\#(unix + 11 * 366 * 86_400)}}"#)
        #expect(far.map(\.id) == ["LA010"] && far.first?.path == "aps.dismissal-date", "\(far)")
        // Nine years ahead is odd but possible.
        #expect(self.lints(#"{"aps":{"timestamp":\#(unix),"event":"end","content-state":{},"dismissal-date":\#(unix + 9 * 365 * 86_400)}}"#).isEmpty)
    }

    @Test("LA011: a start whose attributes are its content-state; different or empty ones are fine")
    func attributesCopiedFromState() {
        let unix = Int(self.now.timeIntervalSince1970)
        let copied = #"{"aps":{"timestamp":\#(unix),"event":"start","attributes-type":"Order","attributes":{"status":"packing","n":1},"#
            + #""content-state":{"n":1,"status":"packing"},"alert":{"title":"Order 17"}}}"#
        let found = self.lints(copied, collapseID: "order-17")
        #expect(found.map(\.id) == ["LA011"] && found.first?.path == "aps.attributes", "\(found)")
        #expect(self.lints(self.cleanStart, collapseID: "order-17").isEmpty)
    }

    @Test("LA012: null anywhere inside content-state, by path, in objects and arrays")
    func nullInContentState() {
        let unix = Int(self.now.timeIntervalSince1970)
        let found = self.lints(#"{"aps":{"timestamp":\#(unix),"event":"update","content-state":{"driver":null,"stops":[{"name":"A"},{"name":null}]}}}"#)
        #expect(found.map(\.id) == ["LA012", "LA012"])
        #expect(found.map(\.path) == ["aps.content-state.driver", "aps.content-state.stops[1].name"])
        #expect(self.lints(self.cleanUpdate).isEmpty)
    }

    @Test("LA013: a start without an alert")
    func startWithoutAlert() {
        let unix = Int(self.now.timeIntervalSince1970)
        let found = self.lints(#"{"aps":{"timestamp":\#(unix),"event":"start","attributes-type":"A","attributes":{"a":1},"content-state":{}}}"#, collapseID: "c")
        #expect(found.map(\.id) == ["LA013"] && found.first?.path == "aps", "\(found)")
        #expect(self.lints(self.cleanStart, collapseID: "c").isEmpty)
    }

    @Test("LA005 covers a start whose stale-date has passed: iOS never shows it")
    func startAlreadyStale() {
        let unix = Int(self.now.timeIntervalSince1970)
        let stale = self.cleanStart.replacingOccurrences(of: "\"stale-date\":\(unix + 3_600)", with: "\"stale-date\":\(unix - 60)")
        let found = self.lints(stale, collapseID: "c")
        #expect(found.map(\.id) == ["LA005"] && found.first?.message.hasSuffix("iOS never shows the activity it starts") == true, "\(found)")
    }

    @Test("LA014: two or more updates with one relevance-score; different scores, one update, or starts are fine")
    func flatRelevanceScore() {
        func update(_ score: String?) -> [UInt8] {
            let relevance = score.map { #","relevance-score":\#($0)"# } ?? ""
            return Array(#"{"aps":{"timestamp":1,"event":"update","content-state":{}\#(relevance)}}"#.utf8)
        }
        let lint = APNSLinter.sameRelevanceScore(acrossUpdates: [update("50"), update("50.0"), Array("not json".utf8)])
        #expect(lint?.id == "LA014" && lint?.path == "aps.relevance-score")
        #expect(lint?.message.hasPrefix("all 2 updates carry aps.relevance-score 50:") == true, "\(lint?.message ?? "")")
        #expect(APNSLinter.sameRelevanceScore(acrossUpdates: [update("50"), update("80")]) == nil)
        #expect(APNSLinter.sameRelevanceScore(acrossUpdates: [update("50")]) == nil)
        #expect(APNSLinter.sameRelevanceScore(acrossUpdates: [update(nil), update(nil)]) == nil)
        #expect(APNSLinter.sameRelevanceScore(acrossUpdates: [update("50"), Array(self.cleanStart.utf8)]) == nil)
    }
}
