import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import ForgeSupport
import Foundation
import Testing

/// Counts what a test's fake transport or token sequence saw, from any task.
///
/// A `LockedBox` (a pthread lock), not `Synchronization.Mutex`: ThreadSanitizer sees through pthread
/// locks but reports false races on `Mutex`, and these handlers run concurrently.
private final class Count: Sendable {
    private let value = LockedBox(0)
    @discardableResult func increment() -> Int { self.value.withLock { $0 += 1; return $0 } }
    var current: Int { self.value.withLock { $0 } }
}

/// Tokens made up on demand, counting how many were read.
private struct CountedTokens: AsyncSequence, Sendable {
    typealias Element = String
    let limit: Int
    let read: Count
    struct AsyncIterator: AsyncIteratorProtocol {
        let limit: Int
        let read: Count
        mutating func next() async -> String? {
            let n = self.read.increment()
            return n > self.limit ? nil : String(format: "%064x", n)
        }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(limit: self.limit, read: self.read) }
}

/// Holds every caller of ``wait()`` until ``open()``.
private final class Gate: Sendable {
    private let state = LockedBox<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = self.state.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

private let accepted = APNSTransportResponse(status: 200, headers: [APNSHeaderField("apns-id", "00000000-0000-0000-0000-000000000001")])

private func inProcessClient(
    window: Int = 16, _ handler: @escaping @Sendable (APNSHTTPRequest) async throws -> APNSTransportResponse
) throws -> APNSClient {
    let configuration = APNSClient.Configuration(
        authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), environment: .sandbox,
        retry: APNSClient.RetryPolicy(attempts: 3, backoffBase: .milliseconds(1), backoffCap: .milliseconds(2))
    )
    return try APNSClient(configuration: configuration, transport: APNSInProcessTransport(window: window, handler: handler))
}

@Suite("Bulk cancellation and what may have been delivered", .timeLimit(.minutes(1)))
struct BulkCancellationTests {
    @Test("cancel() stops reading the token sequence: the tokens read get a verdict each, the rest are never read")
    func cancelStopsReading() async throws {
        try await withAPNSClient(inProcessClient { _ in accepted }) { client in
        let read = Count()
        let bulk = try client.sendBulk(alert(), to: CountedTokens(limit: 1_000_000, read: read), bufferedVerdicts: 16)
        bulk.cancel()
        var verdicts = 0
        for await _ in bulk { verdicts += 1 }
        let summary = try #require(bulk.summary)
        // A few batches may have been read before the cancel landed; a full buffer stops the rest.
        #expect(read.current < 1_000, "cancel() went on reading: \(read.current) tokens")
        #expect(summary.stoppedReading)
        #expect(summary.total == verdicts)
        #expect(summary.accepted + summary.notSent == summary.total)
        #expect(summary.description.contains("were not read"))
        }
    }

    @Test("stop() reads no more tokens and lets the pushes on their way finish: each gets its answer, none is given up")
    func stopLetsInFlightFinish() async throws {
        let gate = Gate()
        let (arrivals, arrived) = AsyncStream.makeStream(of: Void.self)
        let client = try inProcessClient(window: 16) { _ in
            arrived.yield()
            await gate.wait()
            return accepted
        }
        try await withAPNSClient(client) { client in
            let read = Count()
            let bulk = try client.sendBulk(alert(), to: CountedTokens(limit: 1_000_000, read: read), bufferedVerdicts: 16)
            // Pushes are on their way (held by the transport) when the bulk is stopped.
            var iterator = arrivals.makeAsyncIterator()
            _ = await iterator.next()
            bulk.stop()
            gate.open()
            var verdicts: [APNSBulkVerdict] = []
            for await verdict in bulk { verdicts.append(verdict) }
            let summary = try #require(bulk.summary)
            #expect(!verdicts.isEmpty && verdicts.allSatisfy(\.isAccepted), "\(summary)")
            #expect(summary.stoppedReading && summary.total == verdicts.count && summary.accepted == verdicts.count)
            #expect(Set(verdicts.map(\.index)) == Set(0..<verdicts.count))
            #expect(read.current < 1_000, "stop() went on reading: \(read.current) tokens")
        }
    }

    @Test("apnsIDs: each token's request carries the campaign id of its index, on every run")
    func campaignIDs() async throws {
        let campaign = UUID()
        let seen = LockedBox<[String: String]>([:])
        let client = try inProcessClient { request in
            let token = String(request.path.dropFirst("/3/device/".count))
            seen.withLock { $0[token] = request.headers.first { $0.name == "apns-id" }?.value }
            return accepted
        }
        try await withAPNSClient(client) { client in
            let tokens = (0..<300).map { String(format: "%064x", $0 + 1) }
            let bulk = try client.sendBulk(alert(), to: AsyncTokens(values: tokens), apnsIDs: { APNSID(campaign: campaign, index: $0) })
            let summary = await bulk.summary()
            #expect(summary.accepted == 300)
            let ids = seen.withLock { $0 }
            #expect(ids.count == 300)
            for (index, token) in tokens.enumerated() {
                #expect(ids[token] == APNSID(campaign: campaign, index: index).description, "token \(index)")
            }
        }
    }

