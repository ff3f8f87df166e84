import ForgeCampaign
import ForgeTestSupport
import Foundation
import Testing

/// `campaign report --json` writes its lines by hand; Foundation's `JSONEncoder` (with the
/// `.sortedKeys` and `.withoutEscapingSlashes` the report promised before) is the reference, byte for byte.
@Suite("Campaign report JSON: hand-written lines equal JSONEncoder's, byte for byte")
struct CampaignReportJSONTests {
    private static let reference: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// Strings a reason or a token could hold: plain, escapes JSON needs, a slash, control
    /// characters with and without a short escape, and text beyond ASCII.
    private static let pieces = [
        "", "Unregistered", "sent, no committed verdict", "a \"quoted\" reason", #"back\slash"#, "a/b", "line\nbreak",
        "tab\there", "\r", "\u{08}\u{0C}", "\u{01}\u{1F}\u{7F}", "é", "日本語", "🙂", "0123abcd",
    ]

    private static func string(_ random: inout SplitMix64) -> String {
        (0..<Int.random(in: 0...3, using: &random)).map { _ in Self.pieces.randomElement(using: &random)! }.joined()
    }

    @Test("2,000 random lines, every field present and absent, every outcome")
    func lines() throws {
        var random = SplitMix64(seed: 0x2E90_47)
        let campaign = UUID(uuidString: "FCC563A5-9F9B-8CBC-A6CE-0123456789AB")!
        for _ in 0..<2000 {
            let state = ["accepted", "rejected", "failed", "not_sent", "sending"].randomElement(using: &random)!
            let line = CampaignReport.Line(
                token: Self.string(&random), index: Int.random(in: 0...Int(Int32.max), using: &random),
                line: Int.random(in: 1...10_000_000, using: &random), state: state,
                status: Bool.random(using: &random) ? [200, 400, 410, 429, 500].randomElement(using: &random)! : nil,
                reason: Bool.random(using: &random) ? Self.string(&random) : nil,
                apnsID: Bool.random(using: &random) ? Self.string(&random) : nil,
                sends: Int.random(in: 0...3, using: &random), mayHaveBeenDelivered: Bool.random(using: &random), campaign: campaign
            )
            var written: [UInt8] = []
            line.appendJSON(to: &written)
            let expected = try Self.reference.encode(line)
            #expect(written == Array(expected), "\(String(decoding: written, as: UTF8.self))\n\(String(decoding: expected, as: UTF8.self))")
        }
    }

    @Test("Summaries, zero and large counts")
    func summaries() throws {
        var random = SplitMix64(seed: 0x5AA1)
        for _ in 0..<200 {
            var summary = CampaignReport.Summary()
            summary.total = Int.random(in: 0...10_000_000, using: &random)
            summary.accepted = Int.random(in: 0...summary.total, using: &random)
            summary.rejected = Int.random(in: 0...1000, using: &random)
            summary.failed = Int.random(in: 0...1000, using: &random)
            summary.notSent = Int.random(in: 0...1000, using: &random)
            summary.mayHaveBeenDelivered = Int.random(in: 0...1000, using: &random)
            var written: [UInt8] = []
            summary.appendJSON(to: &written)
            #expect(written == Array(try Self.reference.encode(summary)))
        }
        var empty: [UInt8] = []
        CampaignReport.Summary().appendJSON(to: &empty)
        #expect(String(decoding: empty, as: UTF8.self)
            == #"{"accepted":0,"failed":0,"may_have_been_delivered":0,"not_sent":0,"rejected":0,"summary":true,"total":0}"#)
    }
}
