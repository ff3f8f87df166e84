import ForgeCampaign
import ForgeLoopback
import ForgeTestSupport
import Foundation
import GRDB
import Testing

/// The local APNs server over TLS with token authentication, and a client configuration for it.
private struct Loopback {
    let server: LocalAPNsServer
    let configuration: APNSClient.Configuration

    init(retry: APNSClient.RetryPolicy = APNSClient.RetryPolicy(backoffBase: .milliseconds(5), backoffCap: .milliseconds(50))) throws {
        let key = try APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
        let keyID = try APNSKeyID("FORGEKEY01")
        let teamID = try APNSTeamID("FORGETEAM1")
        let tls = HTTP2ServerTLSConfiguration(certificateChainFile: KeysExample.path("server.pem"), privateKeyFile: KeysExample.path("server.key"))
        self.server = try LocalAPNsServer.start(
            http2: HTTP2ServerConfiguration(tls: tls),
            authenticator: TokenAuthenticator(
                keys: [LocalAPNsKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: LocalAPNsConfiguration().environment
            )
        )
        self.configuration = APNSClient.Configuration(
            authentication: .jwt(key: key, keyID: keyID, teamID: teamID), environment: .custom(host: "localhost", port: self.server.port),
            tls: APNSClient.TLS(caFile: KeysExample.path("ca.pem")), retry: retry
        )
    }
}

private func alert() throws -> APNSPreparedNotification {
    try APNSAlertNotification<APNSNoCustomKeys>(alert: APNSAlert(title: "Sale", body: "Today only"), topic: APNSBundleID(fingerprint.topic)).prepared()
}

/// Every verdict of a send, as it delivers them.
private func collect(_ send: CampaignSend) async throws(CampaignJournal.Failure) -> [CampaignSend.Verdict] {
    var verdicts: [CampaignSend.Verdict] = []
    for try await verdict in send { verdicts.append(verdict) }
    return verdicts
}

/// A new journal in a temporary folder, with `count` tokens registered.
private func newCampaign(_ count: Int) async throws -> (folder: TemporaryFolder, path: String, journal: CampaignJournal) {
    let (folder, path) = try journalPath()
    let journal = try CampaignJournal.open(path: path)
    try await journal.register(entries(count), fingerprint: fingerprint)
    return (folder, path, journal)
}

@Suite("CampaignSend: a journaled bulk send against the local server", .serialized, .timeLimit(.minutes(2)))
struct CampaignSendTests {
    @Test("A crash between marking and committing: the resumed send sends only what has no final verdict, flagging the tokens sent before")
    func resumeAfterCrash() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let loopback = try Loopback()
        let all = entries(1000)
        // The run that "crashed": 0..<50 committed accepted, 50..<100 marked sending with no verdict.
        let crashed = try CampaignJournal.open(path: path)
        try await crashed.register(all, fingerprint: fingerprint)
        try await crashed.markSending(Array(0..<100))
        try await crashed.commit(verdicts: (0..<50).map { CampaignJournal.Verdict(index: $0, outcome: .accepted, status: 200) })

        let journal = try CampaignJournal.open(path: path)
        #expect(journal.isResumed && journal.campaign == crashed.campaign)
        try journal.verify(fingerprint)
        let verdicts = try await withAPNSClient(configuration: loopback.configuration) { client in
            try await collect(try journal.send(try alert(), client: client, window: 128))
        }
        // Each token without a final verdict exactly once, and only those.
        #expect(verdicts.map(\.entry.index).sorted() == Array(50..<1000))
        #expect(verdicts.allSatisfy { $0.entry == all[$0.entry.index] })
        #expect(verdicts.allSatisfy { if case .accepted = $0.outcome { true } else { false } })
        // Flagged exactly when the crashed run had handed them out.
        #expect(verdicts.filter(\.mayHaveBeenDelivered).map(\.entry.index).sorted() == Array(50..<100))
        // The server saw each of them once, under its campaign's apns-id for the index.
        let accepted = loopback.server.accepted
        #expect(accepted.count == 950)
        let idOfToken = Dictionary(uniqueKeysWithValues: accepted.map { ($0.token, $0.apnsID.lowercased()) })
        #expect(all[50...].allSatisfy { idOfToken[$0.token] == APNSID(campaign: journal.campaign, index: $0.index).description })
        await loopback.server.shutdown()

