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
        let start = #"{"aps":{"timestamp":\#(unix),"event":"start","attributes-type":"A","attributes":{},"content-state":{}}}"#
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
        for id in ["LA001", "LA002", "LA003", "LA004", "LA005", "LA006", "LA007", "BG001", "BG002", "AL001", "AL002"] { #expect(ids.contains(id)) }
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
}

