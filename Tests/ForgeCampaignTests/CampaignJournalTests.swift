import ForgeCampaign
import ForgeTestSupport
import Foundation
import Testing

private let fingerprint = CampaignJournal.Fingerprint(
    payloadSHA256: String(repeating: "a", count: 64), topic: "com.example.app", pushType: "alert", environment: "sandbox",
    tokensPath: "/tmp/tokens.txt", tokensSize: 130, tokensSHA256: String(repeating: "b", count: 64)
)

private func entries(_ count: Int) -> [CampaignJournal.Entry] {
    (0..<count).map { CampaignJournal.Entry(index: $0, line: $0 + 1, token: String(format: "%064x", $0)) }
}

/// Where a journal goes, in a new temporary folder.
private func journalPath() throws -> (folder: TemporaryFolder, path: String) {
    let folder = try TemporaryFolder("journal")
    return (folder, folder.url.appendingPathComponent("campaign.db").path)
}

@Suite("CampaignJournal: the SQLite journal of a resumable campaign")
struct CampaignJournalTests {
    @Test("A new file starts a campaign; opening it again resumes the same campaign, in WAL mode")
    func createAndResume() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let (first, resumedFirst) = try CampaignJournal.open(path: path, fingerprint: fingerprint)
        let (second, resumedSecond) = try CampaignJournal.open(path: path, fingerprint: fingerprint)
        #expect(!resumedFirst && resumedSecond)
        #expect(first.campaign == second.campaign)
        // WAL mode leaves its log beside the database.
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test("A changed input is refused, naming each field that changed")
    func fingerprintMismatch() throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        _ = try CampaignJournal.open(path: path, fingerprint: fingerprint)
        var changed = fingerprint
        changed.payloadSHA256 = String(repeating: "c", count: 64)
        changed.tokensSize = 131
        let error = #expect(throws: CampaignJournal.Failure.self) { try CampaignJournal.open(path: path, fingerprint: changed) }
        #expect(error?.changed == ["payload", "tokens_size"])
        #expect(error?.description.contains("changed payload, tokens_size") == true, "\(error.map { "\($0)" } ?? "")")
    }

    @Test("Resume state: final verdicts are skipped, tokens sent without one are unsettled and flagged when sent again")
    func resumeState() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        do {
            let (journal, _) = try CampaignJournal.open(path: path, fingerprint: fingerprint)
            try await journal.register(entries(6))
            try await journal.markSending([0, 1, 2, 3, 4])
            try await journal.commit(verdicts: [
                CampaignJournal.Verdict(index: 0, outcome: .accepted, status: 200, apnsID: "id-0", attempts: 1),
                CampaignJournal.Verdict(index: 1, outcome: .rejected, status: 410, reason: "Unregistered", attempts: 1),
                CampaignJournal.Verdict(index: 2, outcome: .failed, attempts: 3, mayHaveBeenDelivered: true),
                CampaignJournal.Verdict(index: 3, outcome: .notSent, reason: "stopped before sending"),
            ])
            // Index 4 stays `sending`: the process "died" here. Index 5 was never handed out.
        }
        let (journal, resumed) = try CampaignJournal.open(path: path, fingerprint: fingerprint)
        #expect(resumed)
        // Registering again (every run does) keeps what is there.
        try await journal.register(entries(6))
        #expect(try await journal.finalIndices() == [0, 1])
        #expect(try await journal.unsettled() == [2, 4])
        try await journal.markSending([2, 3, 4, 5])
        try await journal.commit(verdicts: [2, 3, 4, 5].map { CampaignJournal.Verdict(index: $0, outcome: .accepted, status: 200) })
        let rows = try await journal.report()
        #expect(rows.map(\.index) == [0, 1, 2, 3, 4, 5])
        #expect(rows.map(\.state) == ["accepted", "rejected", "accepted", "accepted", "accepted", "accepted"])
        #expect(rows.map(\.sends) == [1, 1, 2, 1, 2, 1])
        // Sent twice (2, 4) or failed (2): flagged. Not sent, then sent once (3): not flagged.
        #expect(rows.map(\.mayHaveBeenDelivered) == [false, false, true, false, true, false])
        #expect(rows[1].reason == "Unregistered" && rows[1].status == 410 && rows[0].apnsID == "id-0")
    }

    @Test("One row per index: registering, marking and committing a token again never adds a row")
    func oneRowPerIndex() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let (journal, _) = try CampaignJournal.open(path: path, fingerprint: fingerprint)
        try await journal.register(entries(3))
        try await journal.register(entries(3))
        for _ in 0..<3 {
            try await journal.markSending([1])
            try await journal.commit(verdicts: [CampaignJournal.Verdict(index: 1, outcome: .failed, mayHaveBeenDelivered: true)])
        }
        let rows = try await journal.report()
        #expect(rows.count == 3 && rows.map(\.index) == [0, 1, 2])
        #expect(rows[1].sends == 3 && rows[1].state == "failed")
        let reader = try CampaignJournal.openForReading(path: path)
        #expect(reader.campaign == journal.campaign)
        #expect(try await reader.report() == rows)
    }
}
