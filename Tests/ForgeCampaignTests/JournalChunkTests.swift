import ForgeAPNsCore
import ForgeCampaign
import ForgeTestSupport
import Foundation
import GRDB
import Testing

/// The journal keeps tokens in chunks of 1024 with a state byte each; these tests drive it across
/// chunk boundaries against a model of one row per token (the semantics the chunks must keep).
@Suite("CampaignJournal chunks: random marks and verdicts across chunk boundaries, against a row-per-token model")
struct JournalChunkTests {
    /// One token as a row-per-token journal would hold it.
    private struct ModelRow {
        var state = "not_sent"
        var sends = 0
        var flagged = false
        var status: Int?
        var reason: String?
        var apnsID: String?
    }

    @Test("3 chunks and a short one (3100 tokens), 40 rounds of marks and verdicts: the report, the progress and every page match the model")
    func randomRounds() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let count = 3100
        let journal = try CampaignJournal.open(path: path)
        try await journal.register(entries(count), fingerprint: fingerprint)
        var model = [ModelRow](repeating: ModelRow(), count: count)
        var random = SplitMix64(seed: 0x5EED)
        for _ in 0..<40 {
            // A run of marks around a chunk boundary or anywhere, then verdicts for most of them.
            let start = [1000, 2040, 3070, Int.random(in: 0..<count, using: &random)].randomElement(using: &random)!
            let marked = Array(start..<min(count, start + Int.random(in: 1...300, using: &random))).filter { _ in Bool.random(using: &random) }
            try await journal.markSending(marked)
            for index in marked {
                model[index].flagged = model[index].flagged || model[index].sends >= 1
                model[index].sends += 1
                model[index].state = "sending"
            }
            var verdicts: [CampaignJournal.Verdict] = []
            for index in marked.shuffled(using: &random) where Int.random(in: 0..<10, using: &random) < 8 {
                let verdict: CampaignJournal.Verdict
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<5:
                    // Mostly plain acceptances: the campaign's id or none, first try.
                    let id = Bool.random(using: &random) ? APNSID(campaign: journal.campaign, index: index).description.uppercased() : nil
                    verdict = CampaignJournal.Verdict(index: index, outcome: .accepted, status: 200, apnsID: id, attempts: 1)
                case 5:
                    verdict = CampaignJournal.Verdict(index: index, outcome: .accepted, status: 200, apnsID: "other-\(index)", attempts: 2, mayHaveBeenDelivered: true)
                case 6:
                    verdict = CampaignJournal.Verdict(index: index, outcome: .rejected, status: 410, reason: "Unregistered", attempts: 1)
                case 7, 8:
                    verdict = CampaignJournal.Verdict(index: index, outcome: .failed, reason: "lost", attempts: 1, mayHaveBeenDelivered: true)
                default:
                    verdict = CampaignJournal.Verdict(index: index, outcome: .notSent, reason: "stopped before sending")
                }
                verdicts.append(verdict)
                if verdict.outcome == .notSent {
                    model[index].state = "not_sent"
                    model[index].sends = max(model[index].sends - 1, 0)
                    model[index].status = verdict.status
                    model[index].reason = verdict.reason
                } else {
                    model[index].state = verdict.outcome.rawValue
                    model[index].flagged = model[index].flagged || verdict.mayHaveBeenDelivered
                    model[index].status = verdict.status
                    model[index].reason = verdict.reason
                    model[index].apnsID = verdict.apnsID
                }
            }
            try await journal.commit(verdicts: verdicts)
        }

        let rows = try await journal.report()
        // The indices that differ (a short list, where the whole arrays would be thousands of values).
        func differing<Value: Equatable>(_ actual: [Value], _ expected: [Value]) -> [Int] {
            Array(zip(actual, expected).enumerated().filter { $0.element.0 != $0.element.1 }.map(\.offset).prefix(10))
        }
        #expect(rows.count == count)
        #expect(rows.map(\.index) == Array(0..<count))
        #expect(differing(rows.map(\.token), entries(count).map(\.token)) == [])
        #expect(differing(rows.map(\.line), entries(count).map(\.line)) == [])
        #expect(differing(rows.map(\.state), model.map(\.state)) == [])
        #expect(differing(rows.map(\.sends), model.map(\.sends)) == [])
        #expect(differing(rows.map(\.mayHaveBeenDelivered), model.map(\.flagged)) == [])
        for (row, expected) in zip(rows, model) where row.state != "sending" && expected.status != nil {
            #expect(row.status == expected.status && row.reason == expected.reason, "index \(row.index)")
            // An acceptance with the campaign's id may be kept without it: the report prints that id.
            let campaignID = APNSID(campaign: journal.campaign, index: row.index)
            let id = row.apnsID ?? (row.state == "accepted" ? campaignID.description : nil)
            if let expectedID = expected.apnsID, row.state != "not_sent" {
                #expect(id.map { (try? APNSID($0)) == (try? APNSID(expectedID)) || $0 == expectedID } == true, "index \(row.index)")
            }
        }
        let final = model.filter { $0.state == "accepted" || $0.state == "rejected" }.count
        let unsettled = model.filter { $0.state == "sending" || $0.state == "failed" }.count
        #expect(try await journal.progress() == CampaignJournal.Progress(total: count, final: final, unsettled: unsettled))
        // Pages start anywhere and end at their chunk's end.
        for first in [0, 1, 1023, 1024, 2047, 3071, 3072, 3099] {
            let page = try await journal.rows(from: first)
            #expect(page.first?.index == first && page.last?.index == min(count, (first / 1024 + 1) * 1024) - 1)
            #expect(page == Array(rows[first...page.last!.index]))
        }
        for past in [count, count + 1, 3071 + 1024, -1] { #expect(try await journal.rows(from: past).isEmpty) }
    }

    @Test("Tokens registered out of order are refused, naming the index")
    func registrationInOrder() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let journal = try CampaignJournal.open(path: path)
        let registration = try await journal.registration()
        try await registration.add(CampaignJournal.Entry(index: 0, line: 1, token: "aa"))
        let error = await #expect(throws: CampaignJournal.Failure.self) {
            try await registration.add(CampaignJournal.Entry(index: 2, line: 3, token: "bb"))
        }
        #expect(error?.kind == .invalidArgument && error?.description.contains("index 2 given, 1 expected") == true)
    }

    @Test("A journal of another format (a row per token, no version) is refused, naming the file and what to do")
    func otherFormat() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let database = try DatabaseQueue(path: path)
        try await database.write { db in try db.execute(sql: "CREATE TABLE token (idx INTEGER PRIMARY KEY, token TEXT)") }
        try database.close()
        let error = #expect(throws: CampaignJournal.Failure.self) { try CampaignJournal.open(path: path) }
        #expect(error?.kind == .unusable)
        #expect(error?.description.contains(path) == true && error?.description.contains("start a new journal") == true)
    }
}
