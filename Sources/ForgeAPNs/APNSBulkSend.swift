internal import ForgeAPNsCore
internal import ForgeSupport

/// A bulk send in progress: iterate it for the verdicts (in completion order), then read
/// ``summary``; or call ``summary()`` to wait for the end without looking at verdicts.
///
/// Memory stays bounded: tokens are read as the window allows, at most a few thousand verdicts
/// wait for the reader, and the payload is encoded once.
public final class APNSBulkSend: AsyncSequence, Sendable {
    public typealias Element = APNSBulkVerdict

    let channel: VerdictChannel
    /// Set by ``cancel()``, or when the producer ends: the producer's group then ends.
    private let cancellation = OneShot<Void>()
    private let reading = ReadingSwitch()

    /// Starts `start` as a child task of the client's ``APNSClient/run()``; a client already shut
    /// down ends the bulk at once, having read no token.
    init(channel: VerdictChannel, client: APNSClient, start: @escaping @Sendable (VerdictChannel, ReadingSwitch) async -> Void) {
        self.channel = channel
        let cancellation = self.cancellation
        let reading = self.reading
        let started = client.runInBackground {
            // The producer, until it ends or the bulk send is cancelled.
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await start(channel, reading) }
                group.addTask { await cancellation.value(resolvingOnCancel: ()) }
                await group.next()
                group.cancelAll()
            }
        }
        if !started {
            channel.finish { $0.inputError = "the client is shut down: no token was read" }
        }
    }

    /// Stops sending now: tokens not sent yet get ``APNSBulkVerdict/Outcome/notSent(_:)``, and pushes
    /// in flight are given up on: they get `failed` (kind `cancelled`, may have been delivered)
    /// unless their answer is in. See ``stop()`` for the gentle way.
    public func cancel() { self.cancellation.resolve(()) }

    /// Reads no more tokens, and lets the pushes already on their way finish: each still gets its
    /// answer, retries included, within its deadline. The sequence ends once they have; the summary
    /// says that reading stopped (``APNSBulkSummary/stoppedReading``), and `total` counts the tokens read.
    public func stop() { self.reading.stop() }

    /// A bulk send nobody holds any more is cancelled, and its workers stop waiting for a reader.
    deinit {
        self.cancellation.resolve(())
        self.channel.abandon()
    }

    /// The counts, once the last verdict is out (nil before).
    public var summary: APNSBulkSummary? { self.channel.finishedSummary }

    /// The counts so far, for a progress display: every verdict the bulk send has handed out,
    /// including those still waiting to be read, counted by ``APNSBulkSummary/add(_:)``. Once the
    /// last verdict is out, this is ``summary``; before, `duration` is zero and `total` counts the
    /// verdicts so far, not the tokens read.
    public var counts: APNSBulkSummary { self.channel.counts }

    /// Waits for the end, discarding verdicts not read, and returns the counts.
    /// Cancelling the waiting task cancels the bulk send (the summary then counts what was not sent).
    public func summary() async -> APNSBulkSummary {
        await withTaskCancellationHandler {
            while await self.channel.nextBatch() != nil {}
        } onCancel: {
            self.cancel()
        }
        return self.channel.finishedSummary ?? APNSBulkSummary()
    }

    public func makeAsyncIterator() -> Iterator { Iterator(owner: self) }

    /// Reads verdicts; cancelling the reading task cancels the bulk send.
    public struct Iterator: AsyncIteratorProtocol {
        /// Keeps the bulk send alive while its verdicts are read (`for await v in try client.sendBulk(…)`
        /// holds nothing else).
        let owner: APNSBulkSend
        /// Optional so that each verdict is moved out (`take()`), not copied: a copy retains its
        /// token and its outcome's fields, and the batch releases them again later, on another thread.
        private var batch: [APNSBulkVerdict?] = []
        private var position = 0

        init(owner: APNSBulkSend) { self.owner = owner }

        public mutating func next() async -> APNSBulkVerdict? {
            if self.position == self.batch.count {
                let owner = self.owner
                let next = await withTaskCancellationHandler {
                    await owner.channel.nextBatch()
                } onCancel: {
                    owner.cancel()
                }
                guard let batch = next else { return nil }
                self.batch = batch
                self.position = 0
            }
            defer { self.position += 1 }
            return self.batch[self.position].take()
        }

        /// The verdicts not read yet of the batch at hand, or the next batch whole (at least one
        /// verdict), or `nil` at the end: for a reader that handles verdicts a batch at a time.
        package mutating func nextBatch() async -> [APNSBulkVerdict?]? {
            if self.position < self.batch.count {
                defer {
                    self.batch = []
                    self.position = 0
                }
                return self.position == 0 ? self.batch : Array(self.batch[self.position...])
            }
            let owner = self.owner
            let next = await withTaskCancellationHandler {
                await owner.channel.nextBatch()
            } onCancel: {
                owner.cancel()
            }
            self.batch = []
            self.position = 0
            return next
        }
    }
}
