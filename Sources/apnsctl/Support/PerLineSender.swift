import ForgeAPNs
import ForgeAPNsCore
import ForgeSupport
import Synchronization

/// Sends the lines of a tokens file that carry their own payload, each with `client.send`, at most
/// `width` at a time: the file reader waits for a free slot, so memory stays bounded.
final class PerLineSender: Sendable {
    private let client: APNSClient
    private let sink: ResultSink
    private let slots: AsyncSemaphore
    private let stream: AsyncStream<TokenEntry>
    private let continuation: AsyncStream<TokenEntry>.Continuation
    private let stopped = Atomic<Bool>(false)
    /// `true` once abandoned (a second Ctrl-C), `false` once the sends ended: whichever is first.
    private let abandonment = OneShot<Bool>()

    init(client: APNSClient, width: Int, sink: ResultSink) {
        self.client = client
        self.sink = sink
        self.slots = AsyncSemaphore(max(1, width))
        (self.stream, self.continuation) = AsyncStream.makeStream(of: TokenEntry.self)
    }

    /// Queues `entry` once a slot is free.
    func submit(_ entry: TokenEntry) async {
        await self.slots.acquire()
        self.continuation.yield(entry)
    }

    /// No more entries will come.
    func finish() { self.continuation.finish() }

    /// Entries not started yet are reported as not sent; those on their way still get answers.
    func stop() { self.stopped.store(true, ordering: .relaxed) }

    /// Cancels the sends on their way: each is reported with what is known of it.
    func abandon() { self.abandonment.resolve(true) }

    /// Sends every queued entry until ``finish()``, or until ``abandon()`` cancels them.
    func run() async {
        // A child that throws cancels the whole group: the tripwire's child throws when tripped.
        try? await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                if await self.abandonment.value { throw CancellationError() }
            }
            defer { self.abandonment.resolve(false) }
            for await entry in self.stream {
                group.addTask {
                    let outcome: APNSBulkVerdict.Outcome
                    if self.stopped.load(ordering: .relaxed) || entry.notification == nil {
                        outcome = .notSent(APNSError(kind: .cancelled, detail: "the send was stopped"))
                    } else {
                        do throws(APNSError) {
                            outcome = .accepted(try await self.client.send(entry.notification!, to: entry.token))
                        } catch {
                            outcome = APNSBulkVerdict.Outcome(error)
                        }
                    }
                    self.sink.record(TokenResult(token: entry.token.hexString, outcome: outcome, line: entry.line))
                    self.slots.release()
                }
            }
        }
    }
}

/// A counting semaphore for async code.
final class AsyncSemaphore: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: LockedBox<State>

    init(_ count: Int) { self.state = LockedBox(State(available: count)) }

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = self.state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func release() {
        let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        waiter?.resume()
    }
}
