internal import ForgeAPNsCore
internal import ForgeHTTP2
internal import Tracing

extension APNSClient {
    /// Sends each prepared notification to its token, the batch together through the send engine
    /// (as a bulk worker sends its batch: one task and one hand-over to the connections for all of
    /// them, not one per push), and returns the verdicts in the batch's order. Pushes of one push
    /// type and one credential go as one group; several groups go side by side.
    /// - Parameters:
    ///   - batch: the pushes, each a prepared notification and its device token.
    ///   - deadline: when to give up on each push, retries included; `configuration.timeouts.request`
    ///     from now by default.
    package func send(
        batch: [(notification: APNSPreparedNotification, token: DeviceToken)], deadline: ContinuousClock.Instant? = nil
    ) async -> [Result<APNSSendResult, APNSError>] {
        guard !batch.isEmpty else { return [] }
        let now = MonotonicInstant.now
        let deadline = MonotonicInstant.deadline(deadline, orAfter: self.configuration.timeouts.request, from: now)
        // Grouped by push type and bundle id (the route), in the batch's order.
        var groups: [GroupKey: [Int]] = [:]
        for (index, push) in batch.enumerated() {
            groups[GroupKey(pushType: push.notification.pushType, bundleID: CredentialTable.bundleID(of: push.notification)), default: []]
                .append(index)
        }
        let span = self.tracing ? self.tracer?.startSpan(ClientTracing.bulkSpan, ofKind: .client) : nil
        defer { span?.end() }
        if let span, span.isRecording, groups.count == 1, let push = batch.first {
            ClientTracing.describe(pushType: push.notification.pushType, topic: push.notification.topic.rawValue, on: span)
        }
        var verdicts = [Result<APNSSendResult, APNSError>?](repeating: nil, count: batch.count)
        if groups.count == 1, let (key, indices) = groups.first {
            for (index, verdict) in zip(indices, await self.send(group: key, indices, of: batch, deadline: deadline)) { verdicts[index] = verdict }
        } else {
            await withTaskGroup(of: ([Int], [Result<APNSSendResult, APNSError>]).self) { tasks in
                for (key, indices) in groups {
                    tasks.addTask { (indices, await self.send(group: key, indices, of: batch, deadline: deadline)) }
                }
                for await (indices, results) in tasks {
                    for (index, verdict) in zip(indices, results) { verdicts[index] = verdict }
                }
            }
        }
        let results = verdicts.map { $0 ?? .failure(APNSError(kind: .transport, mayHaveBeenDelivered: true, detail: "no outcome")) }
        if let span, span.isRecording {
            var summary = APNSBulkSummary()
            for result in results {
                switch result {
                case .success(let accepted): summary.add(.accepted(accepted))
                case .failure(let error): summary.add(APNSBulkVerdict.Outcome(error))
                }
            }
            ClientTracing.record(summary, on: span)
        }
        return results
    }

    private struct GroupKey: Hashable {
        var pushType: APNSPushType
        var bundleID: String
    }

    /// One group of ``send(batch:deadline:)``: its credential's route, then the engine.
    private func send(
        group key: GroupKey, _ indices: [Int], of batch: [(notification: APNSPreparedNotification, token: DeviceToken)], deadline: MonotonicInstant
    ) async -> [Result<APNSSendResult, APNSError>] {
        let route: CredentialRoute
        do throws(APNSError) {
            route = try self.route(forBundleID: key.bundleID)
        } catch {
            return Array(repeating: .failure(error), count: indices.count)
        }
        let requests = indices.map { batch[$0].notification.request(to: batch[$0].token) }
        return await self.execute(requests, pushType: key.pushType, route: route, deadline: deadline)
    }
}
