import ForgeCampaign
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
import GRDB
import Testing

/// The local APNs server over TLS with token authentication, and a client configuration for it.
private struct Loopback {
    let server: LocalAPNSServer
    let configuration: APNSClient.Configuration

    init(retry: APNSClient.RetryPolicy = APNSClient.RetryPolicy(backoffBase: .milliseconds(5), backoffCap: .milliseconds(50))) throws {
        let key = try APNSSigningKey(contentsOfFile: KeysExample.path("AuthKey_FORGEKEY01.p8"))
        let keyID = try APNSKeyID("FORGEKEY01")
        let teamID = try APNSTeamID("FORGETEAM1")
        let tls = LocalAPNSServer.TLS(certificateChainFile: KeysExample.path("server.pem"), privateKeyFile: KeysExample.path("server.key"))
        self.server = try LocalAPNSServer.start(
            listener: LocalAPNSServer.Listener(tls: tls),
            authenticator: TokenAuthenticator(
                keys: [LocalAPNSKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: LocalAPNSConfiguration().environment
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
        let (verdicts, summary) = try await withAPNSClient(configuration: loopback.configuration) { client in
            let send = try journal.send(try alert(), client: client, window: 128)
            return (try await collect(send), send.summary)
        }
        // The run's summary counts what it delivered: the doubt carried over from the crashed run included.
        #expect(summary?.total == 950 && summary?.accepted == 950 && summary?.mayHaveBeenDelivered == 50 && summary?.stoppedReading == false, "\(String(describing: summary))")
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
            var tally = APNSBulkSummary()
            for try await verdict in send {
                first.append(verdict)
                tally.add(verdict.outcome)
                #expect(send.counts.total >= tally.total)
                if first.count == 300 { send.stop() }
            }
            // The summary counts every verdict delivered, the tokens the bulk never read (not sent) included.
            let summary = try #require(send.summary)
            #expect(summary.inputError == nil && summary.duration > .zero && summary.stoppedReading)
            var expected = tally
            expected.stoppedReading = true
            #expect(summary.description == expected.description && send.counts.description == tally.description, "\(summary) | \(tally) | \(send.counts)")
            #expect(summary.notSent == first.count - summary.accepted, "\(summary)")
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

    @Test("Tokens registered as the send reads them, in pages of 50 that fill chunks a part at a time: stopped, resumed from where reading stopped, one verdict per token")
    func registeredAsRead() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let loopback = try Loopback()
        let all = entries(3000)
        let journal = try CampaignJournal.open(path: path)
        try await journal.begin(fingerprint)
        #expect(journal.fingerprint?.isComplete == false)
        let (first, registered, second) = try await withAPNSClient(configuration: loopback.configuration) { client in
            // Window 200: pages of 50, so a chunk of 1024 is written in parts.
            let send = try journal.send(try alert(), client: client, window: 200, read: Reader(all, from: 0).read)
            var first: [CampaignSend.Verdict] = []
            for try await verdict in send {
                first.append(verdict)
                if first.count == 1100 { send.stop() }
            }
            let registered = try await journal.report()
            // The next run: the other inputs match (the file's size and hash are not known yet), and it reads on.
            let resumed = try CampaignJournal.open(path: path)
            #expect(resumed.isResumed && resumed.fingerprint?.isComplete == false)
            try resumed.verify(fingerprint)
            let second = try await collect(
                try resumed.send(try alert(), client: client, window: 200, read: Reader(all, from: registered.count).read)
            )
            return (first, registered, second)
        }
        await loopback.server.shutdown()
        // The first run registered what it read, past the first chunk, in order, not the whole file.
        #expect(registered.count > 1100 && registered.count < 3000, "\(registered.count) registered")
        #expect(registered.map { CampaignJournal.Entry(index: $0.index, line: $0.line, token: $0.token) } == Array(all.prefix(registered.count)))
        // Every token exactly one delivered verdict over the two runs' final ones; the server saw each once.
        func isAccepted(_ verdict: CampaignSend.Verdict) -> Bool { if case .accepted = verdict.outcome { true } else { false } }
        let accepted = (first + second).filter(isAccepted).map(\.entry.index)
        #expect(accepted.sorted() == Array(0..<3000))
        #expect((first + second).allSatisfy { !$0.mayHaveBeenDelivered })
        #expect(loopback.server.accepted.count == 3000 && Set(loopback.server.accepted.map(\.token)).count == 3000)
        // The fingerprint is complete once the file's end is read, in the journal as reopened.
        let reopened = try CampaignJournal.open(path: path)
        #expect(reopened.fingerprint == fingerprint && reopened.fingerprint?.isComplete == true)
        #expect(try await reopened.progress() == CampaignJournal.Progress(total: 3000, final: 3000, unsettled: 0))
        #expect(try await reopened.report().map(\.sends) == Array(repeating: 1, count: 3000))
    }

    @Test("A reader that does not start at the first token not registered is refused; a campaign not fully registered needs a reader")
    func readerOutOfOrder() async throws {
        let (folder, path) = try journalPath()
        defer { folder.remove() }
        let loopback = try Loopback()
        let journal = try CampaignJournal.open(path: path)
        try await journal.begin(fingerprint)
        try await withAPNSClient(configuration: loopback.configuration) { client in
            let noReader = #expect(throws: CampaignJournal.Failure.self) { _ = try journal.send(try alert(), client: client) }
            #expect(noReader?.kind == .invalidArgument, "\(String(describing: noReader))")
            let send = try journal.send(try alert(), client: client, window: 200, read: Reader(entries(100), from: 0, skip: 5).read)
            let error = await #expect(throws: CampaignJournal.Failure.self) { _ = try await collect(send) }
            #expect(error?.kind == .invalidArgument && error?.description.contains("index 5 read, 0 expected") == true, "\(String(describing: error))")
        }
        await loopback.server.shutdown()
        #expect(try await journal.progress().total == 0)
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

/// A campaign's file as a send reads it: `entries` from index `from` on (after `skip` more), a
/// page at a time, then the end with the file's size and hash (the fingerprint's).
private final class Reader: Sendable {
    private let entries: [CampaignJournal.Entry]
    private let next: LockedBox<Int>

    init(_ entries: [CampaignJournal.Entry], from first: Int, skip: Int = 0) {
        self.entries = entries
        self.next = LockedBox(first + skip)
    }

    func read(_ limit: Int) -> CampaignJournal.TokenPage {
        self.next.withLock { next in
            let page = Array(self.entries[next..<Swift.min(next + limit, self.entries.count)])
            next += page.count
            return CampaignJournal.TokenPage(
                entries: page, end: page.count < limit ? (fingerprint.tokensSize, fingerprint.tokensSHA256) : nil
            )
        }
    }
}