        #expect(try await journal.progress() == CampaignJournal.Progress(total: 1000, final: 1000, unsettled: 0))
        let rows = try await journal.report()
        #expect(rows.map(\.mayHaveBeenDelivered) == (0..<1000).map { (50..<100).contains($0) })
        #expect(rows.map(\.sends) == (0..<1000).map { (50..<100).contains($0) ? 2 : 1 })
    }

    @Test("A token that failed (its connection dropped after the server took it) is not final: the next send sends it again, flagged")
    func failedIsSentAgain() async throws {
        let (folder, path, journal) = try await newCampaign(300)
        defer { folder.remove() }
        // No retry of a push that may have been delivered: its verdict is `failed`.
        let loopback = try Loopback(retry: APNSClient.RetryPolicy(attempts: 1, retriesPossiblyDelivered: false))
        let all = entries(300)
        loopback.server.schedule(.dropConnection(processed: true), afterRequests: 10)
        let (first, second) = try await withAPNSClient(configuration: loopback.configuration) { client in
            let first = try await collect(try journal.send(try alert(), client: client))
            let second = try await collect(try CampaignJournal.open(path: path).send(try alert(), client: client))
            return (first, second)
        }
        func isFailed(_ verdict: CampaignSend.Verdict) -> Bool { if case .failed = verdict.outcome { true } else { false } }
        func isFinal(_ verdict: CampaignSend.Verdict) -> Bool {
            switch verdict.outcome {
            case .accepted, .rejected: true
            case .failed, .notSent: false
            }
        }
        let failed = Set(first.filter(isFailed).map(\.entry.index))
        #expect(first.count == all.count && !failed.isEmpty, "\(failed.count) failed")
        #expect(first.filter(isFailed).allSatisfy { $0.mayHaveBeenDelivered })
        // The second send took exactly the tokens with no final verdict (failed, and any not sent
        // on the dropped connection), and flags exactly the failed ones: their first copy may have been delivered.
        #expect(second.map(\.entry.index).sorted() == first.filter { !isFinal($0) }.map(\.entry.index).sorted())
        #expect(second.allSatisfy { isFinal($0) })
        #expect(second.allSatisfy { $0.mayHaveBeenDelivered == failed.contains($0.entry.index) })
        // The pushes the server took on the connection it dropped are there twice: each one flagged.
        var copies: [String: Int] = [:]
        for push in loopback.server.accepted { copies[push.token, default: 0] += 1 }
        let duplicated = Set(copies.filter { $0.value > 1 }.keys)
        let flagged = Set(second.filter(\.mayHaveBeenDelivered).map(\.entry.token))
        #expect(!duplicated.isEmpty && duplicated.isSubset(of: flagged), "\(duplicated.count) duplicated, \(flagged.count) flagged")
        await loopback.server.shutdown()
        #expect(try await journal.progress() == CampaignJournal.Progress(total: 300, final: 300, unsettled: 0))
    }

