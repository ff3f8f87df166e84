import ForgeAPNsCore
import ForgeCampaign
@testable import ForgeCampaignPostgres
import ForgeTestSupport
import Foundation
import Logging
import PostgresNIO
import Testing

@Suite("BatchStore: leases claimed with SKIP LOCKED, every write fenced by the lease epoch", .serialized, .timeLimit(.minutes(2)))
struct LeaseFenceTests {
    /// A campaign of `count` tokens (token `i` is `i` in 64 hex digits) in `postgres`.
    private static func campaign(_ name: String, tokens count: Int, batchSize: Int, in postgres: PostgresProcess) async throws
        -> (PostgresCampaign, PostgresCampaignURL, APNSPreparedNotification)
    {
        let url = try PostgresCampaignURL(postgres.url)
        let notification = try APNSPreparedNotification(
            pushType: .alert, topic: APNSTopic("com.example.app", pushType: .alert), body: Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        )
        var next = 0
        let campaign = try await PostgresCampaign.create(
            .init(name: name, notification: notification, tokensPath: "tokens.txt", batchSize: batchSize), url: url, logger: Logger(label: "test")
        ) {
            guard next < count else { return nil }
            defer { next += 1 }
            return CampaignJournal.Entry(index: next, line: next + 1, token: String(format: "%064x", next))
        }
        return (campaign, url, notification)
    }

    @Test("A worker whose lease expired and was claimed again can no longer mark, commit, renew or finish; the new owner flags what it resends")
    func fence() async throws {
        let postgres = try await offPool { try PostgresProcess() }
        defer { postgres.stop() }
        let (campaign, url, notification) = try await Self.campaign("fence", tokens: 10, batchSize: 5, in: postgres)
        let logger = Logger(label: "test")
        #expect(campaign.tokenCount == 10)
        let reopened = try await PostgresCampaign.open(name: "fence", url: url, logger: logger)
        #expect(reopened.notification == notification && reopened.uuid == campaign.uuid)

        try await PostgresCampaign.withConnection(url, logger: logger) { first in
            try await PostgresCampaign.withConnection(url, logger: logger) { second in
                let a = BatchStore(campaign: campaign, connection: first, renewal: first, owner: "a", lease: .seconds(30))
                let b = BatchStore(campaign: campaign, connection: second, renewal: second, owner: "b", lease: .seconds(30))
                let claimA = try #require(try await a.claim())
                #expect(claimA.batch == 0 && claimA.epoch == 1 && claimA.entries.map(\.index) == [0, 1, 2, 3, 4])
                #expect(try await a.mark(claimA.entries[0..<2], claim: claimA) == [1, 1])
                // A live lease is skipped: b gets the next batch.
                let claimB = try #require(try await b.claim())
                #expect(claimB.batch == 1 && claimB.epoch == 1)
                #expect(try await b.claim() == nil)
                #expect(try await b.nextExpiry() != nil)

                // a stalls past its lease; b takes batch 0 over with the next epoch.
                _ = try await offPool { try postgres.psql("UPDATE campaign_batches SET lease_expires_at = now() - interval '1 second' WHERE batch = 0") }
                let takeover = try #require(try await b.claim())
                #expect(takeover.batch == 0 && takeover.epoch == 2 && takeover.entries.count == 5)
                #expect(try await a.mark(claimA.entries[2..<3], claim: claimA) == nil)
                #expect(try await a.commit([CampaignJournal.Verdict(index: 0, outcome: .accepted, status: 200)], claim: claimA) == nil)
                #expect(try await a.renew(claimA) == false)
                #expect(try await a.finish(claimA) == false)

                // The new owner: tokens 0 and 1 were sent before without a verdict, so flagged.
                #expect(try await b.mark(takeover.entries[...], claim: takeover) == [2, 2, 1, 1, 1])
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

    /// `iterator`'s next token, from a copy (for a child task).
    private static func next(_ iterator: BatchFeed.AsyncIterator) async throws -> String? {
        var iterator = iterator
        return try await iterator.next()
    }

    @Test("The feed marks chunks by index range: tokens with a final verdict in the range are left alone, resends are flagged, and no token is handed out past the window")
    func rangeMarkingAndWindow() async throws {
        let postgres = try await offPool { try PostgresProcess() }
        defer { postgres.stop() }
        let window = PostgresCampaignWorker.window, chunk = PostgresCampaignWorker.markChunk
        #expect(window % chunk == 0 && window >= 2 * chunk)
        let count = window + 2 * chunk
        let (campaign, url, _) = try await Self.campaign("window", tokens: count, batchSize: count, in: postgres)
        // Before the claim: tokens 3 and 700 have final verdicts (inside the first two chunks'
        // ranges), token 5 was sent by an earlier owner with no answer.
        _ = try await offPool {
            try postgres.psql(
                """
                UPDATE campaign_tokens SET state = 'accepted', sends = 1 WHERE idx IN (3, 700);
                UPDATE campaign_tokens SET state = 'failed', sends = 1, may_have_been_delivered = true WHERE idx = 5
                """
            )
        }
        let sending = { try await offPool { try postgres.psql("SELECT count(*) FROM campaign_tokens WHERE state = 'sending'") } }
        try await PostgresCampaign.withConnection(url, logger: Logger(label: "test")) { connection in
            let store = BatchStore(campaign: campaign, connection: connection, renewal: connection, owner: "a", lease: .seconds(30))
            let claim = try #require(try await store.claim())
            #expect(claim.entries.count == count - 2 && !claim.entries.contains { [3, 700].contains($0.index) })
            let feed = BatchFeed(claim: claim, store: store, lease: LeaseClock(deadline: .now + .seconds(3600)), isStopped: { false })
            var tokens = feed.makeAsyncIterator()
            for position in 0..<window {
                #expect(try await tokens.next() == claim.entries[position].token)
            }
            // The window is full: marked are exactly the tokens handed out, the final ones untouched.
            #expect(try await sending() == "\(window)")
            #expect(feed.gate.marked == window)
            let five = try #require(claim.entries.firstIndex { $0.index == 5 })
            #expect(feed.gate.sends(at: five) == 2 && feed.gate.sends(at: five + 1) == 1)
            let final = try await offPool {
                try postgres.psql("SELECT idx, state, sends, may_have_been_delivered FROM campaign_tokens WHERE idx IN (3, 5, 700) ORDER BY idx")
            }
            #expect(final.split(separator: "\n") == ["3|accepted|1|f", "5|sending|2|t", "700|accepted|1|f"])

            // The next token waits for committed verdicts: one short of a chunk still holds it back.
            async let following = Self.next(tokens)
            feed.gate.advance(by: chunk - 1)
            #expect(try await sending() == "\(window)")
            feed.gate.advance(by: 1)
            #expect(try await following == claim.entries[window].token)
            #expect(try await sending() == "\(window + chunk)")
        }
    }
}
