internal import ForgeAPNsCore
internal import ForgeHTTP2
internal import ForgeSupport
internal import Logging
internal import Tracing

extension APNSClient {
    /// The most tokens a bulk worker sends together (one wake-up of the connection and one of the
    /// worker per batch).
    static let maximumBulkBatch = 64

    /// The batch each of `workers` bulk workers takes now: the window shared by at least four, so
    /// `workers` batches never exceed it whenever the workers were started; at most what one
    /// connection offers, so a batch never waits for streams on its connection.
    func bulkBatch(workers: Int, capacity: APNSTransportCapacity) -> Int {
        max(1, min(Self.maximumBulkBatch, capacity.batch, capacity.window / max(4, workers)))
    }

    /// How many workers fill the window now, each with one batch in flight. The window follows the
    /// transport: the open connections' streams, and one connection's worth more while the pool may
    /// grow, so that work waits and the pool opens the next connection.
    func bulkWorkersWanted(capacity: APNSTransportCapacity) -> Int {
        max(1, capacity.window / self.bulkBatch(workers: 4, capacity: capacity))
    }

    /// Sends `notification` to every token of `tokens` (read lazily), as many at once as the
    /// pool's open streams allow, and reports one verdict per token.
    /// - Throws: ``APNSError`` of kind `invalidNotification` before anything is sent, when the
    ///   notification breaks a rule.
    /// - Parameters:
    ///   - notification: what every token gets; validated and encoded once.
    ///   - tokens: the device tokens.
    ///   - deadline: when to give up on each push, retries included; `configuration.timeouts.request`
    ///     from its start by default.
    ///   - bufferedVerdicts: verdicts that may wait for the reader before sending pauses.
    ///   - apnsIDs: the `apns-id` of the token at each index, for sends that may be repeated (see
    ///     `APNSID(campaign:index:)`); by default the notification's own, or APNs' choice.
    public func sendBulk<Tokens: AsyncSequence & Sendable>(
        _ notification: some APNSNotification, to tokens: Tokens, deadline: ContinuousClock.Instant? = nil,
        bufferedVerdicts: Int = 2048, apnsIDs: (@Sendable (_ index: Int) -> APNSID)? = nil
    ) throws(APNSError) -> APNSBulkSend where Tokens.Element == DeviceToken {
        self.sendBulk(try Self.prepareForBulk(notification), to: tokens, deadline: deadline, bufferedVerdicts: bufferedVerdicts, apnsIDs: apnsIDs)
    }

    /// Sends `notification` to every token of `tokens`, hex strings read lazily: each is parsed
    /// once, as it is read, and one that is not a device token gets a `rejected` verdict (it is
    /// not sent). Otherwise as with a sequence of device tokens.
    /// - Parameters:
    ///   - notification: what every token gets; validated and encoded once.
    ///   - tokens: the device tokens, as hex strings.
    ///   - deadline: when to give up on each push, retries included.
    ///   - bufferedVerdicts: verdicts that may wait for the reader before sending pauses.
    ///   - apnsIDs: the `apns-id` of the token at each index.
    public func sendBulk<Tokens: AsyncSequence & Sendable>(
        _ notification: some APNSNotification, to tokens: Tokens, deadline: ContinuousClock.Instant? = nil,
        bufferedVerdicts: Int = 2048, apnsIDs: (@Sendable (_ index: Int) -> APNSID)? = nil
    ) throws(APNSError) -> APNSBulkSend where Tokens.Element == String {
        self.sendBulk(try Self.prepareForBulk(notification), to: tokens, deadline: deadline, bufferedVerdicts: bufferedVerdicts, apnsIDs: apnsIDs)
    }

    /// Sends an already prepared notification (validated and encoded once) to every token of `tokens`.
    /// - Parameters:
    ///   - prepared: what every token gets.
    ///   - tokens: the device tokens.
    ///   - deadline: when to give up on each push, retries included.
    ///   - bufferedVerdicts: verdicts that may wait for the reader before sending pauses.
    ///   - apnsIDs: the `apns-id` of the token at each index.
    public func sendBulk<Tokens: AsyncSequence & Sendable>(
        _ prepared: APNSPreparedNotification, to tokens: Tokens, deadline: ContinuousClock.Instant? = nil,
        bufferedVerdicts: Int = 2048, apnsIDs: (@Sendable (_ index: Int) -> APNSID)? = nil
    ) -> APNSBulkSend where Tokens.Element == DeviceToken {
        self.startBulk(prepared, bufferedVerdicts: bufferedVerdicts) { reading in
            TokenFeed(tokens.makeAsyncIterator(), reading: reading) { .valid($0) }
        } run: { feed, channel, context in
            await self.runBulk(prepared, feed: feed, deadline: deadline, apnsIDs: apnsIDs, channel: channel, context: context)
        }
    }