    @Test("A reader that takes verdicts one at a time and a batch at a time, in turn, gets each token's verdict once")
    func batchesAndSingleVerdictsMix() async throws {
        try await withAPNSClient(inProcessClient { _ in accepted }) { client in
            let tokens = (0..<2_000).map { String(format: "%064x", $0 + 1) }
            let bulk = try client.sendBulk(alert(), to: AsyncTokens(values: tokens), bufferedVerdicts: 64)
            var iterator = bulk.makeAsyncIterator()
            var indices: [Int] = []
            var batches = 0
            while true {
                // One verdict, then what is left of its batch (or the next batch) whole.
                guard let single = await iterator.next() else { break }
                indices.append(single.index)
                guard let batch = await iterator.nextBatch() else { break }
                #expect(!batch.isEmpty && batch.allSatisfy { $0 != nil }, "a batch holds verdicts only")
                indices += batch.compactMap { $0?.index }
                batches += 1
            }
            let after = await iterator.nextBatch()
            let afterSingle = await iterator.next()
            #expect(after == nil && afterSingle == nil, "the end stays the end")
            #expect(indices.sorted() == Array(0..<2_000), "each token exactly one verdict")
            #expect(batches >= 1)
            #expect(bulk.summary?.accepted == 2_000)
        }
    }

    @Test("Cancelling the task that reads the verdicts cancels the bulk send")
    func readerCancellationCancelsTheBulk() async throws {
        try await withAPNSClient(inProcessClient { _ in accepted }) { client in
        let read = Count()
        let bulk = try client.sendBulk(alert(), to: CountedTokens(limit: 100_000, read: read), bufferedVerdicts: 16)
        let reader = Task { () -> (indices: [Int], accepted: Int) in
            var indices: [Int] = []
            var accepted = 0
            for await verdict in bulk {
                withUnsafeCurrentTask { $0?.cancel() }
                indices.append(verdict.index)
                if verdict.isAccepted { accepted += 1 }
            }
            return (indices, accepted)
        }
        let (indices, acceptedCount) = await reader.value
        let summary = try #require(bulk.summary)
        #expect(acceptedCount < 100_000 && summary.stoppedReading)
        #expect(indices.sorted() == Array(0..<summary.total), "every token read has exactly one verdict")
        }
    }

    @Test("Cancelling the task waiting in summary() cancels the bulk send")
    func summaryCancellation() async throws {
        try await withAPNSClient(inProcessClient { _ in accepted }) { client in
        let read = Count()
        let bulk = try client.sendBulk(alert(), to: CountedTokens(limit: 1_000_000, read: read), bufferedVerdicts: 16)
        let waiter = Task { await bulk.summary() }
        waiter.cancel()
        let summary = await waiter.value
        #expect(summary.stoppedReading && summary.total < 1_000_000)
        }
    }

    @Test("A push stopped by a shutdown after it left is 'failed, may have been delivered', not 'not sent'")
    func stoppedAfterSendingIsNotNotSent() async throws {
        try await withAPNSClient(inProcessClient { _ in
            throw APNSTransportError(.shutdown, mayHaveBeenProcessed: true, detail: "the connection was shut down")
        }) { client in
        let bulk = try client.sendBulk(alert(), to: (0..<20).map { token($0) })
        let (verdicts, summary) = await collect(bulk, expected: 20)
        #expect(summary.failed == 20 && summary.notSent == 0)
        for verdict in verdicts {
            guard case .failed(let error) = verdict.outcome else {
                Issue.record("token \(verdict.index): \(verdict.outcome)")
                continue
            }
            #expect(error.mayHaveBeenDelivered)
        }
        do throws(APNSError) {
            _ = try await client.send(alert(), to: token(0))
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .shutdown && error.mayHaveBeenDelivered)
        }
        }
    }

    @Test("A shutdown before the request left is 'not sent'")
    func stoppedBeforeSendingIsNotSent() async throws {
        try await withAPNSClient(inProcessClient { _ in
            throw APNSTransportError(.shutdown, mayHaveBeenProcessed: false, detail: "the connection was shut down")
        }) { client in
        let (_, summary) = await collect(try client.sendBulk(alert(), to: (0..<20).map { token($0) }), expected: 20)
        #expect(summary.notSent == 20)
        }
    }

    @Test("A possibly delivered first attempt followed by 429s: the final rejection still says it may have been delivered")
    func possiblyDeliveredSurvivesRejection() async throws {
        let calls = Count()
        try await withAPNSClient(inProcessClient { _ in
            if calls.increment() == 1 {
                throw APNSTransportError(.lost, detail: "died after sending")
            }
            return APNSTransportResponse(status: 429, body: Array(#"{"reason":"TooManyRequests"}"#.utf8))
        }) { client in
        do throws(APNSError) {
            _ = try await client.send(alert(), to: token(0))
            Issue.record("accepted")
        } catch {
            #expect(error.reason == .tooManyRequests && error.mayHaveBeenDelivered && error.attempts == 3)
        }
        }
    }

    @Test("An error the transport does not describe counts as possibly delivered, in send and in bulk")
    func unknownErrorsMayHaveBeenDelivered() async throws {
        struct Opaque: Error {}
        let calls = Count()
        try await withAPNSClient(inProcessClient { _ in
            calls.increment()
            throw Opaque()
        }) { client in
        do throws(APNSError) {
            _ = try await client.send(alert(), to: token(0))
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .transport && error.mayHaveBeenDelivered && error.attempts == 3)
        }
        let (verdicts, summary) = await collect(try client.sendBulk(alert(), to: (0..<5).map { token($0) }), expected: 5)
        #expect(summary.failed == 5)
        for verdict in verdicts {
            if case .failed(let error) = verdict.outcome { #expect(error.mayHaveBeenDelivered) }
        }
        // 3 attempts each, the policy's limit: none replayed as if it had never left.
        #expect(calls.current == 3 + 5 * 3)
        }
    }
}