    @Test("A journal write that fails mid-send (its lock held by another connection): a storage failure naming the file; every verdict delivered before it is committed")
    func failedCommit() async throws {
        let (folder, path, journal) = try await newCampaign(5000)
        defer { folder.remove() }
        let loopback = try Loopback()
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        // Waits for the journal's write under way, if any, then holds the lock.
        configuration.busyMode = .timeout(10)
        let other = try DatabaseQueue(path: path, configuration: configuration)
        var delivered: [CampaignSend.Verdict] = []
        let failure = try await withAPNSClient(configuration: loopback.configuration) { client -> CampaignJournal.Failure? in
            let send = try journal.send(try alert(), client: client, window: 128)
            do {
                for try await verdict in send {
                    if delivered.isEmpty {
                        // Another writer takes the lock: the journal's next write fails.
                        try await other.writeWithoutTransaction { db in try db.execute(sql: "BEGIN IMMEDIATE") }
                    }
                    delivered.append(verdict)
                }
            } catch let failure as CampaignJournal.Failure {
                return failure
            }
            return nil
        }
        await loopback.server.shutdown()
        let error = try #require(failure)
        #expect(error.kind == .storage && error.description.contains(path), "\(error)")
        #expect(!delivered.isEmpty && delivered.count < 5000, "\(delivered.count)")
        try await other.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        // Every verdict delivered was committed first.
        let rows = try await journal.report()
        #expect(delivered.allSatisfy { rows[$0.entry.index].state == "accepted" })
    }

    @Test("Stopped mid-send: every token handed out gets exactly one verdict (those never read: not_sent, committed); the next send sends the rest, once")
    func stoppedMidSend() async throws {
        let (folder, path, journal) = try await newCampaign(3000)
        defer { folder.remove() }
        let loopback = try Loopback()
        let (first, rows, second) = try await withAPNSClient(configuration: loopback.configuration) { client in
            let send = try journal.send(try alert(), client: client, window: 1024)
            var first: [CampaignSend.Verdict] = []
            for try await verdict in send {
                first.append(verdict)
                if first.count == 300 { send.stop() }
            }
            let rows = try await journal.report()
            let second = try await collect(try CampaignJournal.open(path: path).send(try alert(), client: client))
            return (first, rows, second)
        }
        func isAccepted(_ verdict: CampaignSend.Verdict) -> Bool { if case .accepted = verdict.outcome { true } else { false } }
        let delivered = first.map(\.entry.index)
        #expect(Set(delivered).count == delivered.count && delivered.count >= 300 && delivered.count < 3000, "\(delivered.count) verdicts")
        #expect(first.allSatisfy { verdict in
            if case .notSent = verdict.outcome { true } else { isAccepted(verdict) }
        })
        // Each handed-out token's verdict is the journal's; a token never handed out is untouched.
        let byIndex = Dictionary(uniqueKeysWithValues: first.map { ($0.entry.index, $0) })
        for row in rows {
            if let verdict = byIndex[row.index] {
                #expect(row.state == (isAccepted(verdict) ? "accepted" : "not_sent") && row.sends == (isAccepted(verdict) ? 1 : 0), "index \(row.index)")
            } else {
                // Never handed out: no send taken back, no reason (a token read from the journal and
                // not delivered would show "stopped before sending" here).
                #expect(row.state == "not_sent" && row.sends == 0 && row.reason == nil, "index \(row.index): \(row.state) \(row.sends) \(row.reason ?? "")")
            }
        }
        // The next send takes exactly the rest; the server saw every token once.
        let acceptedFirst = Set(first.filter(isAccepted).map(\.entry.index))
        #expect(second.map(\.entry.index).sorted() == (0..<3000).filter { !acceptedFirst.contains($0) })
        #expect(second.allSatisfy { isAccepted($0) && !$0.mayHaveBeenDelivered })
        #expect(loopback.server.accepted.count == 3000 && Set(loopback.server.accepted.map(\.token)).count == 3000)
        await loopback.server.shutdown()
    }

    @Test("A window out of range is refused, naming the range")
    func windowRange() async throws {
        let (folder, _, journal) = try await newCampaign(1)
        defer { folder.remove() }
        let loopback = try Loopback()
        try await withAPNSClient(configuration: loopback.configuration) { client in
            let error = #expect(throws: CampaignJournal.Failure.self) { _ = try journal.send(try alert(), client: client, window: 127) }
            #expect(error?.kind == .invalidArgument && error?.description == "window must be between 128 and 1000000 (got 127)")
        }
        await loopback.server.shutdown()
    }
}