    /// Sends an already prepared notification to every token of `tokens`, hex strings parsed once
    /// each as they are read.
    /// - Parameters:
    ///   - prepared: what every token gets.
    ///   - tokens: the device tokens, as hex strings.
    ///   - deadline: when to give up on each push, retries included.
    ///   - bufferedVerdicts: verdicts that may wait for the reader before sending pauses.
    ///   - apnsIDs: the `apns-id` of the token at each index.
    public func sendBulk<Tokens: AsyncSequence & Sendable>(
        _ prepared: APNSPreparedNotification, to tokens: Tokens, deadline: ContinuousClock.Instant? = nil,
        bufferedVerdicts: Int = 2048, apnsIDs: (@Sendable (_ index: Int) -> APNSID)? = nil
    ) -> APNSBulkSend where Tokens.Element == String {
        self.startBulk(prepared, bufferedVerdicts: bufferedVerdicts) { reading in
            TokenFeed(tokens.makeAsyncIterator(), reading: reading, read: BulkToken.init(parsing:))
        } run: { feed, channel, context in
            await self.runBulk(prepared, feed: feed, deadline: deadline, apnsIDs: apnsIDs, channel: channel, context: context)
        }
    }

    /// Sends `notification` to an array of tokens.
    /// - Parameters:
    ///   - notification: what every token gets.
    ///   - tokens: the device tokens.
    ///   - deadline: when to give up on each push, retries included.
    public func sendBulk(
        _ notification: some APNSNotification, to tokens: [DeviceToken], deadline: ContinuousClock.Instant? = nil
    ) throws(APNSError) -> APNSBulkSend {
        try self.sendBulk(notification, to: TokenList(tokens: tokens), deadline: deadline)
    }

    /// Sends an already prepared notification to an array of tokens.
    /// - Parameters:
    ///   - prepared: what every token gets.
    ///   - tokens: the device tokens.
    ///   - deadline: when to give up on each push, retries included.
    public func sendBulk(
        _ prepared: APNSPreparedNotification, to tokens: [DeviceToken], deadline: ContinuousClock.Instant? = nil
    ) -> APNSBulkSend {
        self.sendBulk(prepared, to: TokenList(tokens: tokens), deadline: deadline)
    }

    private static func prepareForBulk(_ notification: some APNSNotification) throws(APNSError) -> APNSPreparedNotification {
        do throws(APNSValidationError) {
            return try notification.prepared()
        } catch {
            throw APNSError(kind: .invalidNotification, detail: "\(error.field) \(error.rule)")
        }
    }

    /// The bulk send's handle, its producer started under the client's `run()`: the feed made
    /// from the reading switch, then `run` over it.
    private func startBulk(
        _ prepared: APNSPreparedNotification, bufferedVerdicts: Int, feed makeFeed: @escaping @Sendable (ReadingSwitch) -> TokenFeed,
        run: @escaping @Sendable (TokenFeed, VerdictChannel, ServiceContext) async -> Void
    ) -> APNSBulkSend {
        // The bulk's span is a child of the caller's span, though its work runs under the client's run().
        let context = self.tracer == nil ? .topLevel : ServiceContext.current ?? .topLevel
        return APNSBulkSend(channel: VerdictChannel(capacity: max(1, bufferedVerdicts)), client: self) { channel, reading in
            await run(makeFeed(reading), channel, context)
        }
    }

