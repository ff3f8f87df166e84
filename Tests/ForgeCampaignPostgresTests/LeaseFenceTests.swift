import ForgeAPNsCore
import ForgeCampaign
@testable import ForgeCampaignPostgres
import ForgeTestSupport
import Foundation
import Logging
import PostgresNIO
import Testing

/// Runs `body` on a thread of its own: starting a cluster and psql block, and must not hold one of
/// the cooperative pool's threads (other suites' pushes run there).
private func offPool<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Swift.Result { try body() }) }.start()
    }
}

@Suite("BatchStore: leases claimed with SKIP LOCKED, every write fenced by the lease epoch", .serialized, .timeLimit(.minutes(2)))
struct LeaseFenceTests {
    @Test("A worker whose lease expired and was claimed again can no longer mark, commit, renew or finish; the new owner flags what it resends")
    func fence() async throws {
        let postgres = try await offPool { try PostgresProcess() }
        defer { postgres.stop() }
        let logger = Logger(label: "test")
        let url = try PostgresCampaignURL(postgres.url)
        let notification = try APNSPreparedNotification(
            pushType: .alert, topic: APNSTopic("com.example.app", pushType: .alert), body: Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        )
        var next = 0
        let campaign = try await PostgresCampaign.create(
            .init(name: "fence", notification: notification, tokensPath: "tokens.txt", batchSize: 5), url: url, logger: logger
        ) {
            guard next < 10 else { return nil }
            defer { next += 1 }
            return CampaignJournal.Entry(index: next, line: next + 1, token: String(format: "%064x", next))
        }
        #expect(campaign.tokenCount == 10)
        let reopened = try await PostgresCampaign.open(name: "fence", url: url, logger: logger)
        #expect(reopened.notification == notification && reopened.uuid == campaign.uuid)

        try await PostgresCampaign.withConnection(url, logger: logger) { first in
            try await PostgresCampaign.withConnection(url, logger: logger) { second in
                let a = BatchStore(campaign: campaign, connection: first, renewal: first, owner: "a", lease: .seconds(30))
                let b = BatchStore(campaign: campaign, connection: second, renewal: second, owner: "b", lease: .seconds(30))
                let claimA = try #require(try await a.claim())
                #expect(claimA.batch == 0 && claimA.epoch == 1 && claimA.entries.map(\.index) == [0, 1, 2, 3, 4])
                #expect(try await a.mark([0, 1], claim: claimA) == [1, 1])
                // A live lease is skipped: b gets the next batch.
                let claimB = try #require(try await b.claim())
                #expect(claimB.batch == 1 && claimB.epoch == 1)
                #expect(try await b.claim() == nil)
                #expect(try await b.nextExpiry() != nil)

                // a stalls past its lease; b takes batch 0 over with the next epoch.
                _ = try await offPool { try postgres.psql("UPDATE campaign_batches SET lease_expires_at = now() - interval '1 second' WHERE batch = 0") }
                let takeover = try #require(try await b.claim())
                #expect(takeover.batch == 0 && takeover.epoch == 2 && takeover.entries.count == 5)
                #expect(try await a.mark([2], claim: claimA) == nil)
                #expect(try await a.commit([CampaignJournal.Verdict(index: 0, outcome: .accepted, status: 200)], claim: claimA) == nil)
                #expect(try await a.renew(claimA) == false)
                #expect(try await a.finish(claimA) == false)

                // The new owner: tokens 0 and 1 were sent before without a verdict, so flagged.
                #expect(try await b.mark([0, 1, 2, 3, 4], claim: takeover) == [2, 2, 1, 1, 1])
                #expect(try await b.renew(takeover))
                // Token 4's apns-id is the campaign's own for its index: not stored, derived by the report.
                let ids = (0..<4).map { "id-\($0)" } + [APNSID(campaign: campaign.uuid, index: 4).description.uppercased()]
                let flagged = try #require(try await b.commit(
                    (0..<5).map { CampaignJournal.Verdict(index: $0, outcome: .accepted, status: 200, apnsID: ids[$0], mayHaveBeenDelivered: $0 == 0) },
                    claim: takeover
                ))
                // Flagged: token 0 by its verdict, token 1 because it was sent before.
                #expect(flagged == [0, 1])
                #expect(try await b.finish(takeover))
                #expect(try await b.finish(claimB) == false)
                #expect(try await b.release(claimB) == 5)
            }
        }
        let rows = try await offPool {
            try postgres.psql("SELECT idx, state, sends, may_have_been_delivered, apns_id FROM campaign_tokens WHERE idx < 5 ORDER BY idx")
        }
        #expect(rows.split(separator: "\n") == [
            "0|accepted|2|t|id-0", "1|accepted|2|t|id-1", "2|accepted|1|f|id-2", "3|accepted|1|f|id-3", "4|accepted|1|f|",
        ])
        var report: [CampaignReport.Line] = []
        _ = try await campaign.report { report.append($0) }
        #expect(report[4].apnsID == APNSID(campaign: campaign.uuid, index: 4).description && report[0].apnsID == "id-0")
        #expect(try await offPool { try postgres.psql("SELECT batch, state, lease_epoch FROM campaign_batches ORDER BY batch") }
            .split(separator: "\n") == ["0|done|2", "1|pending|1"])
    }
}
