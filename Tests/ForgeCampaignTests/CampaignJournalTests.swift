import ForgeCampaign
import ForgeTestSupport
import Foundation
import Testing

let fingerprint = CampaignJournal.Fingerprint(
    payloadSHA256: String(repeating: "a", count: 64), topic: "com.example.forgepush", pushType: "alert", environment: "sandbox",
    tokensPath: "/tmp/tokens.txt", tokensSize: 130, tokensSHA256: String(repeating: "b", count: 64)
)

func entries(_ count: Int) -> [CampaignJournal.Entry] {
    (0..<count).map { CampaignJournal.Entry(index: $0, line: $0 + 1, token: String(format: "%064x", $0 + 1)) }
}

/// Where a journal goes, in a new temporary folder.
func journalPath() throws -> (folder: TemporaryFolder, path: String) {
    let folder = try TemporaryFolder("journal")
    return (folder, folder.url.appendingPathComponent("campaign.db").path)
}

@Suite("CampaignJournal: the SQLite journal of a resumable campaign")
struct CampaignJournalTests {
    @Test("A new file has no campaign until its tokens are registered; opening it again resumes the same campaign, in WAL mode")
    func createAndResume() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let first = try CampaignJournal.open(path: path)
        #expect(!first.isResumed && first.fingerprint == nil)
        try await first.register(entries(3), fingerprint: fingerprint)
        #expect(first.fingerprint == fingerprint)
        let second = try CampaignJournal.open(path: path)
        #expect(second.isResumed && second.fingerprint == fingerprint)
        #expect(first.campaign == second.campaign)
        // WAL mode leaves its log beside the database.
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(try await second.progress() == CampaignJournal.Progress(total: 3, final: 0, unsettled: 0))
    }

    @Test("A registration cut short (no fingerprint written) is started over, under a new campaign id")
    func unfinishedRegistration() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let cut = try CampaignJournal.open(path: path)
        let registration = try await cut.registration(batch: 2)
        for entry in entries(5) { try await registration.add(entry) }
        // The "process" dies here: four rows committed, no campaign.
        let again = try CampaignJournal.open(path: path)
        #expect(!again.isResumed && again.campaign != cut.campaign)
        try await again.register(entries(3), fingerprint: fingerprint)
        #expect(try await again.progress().total == 3)
        let error = await #expect(throws: CampaignJournal.Failure.self) { _ = try await again.registration() }
        #expect(error?.kind == .unusable)
    }

    @Test("A changed input is refused, naming each field that changed; nothing is registered")
    func fingerprintMismatch() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        try await CampaignJournal.open(path: path).register(entries(2), fingerprint: fingerprint)
        var changed = fingerprint
        changed.payloadSHA256 = String(repeating: "c", count: 64)
        changed.tokensSize = 131
        let journal = try CampaignJournal.open(path: path)
        let error = await #expect(throws: CampaignJournal.Failure.self) { try await journal.register(entries(4), fingerprint: changed) }
        #expect(error?.kind == .changedInputs)
        #expect(error?.changed == ["payload", "tokens_size"])
        #expect(error?.description.contains("changed payload, tokens_size") == true, "\(error.map { "\($0)" } ?? "")")
        #expect(error?.description.contains(path) == true)
        #expect(try await journal.progress().total == 2)
    }

    @Test("Resume state: final verdicts are counted, tokens sent without one (sending, failed) are unsettled and flagged when sent again")
    func resumeState() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        do {
            let journal = try CampaignJournal.open(path: path)
            try await journal.register(entries(6), fingerprint: fingerprint)
            try await journal.markSending([0, 1, 2, 3, 4])
            try await journal.commit(verdicts: [
                CampaignJournal.Verdict(index: 0, outcome: .accepted, status: 200, apnsID: "id-0", attempts: 1),
                CampaignJournal.Verdict(index: 1, outcome: .rejected, status: 410, reason: "Unregistered", attempts: 1),
                CampaignJournal.Verdict(index: 2, outcome: .failed, attempts: 3, mayHaveBeenDelivered: true),
                CampaignJournal.Verdict(index: 3, outcome: .notSent, reason: "stopped before sending"),
            ])
            // Index 4 stays `sending`: the process "died" here. Index 5 was never handed out.
        }
        let journal = try CampaignJournal.open(path: path)
        #expect(journal.isResumed)
        // Registering again (every run does) registers nothing: it checks the inputs.
        try await journal.register(entries(6), fingerprint: fingerprint)
        #expect(try await journal.progress() == CampaignJournal.Progress(total: 6, final: 2, unsettled: 2))
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

    @Test("One row per index: marking and committing a token again never adds a row; a reader sees the same")
    func oneRowPerIndex() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let journal = try CampaignJournal.open(path: path)
        try await journal.register(entries(3), fingerprint: fingerprint)
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
