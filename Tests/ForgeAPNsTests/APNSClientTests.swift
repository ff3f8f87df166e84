import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
import Logging
import Testing

private struct Score: Codable, Sendable, Hashable {
    var home: Int
    var away: Int
}

@Suite("APNSClient against the local APNs server", .timeLimit(.minutes(1)))
struct APNSClientTests {
    @Test("Every push type is accepted end to end, with one provider token for all")
    func everyPushType() async throws {
        let loopback = try Loopback.start()
        try await withAPNSClient(configuration: loopback.configuration) { client in
            let device = token(0)
            let now = Date()
            var results: [APNSSendResult] = []
            results.append(try await client.send(alert(), to: device))
            results.append(try await client.send(APNSBackgroundNotification(topic: bundleID), to: device))
            results.append(try await client.send(APNSLiveActivityNotification(
                event: .update, contentState: Score(home: 1, away: 0), timestamp: now, topic: bundleID), to: device))
            results.append(try await client.send(APNSLiveActivityStartNotification(
                attributesType: "MatchAttributes", attributes: ["match": "final"], contentState: Score(home: 0, away: 0),
                alert: APNSLiveActivityAlert(title: "Kick-off", body: "Live now"), timestamp: now, topic: bundleID), to: device))
            results.append(try await client.send(APNSLiveActivityNotification(
                event: .end(dismissalDate: now + 60), contentState: Score(home: 2, away: 1), timestamp: now + 1, topic: bundleID), to: device))
            results.append(try await client.send(try APNSPayloadNotification.voip(["call": "1"], bundleID: bundleID), to: device))
            results.append(try await client.send(try APNSPayloadNotification.complication(["c": 1], bundleID: bundleID), to: device))
            results.append(try await client.send(try APNSPayloadNotification.fileProvider(["f": 1], bundleID: bundleID), to: device))
            results.append(try await client.send(try APNSPayloadNotification.location(["l": 1], bundleID: bundleID), to: device))
            results.append(try await client.send(try APNSPayloadNotification.pushToTalk(["p": 1], bundleID: bundleID), to: device))
            results.append(try await client.send(APNSPayloadNotification.widgets(bundleID: bundleID), to: device))
            results.append(try await client.send(APNSPayloadNotification.controls(bundleID: bundleID), to: device))
            #expect(results.allSatisfy { !$0.apnsID.isEmpty && $0.apnsUniqueID != nil && $0.attempts == 1 })
            #expect(client.providerTokenSignings == 1)
        }
        let types = loopback.server.accepted.map(\.pushType.rawValue)
        #expect(types == ["alert", "background", "liveactivity", "liveactivity", "liveactivity", "voip", "complication",
                          "fileprovider", "location", "pushtotalk", "widgets", "controls"])
        #expect(loopback.server.accepted.allSatisfy { $0[header: "authorization"]?.hasPrefix("bearer ") == true })
        await loopback.server.shutdown()
    }

    @Test("Bulk verdicts carry each push's apns-id and apns-unique-id as the server answered them")
    func bulkVerdictIDs() async throws {
        let loopback = try Loopback.start()
        let devices = (0..<300).map(token)
        var accepted: [String: APNSSendResult] = [:]
        try await withAPNSClient(configuration: loopback.configuration) { client in
            for await verdict in try client.sendBulk(alert(), to: devices) {
                guard case .accepted(let result) = verdict.outcome else {
                    Issue.record("\(verdict.token): \(verdict.outcome)")
                    continue
                }
                accepted[verdict.token] = result
            }
        }
        let answered = Dictionary(uniqueKeysWithValues: loopback.server.accepted.map { ($0.token, $0.apnsID) })
        #expect(accepted.count == devices.count)
        for (device, result) in accepted {
            #expect(result.apnsID == answered[device])
            #expect(result.apnsUniqueID?.count == 36)
        }
        // Results read from a response and results built from strings compare by their values.
        let first = try #require(accepted[devices[0].hexString])
        var copy = first
        copy.apnsID = first.apnsID
        #expect(copy == first && copy.hashValue == first.hashValue)
        copy.apnsUniqueID = nil
        #expect(copy != first && copy.apnsID == first.apnsID)
        await loopback.server.shutdown()
    }

    @Test("Tokens as strings are parsed once at the edge: a bad one gets one rejected verdict and is never sent; device tokens go as they are")
    func bulkStringsAndTokens() async throws {
        let loopback = try Loopback.start()
        let good = (0..<50).map(token)
        // Upper case is a device token too (it is lowered); the rest are not.
        var texts = good.map(\.hexString)
        texts[7] = texts[7].uppercased()
        texts.insert("zz" + String(repeating: "0", count: 62), at: 10)
        texts.insert("abc", at: 20)
        try await withAPNSClient(configuration: loopback.configuration) { client in
            var verdicts: [APNSBulkVerdict] = []
            // Two verdicts buffered at most: the counts so far run ahead of the reader by a batch or two, never behind.
            let bulk = try client.sendBulk(alert(), to: StringTokens(texts: texts), bufferedVerdicts: 2)
            var tally = APNSBulkSummary()
            #expect(bulk.summary == nil && bulk.counts.total <= texts.count)
            for await verdict in bulk {
                verdicts.append(verdict)
                tally.add(verdict.outcome)
                let counts = bulk.counts
                #expect(counts.total >= tally.total && counts.accepted >= tally.accepted && counts.total <= texts.count)
            }
            #expect(verdicts.map(\.index).sorted() == Array(0..<texts.count), "one verdict per string")
            // The bulk's summary counts by the rule a caller's own tally uses, and the counts so far end there.
            let summary = try #require(bulk.summary)
            #expect(summary.rejected == ["InvalidToken": 2] && summary.accepted == good.count && summary.total == texts.count)
            #expect(tally.total == summary.total && tally.accepted == summary.accepted && tally.rejected == summary.rejected)
            #expect(tally.failed == summary.failed && tally.notSent == summary.notSent)
            #expect(tally.mayHaveBeenDelivered == summary.mayHaveBeenDelivered)
            #expect(bulk.counts.description == summary.description && summary.duration > .zero)
            let rejected = verdicts.filter { !$0.isAccepted }
            #expect(rejected.map(\.index).sorted() == [10, 20])
            #expect(rejected.allSatisfy { verdict in
                guard case .rejected(let error) = verdict.outcome else { return false }
                return error.kind == .invalidNotification && error.detail.contains("device token") && verdict.token == texts[verdict.index]
            })
            #expect(verdicts.first { $0.index == 7 }?.token == good[7].hexString, "named by the parsed, lowered token")

            let again = try await client.sendBulk(alert(), to: TokenSequence(tokens: good)).summary()
            #expect(again.accepted == good.count && again.total == good.count)
        }
        let sent = loopback.server.accepted.map(\.token)
        #expect(sent.count == 2 * good.count && Set(sent) == Set(good.map(\.hexString)), "the bad strings never reached the server")
        await loopback.server.shutdown()
    }

    @Test("Permanent rejections are thrown at once with status, reason, timestamp and apns-id; never retried")
    func permanentRejections() async throws {
        let gone = token(9)
        let when = Date(timeIntervalSince1970: 1_760_000_000.25)
        let loopback = try Loopback.start(tokens: [
            gone.hexString: LocalAPNSTokenRecord(bundleID: bundle, environment: .sandbox, state: .unregistered(when)),
            token(8).hexString: LocalAPNSTokenRecord(bundleID: "com.other.app", environment: .sandbox),
        ])
        try await withAPNSClient(configuration: loopback.configuration) { client in
            do {
                _ = try await client.send(alert(), to: gone)
                Issue.record("an unregistered token was accepted")
            } catch let error as APNSError {
                #expect(error.kind == .rejected && error.status == 410 && error.reason == .unregistered, "\(error)")
                #expect(error.timestamp == when && error.attempts == 1 && error.apnsID != nil)
                #expect(error.disposition == .dropToken)
            }
            do {
                _ = try await client.send(alert(), to: token(8))
                Issue.record("a token of another topic was accepted")
            } catch let error as APNSError {
                #expect(error.reason == .deviceTokenNotForTopic && error.attempts == 1)
            }
        }
        await loopback.server.shutdown()
    }

    @Test("Bad input is refused before anything is sent")
    func invalidNotification() async throws {
        let loopback = try Loopback.start()
        try await withAPNSClient(configuration: loopback.configuration) { client in
            let big = APNSAlertNotification(alert: APNSAlert(title: String(repeating: "x", count: 5000)), topic: bundleID)
            do {
                _ = try await client.send(big, to: token(0))
                Issue.record("an oversized payload was sent")
            } catch let error as APNSError {
                #expect(error.kind == .invalidNotification && error.detail.contains("4096"))
            }
        }
        #expect(loopback.server.acceptedCount == 0)
        await loopback.server.shutdown()
    }

    @Test("429, 500 and 503 are retried with backoff; the policy's attempts bound them")
    func retries() async throws {
        let loopback = try Loopback.start()
        try await withAPNSClient(configuration: loopback.configuration) { client in
            _ = try await client.send(alert(), to: token(0))
            loopback.server.schedule(.respond(status: 503, reason: .serviceUnavailable))
            loopback.server.schedule(.respond(status: 500, reason: .internalServerError), afterRequests: 1)
            let recovered = try await client.send(alert(), to: token(0))
            #expect(recovered.attempts == 3)
            loopback.server.schedule(.respond(status: 429, reason: .tooManyRequests), count: 3)
            do {
                _ = try await client.send(alert(), to: token(0))
                Issue.record("a 429 storm was accepted")
            } catch let error as APNSError {
                #expect(error.kind == .rejected && error.reason == .tooManyRequests && error.attempts == 3)
            }
        }
        #expect(loopback.server.acceptedCount == 2)
        await loopback.server.shutdown()
    }

    @Test("ExpiredProviderToken: one refresh, one retry, accepted; no token per request")
    func expiredProviderToken() async throws {
        // The server's clock runs 20 minutes ahead of the client's (node-apn #590): a 45-minute-old
        // token is 65 minutes old to the server.
        let clientClock = ManualWallClock(Date(timeIntervalSince1970: 1_760_000_000))
        let serverClock = ManualWallClock(Date(timeIntervalSince1970: 1_760_000_000 + 20 * 60))
        let loopback = try Loopback.start(serverClock: serverClock, clientClock: clientClock)
        try await withAPNSClient(configuration: loopback.configuration) { client in
            #expect(try await client.send(alert(), to: token(0)).attempts == 1)
            #expect(try await client.send(alert(), to: token(1)).attempts == 1)
            clientClock.advance(by: 45 * 60)
            serverClock.advance(by: 45 * 60)
            let result = try await client.send(alert(), to: token(2))
            #expect(result.attempts == 1)
            #expect(client.providerTokenSignings == 2)
        }
        #expect(loopback.server.acceptedCount == 3)
        await loopback.server.shutdown()
    }

    @Test("The in-process transport answers without sockets")
    func inProcess() async throws {
        let configuration = APNSClient.Configuration(
            authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), environment: .sandbox
        )
        let seen = LockedPaths()
        let client = try APNSClient(configuration: configuration, transport: APNSInProcessTransport { request in
            seen.append(request.path)
            #expect(request[header: "authorization"]?.hasPrefix("bearer ") == true)
            return APNSTransportResponse(status: 200, headers: [APNSHeaderField("apns-id", "00000000-0000-0000-0000-000000000001")])
        })
        // A send needs no background work from this transport; a bulk send runs in the client's run().
        let result = try await client.send(alert(), to: token(3))
        #expect(result.apnsID == "00000000-0000-0000-0000-000000000001")
        #expect(seen.paths == ["/3/device/" + token(3).hexString])
        let summary = try await withAPNSClient(client) { client in try await client.sendBulk(alert(), to: [token(4), token(5)]).summary() }
        #expect(summary.accepted == 2)
    }
}

final class LockedPaths: Sendable {
    private let values = LockedBox<[String]>([])
    func append(_ path: String) { self.values.withLock { $0.append(path) } }
    var paths: [String] { self.values.withLock { $0 } }
}

/// Strings as an async sequence, as a file reader hands them over.
private struct StringTokens: AsyncSequence, Sendable {
    var texts: [String]

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[String]>
        mutating func next() async -> String? { self.base.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: self.texts.makeIterator()) }
}

/// Device tokens as an async sequence.
private struct TokenSequence: AsyncSequence, Sendable {
    var tokens: [DeviceToken]

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[DeviceToken]>
        mutating func next() async -> DeviceToken? { self.base.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: self.tokens.makeIterator()) }
}
