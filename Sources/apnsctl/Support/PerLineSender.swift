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

    /// The verdict of an entry the send stopped before it went out.
    private static let stopped = APNSBulkVerdict.Outcome.notSent(APNSError(kind: .cancelled, detail: "the send was stopped"))

    /// Queues `entry` once a slot is free; a reader cancelled while it waits records the entry as
    /// not sent, so that it still gets its one verdict.
    func submit(_ entry: TokenEntry) async {
        guard await self.slots.acquire() else {
            self.sink.record(TokenResult(token: entry.token.hexString, outcome: Self.stopped, line: entry.line))
            return
        }
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
                        outcome = Self.stopped
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