    private func runBulk(
        _ prepared: APNSPreparedNotification, feed: TokenFeed, deadline: ContinuousClock.Instant?,
        apnsIDs: (@Sendable (Int) -> APNSID)?, channel: VerdictChannel, context: ServiceContext
    ) async {
        // One span for the whole bulk, none per push: a million tokens make one span.
        let span = self.tracer?.startSpan(ClientTracing.bulkSpan, context: context, ofKind: .client)
        defer { span?.end() }
        if let span, span.isRecording { ClientTracing.describe(pushType: prepared.pushType, topic: prepared.topic.rawValue, on: span) }
        // Converted once, here: below the public API the send path keeps the I/O threads' clock.
        let deadline = deadline.map(MonotonicInstant.init)
        // Workers, not a task per token: each worker takes a few tokens at a time from the shared
        // feed, sends them one by one and hands each verdict over, so a token costs no task
        // creation and no wake-up of a coordinator. More workers start as the pool's open streams
        // grow (one until the first push succeeds, then the server's limit), up to the cap.
        // One topic, one credential: its pool sizes the workers. With none serving the topic, every
        // token is rejected unsent (one worker is enough for that).
        let route: Result<CredentialRoute, APNSError>
        do throws(APNSError) {
            route = .success(try self.route(forBundleID: CredentialTable.bundleID(of: prepared)))
        } catch {
            route = .failure(error)
        }
        let started = MonotonicInstant.now
        // Workers are only ever added; each sizes its next batch by how many there are now.
        let workers = LockedBox(0)
        await withTaskGroup(of: Void.self) { group in
            func spawn() {
                workers.withLock { $0 += 1 }
                group.addTask {
                    await self.bulkWorker(
                        prepared, route: route, feed: feed, workers: workers, deadline: deadline, apnsIDs: apnsIDs, channel: channel
                    )
                }
            }
            spawn()
            while await feed.waitForProgress() {
                // Requests in flight follow the pool's open streams, up to the cap; a worker keeps a batch in flight.
                guard case .success(let route) = route else { continue }
                let wanted = self.bulkWorkersWanted(capacity: route.transport.capacity)
                while workers.withLock({ $0 }) < wanted { spawn() }
            }
        }
        // Every token read has had its verdict counted by the channel: its tally's total is the tokens read.
        let summary = channel.finish { summary in
            assert(summary.total == feed.taken, "every token read has exactly one verdict")
            summary.inputError = feed.inputError
            summary.stoppedReading = feed.stoppedReading
            summary.duration = started.duration(to: .now)
        }
        ((try? route.get())?.logger ?? self.logger).info("bulk send finished", metadata: [
            "apns.push_type": "\(prepared.pushType)", "apns.total": "\(summary.total)", "apns.accepted": "\(summary.accepted)",
            "apns.rejected": "\(summary.rejectedCount)", "apns.failed": "\(summary.failed)", "apns.not_sent": "\(summary.notSent)",
        ])
        if let span, span.isRecording { ClientTracing.record(summary, on: span) }
    }

    /// Sends the feed's tokens in batches (``bulkBatch(workers:capacity:)``) through the send engine,
    /// which owns retries, replays and provider-token renewal: a bulk send is batching, nothing more.
    private func bulkWorker(
        _ prepared: APNSPreparedNotification, route: Result<CredentialRoute, APNSError>, feed: TokenFeed, workers: LockedBox<Int>,
        deadline: MonotonicInstant?, apnsIDs: (@Sendable (Int) -> APNSID)?, channel: VerdictChannel
    ) async {
        func batchSize() -> Int {
            guard case .success(let route) = route else { return Self.maximumBulkBatch }
            return self.bulkBatch(workers: workers.withLock { $0 }, capacity: route.transport.capacity)
        }
        while let batch = await feed.take(batchSize()) {
            var outcomes = [APNSBulkVerdict.Outcome?](repeating: nil, count: batch.count)
            var requests: [APNSHTTPRequest] = []
            var slots: [Int] = []
            requests.reserveCapacity(batch.count)
            slots.reserveCapacity(batch.count)
            for (slot, item) in batch.enumerated() {
                if Task.isCancelled {
                    outcomes[slot] = .notSent(APNSError(kind: .cancelled, detail: "the bulk send was cancelled"))
                    continue
                }
                switch item.1 {
                case .valid(let token):
                    requests.append(prepared.request(to: token, apnsID: apnsIDs?(item.0)))
                    slots.append(slot)
                case .invalid(_, let error):
                    outcomes[slot] = .rejected(APNSError(kind: .invalidNotification, detail: "\(error.field) \(error.rule)"))
                }
            }
            if !requests.isEmpty {
                let results: [Result<APNSSendResult, APNSError>]
                switch route {
                case .success(let route):
                    results = await self.execute(
                        requests, pushType: prepared.pushType, route: route,
                        deadline: deadline ?? MonotonicInstant.now + self.configuration.timeouts.request
                    )
                case .failure(let error):
                    results = Array(repeating: .failure(error), count: requests.count)
                }
                for (position, slot) in slots.enumerated() {
                    switch results[position] {
                    case .success(let result): outcomes[slot] = .accepted(result)
                    case .failure(let error): outcomes[slot] = APNSBulkVerdict.Outcome(error)
                    }
                }
            }
            // Counted and handed over once per batch, under one lock, not one per token.
            var verdicts: [APNSBulkVerdict?] = []
            verdicts.reserveCapacity(batch.count)
            var counts = APNSBulkSummary()
            for (slot, item) in batch.enumerated() {
                let outcome = outcomes[slot].take() ?? .failed(APNSError(kind: .transport, mayHaveBeenDelivered: true, detail: "no outcome"))
                counts.add(outcome)
                verdicts.append(APNSBulkVerdict(token: item.1.text, index: item.0, outcome: outcome))
            }
            await channel.send(verdicts, counts: counts)
        }
    }
}
