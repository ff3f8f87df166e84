import ArgumentParser
import ForgeAPNs
import ForgeLiveActivities
import ForgeSupport
import ForgeTestSupport
import Foundation

// MARK: The burst

extension APNSBench.Activities {
    /// One store's round of `--burst`.
    struct BurstRound {
        var round: Int
        var kind: StoreKind
        var reports: Phase
        /// `request(update:)` calls made, and the time from the first to the end of the last.
        var requests: Int
        var requestSeconds: Double
        /// Pushes the server accepted during the burst (its own count), and those the store counts
        /// (`ActivityDelivery.sent` summed over the activities).
        var accepted: Int
        var counted: Int
        /// Of `accepted`, those accepted by the time the last request returned.
        var acceptedByLastRequest: Int
        /// From the end of the last request until no activity had a push waiting or in flight.
        var deliveredSeconds: Double
        /// Activities whose last state sent (and accepted) is the last one requested, with nothing
        /// waiting or in flight and no failure.
        var lastStateDelivered: Int
        var failed: Int
        /// This process's CPU and the machine's, from the first request until the last state was accepted.
        var cpuMicroseconds: Double
        var machineCPUMicroseconds: Double
        var peakRSSMiB: Double
        var activities: Int
        var updatesPerActivity: Int

        var pushesPerActivity: Double { Double(self.accepted) / Double(max(1, self.activities)) }
    }

    /// The content state of an activity's `step`-th request of the burst (from 0).
    static func burstState(step: Int, of steps: Int) -> DeliveryState {
        DeliveryState(status: "step \(step + 1) of \(steps)", etaMinutes: steps - step, courier: "Sam")
    }

    /// Registers every activity, then `request(update:)` each `--updates` times within `--spread`
    /// while `run()` delivers; waits until no activity has a push waiting or in flight, and checks
    /// that each one's last state sent is its last requested.
    func measureBurst(
        round: Int, kind: StoreKind, store: any LiveActivityStore, client: APNSClient, workload: Workload,
        accepted: ServerChild.AcceptedCount
    ) async throws -> BurstRound {
        let manager = LiveActivityManager(client: client, store: store)
        let reports = try await Phase.measure { try await self.apply(workload.updateTokenReports, to: manager, kind: kind) }
        let updates = self.burstUpdates
        let states = (0..<updates).map { Self.burstState(step: $0, of: updates) }
        let acceptedBefore = try await offPool { try accepted.read() }
        let cpuStart = Bench.cpuMicroseconds()
        let machineStart = Bench.machineCPUMicroseconds()
        let start = ContinuousClock.now
        let (lastRequest, acceptedByLastRequest, delivered) = try await withThrowingTaskGroup(
            of: Void.self, returning: (ContinuousClock.Instant, Int, ContinuousClock.Instant).self
        ) { group in
            group.addTask { try await manager.run() }
            let lastRequest = try await self.requestBurst(workload.ids, states: states, manager: manager, start: start, kind: kind)
            let acceptedByLastRequest = try await offPool { try accepted.read() }
            // Done when no activity has a push waiting or in flight (the store's earliest due date is none).
            let deadline = lastRequest + .seconds(120)
            while try await store.earliestDue() != nil {
                guard ContinuousClock.now < deadline else {
                    throw ValidationError("\(kind): pushes still waiting or in flight 120 s after the last request")
                }
                try await Task.sleep(for: .milliseconds(2))
            }
            let delivered = ContinuousClock.now
            group.cancelAll()
            return (lastRequest, acceptedByLastRequest, delivered)
        }
        let cpu = Bench.cpuMicroseconds() - cpuStart
        let machineCPU = Bench.machineCPUMicroseconds() - machineStart
        let acceptedAfter = try await offPool { try accepted.read() }
        // Every activity's record: the pushes it counts, and its last state.
        let last = try JSONEncoder().encode(states[updates - 1])
        let lastState = try JSONDecoder().decode(DeliveryState.self, from: last)
        var counted = 0, failed = 0, lastStateDelivered = 0, requested = 0
        for activity in try await store.activities() {
            let delivery = activity.delivery
            counted += delivery.sent
            failed += delivery.failed
            requested += delivery.requested
            let state = activity.lastContentState.flatMap { try? JSONDecoder().decode(DeliveryState.self, from: Data($0)) }
            if state == lastState, delivery.waiting == nil, delivery.inFlight == nil, delivery.failed == 0, activity.state == .active {
                lastStateDelivered += 1
            }
        }
        let requests = workload.ids.count * updates
        guard requested == requests else { throw ValidationError("\(kind): the store counts \(requested) requests of \(requests)") }
        return BurstRound(
            round: round, kind: kind, reports: reports, requests: requests, requestSeconds: Bench.seconds(lastRequest - start),
            accepted: acceptedAfter - acceptedBefore, counted: counted, acceptedByLastRequest: acceptedByLastRequest - acceptedBefore,
            deliveredSeconds: Bench.seconds(delivered - lastRequest), lastStateDelivered: lastStateDelivered, failed: failed,
            cpuMicroseconds: cpu, machineCPUMicroseconds: machineCPU, peakRSSMiB: Bench.peakRSSMiB(), activities: workload.ids.count,
            updatesPerActivity: updates
        )
    }

    /// `request(update:)` of every activity `states.count` times, from `concurrency` tasks each
    /// taking every K-th activity: the i-th request of each at `start + spread × i ÷ count` or as
    /// soon after as its task gets there. Returns when the last one returned.
    private func requestBurst(
        _ ids: [LiveActivityID], states: [DeliveryState], manager: LiveActivityManager, start: ContinuousClock.Instant, kind: StoreKind
    ) async throws -> ContinuousClock.Instant {
        let tasks = min(self.concurrency, ids.count)
        let spread = self.burstSpread
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for (step, state) in states.enumerated() {
                        let at = start + spread * (Double(step) / Double(states.count))
                        if at > .now { try await Task.sleep(until: at, clock: .continuous) }
                        for (count, index) in stride(from: task, to: ids.count, by: tasks).enumerated() {
                            do {
                                try await manager.request(update: ids[index], contentState: state)
                            } catch {
                                throw ValidationError("\(kind): request \(step + 1) of \(ids[index]) failed: \(error)")
                            }
                            // A request to the memory store never suspends: let run() and the sends in between,
                            // as requests arriving from a network would.
                            if count % 8 == 7 { await Task.yield() }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        return .now
    }
}

// MARK: Reporting the burst

extension APNSBench.Activities {
    /// The targets of `--burst`, at 30 ms for 100,000 activities.
    static let burstPushesTarget = 2.2
    static let burstDeliveredTarget = 3.0
    static let burstRSSTarget = 512.0

    private static func verdict(_ met: Bool) -> String { met ? "met" : "MISSED" }

    func reportBurst(_ round: BurstRound) {
        let activities = self.activities
        if self.json {
            var fields = [
                "\"benchmark\":\"activities_burst\"", "\"store\":\"\(round.kind.rawValue)\"", "\"round\":\(round.round)",
                "\"activities\":\(activities)", "\"updates_per_activity\":\(round.updatesPerActivity)", "\"concurrency\":\(self.concurrency)",
                "\"latency_ms\":\(Bench.format(Bench.milliseconds(self.latency ?? .zero), digits: 3))",
                "\"reports_per_s\":\(Int(round.reports.rate))",
                "\"requests\":\(round.requests)", "\"request_s\":\(Bench.format(round.requestSeconds, digits: 3))",
                "\"pushes_accepted\":\(round.accepted)", "\"pushes_counted\":\(round.counted)",
                "\"pushes_accepted_by_last_request\":\(round.acceptedByLastRequest)",
                "\"pushes_per_activity\":\(Bench.format(round.pushesPerActivity, digits: 3))",
                "\"delivered_after_last_request_s\":\(Bench.format(round.deliveredSeconds, digits: 3))",
                "\"last_state_delivered\":\(round.lastStateDelivered)", "\"failed\":\(round.failed)",
                "\"cpu_us_per_push\":\(Bench.format(round.cpuMicroseconds / Double(max(1, round.accepted))))",
                "\"machine_cpu_us_per_push\":\(Bench.format(round.machineCPUMicroseconds / Double(max(1, round.accepted))))",
                "\"peak_rss_mib\":\(Bench.format(round.peakRSSMiB, digits: 1))",
            ]
            if round.kind == .postgres { fields.append("\"connections\":\(self.connections)") }
            if round.kind == .sqlite { fields.append("\"sqlite_durability\":\"\(self.sqliteDurability.rawValue)\"") }
            print("{" + fields.joined(separator: ",") + "}")
            return
        }
        print("\(self.name(round.kind)), round \(round.round), burst (\(self.storeNote)):")
        print(String(format: "  reports:     %9.0f/s  (%.2f s)", round.reports.rate, round.reports.seconds))
        print(String(format: "  requests:    %d (%d an activity) in %.3f s", round.requests, round.updatesPerActivity, round.requestSeconds))
        print(
            String(format: "  pushes:      %d accepted by the server, %d counted by the store (%d by the last request): %.3f an activity",
                   round.accepted, round.counted, round.acceptedByLastRequest, round.pushesPerActivity)
                + String(format: "; target ≤ %.1f: ", Self.burstPushesTarget)
                + Self.verdict(round.pushesPerActivity <= Self.burstPushesTarget && round.accepted == round.counted)
        )
        print(
            String(format: "  delivered:   every last state %.3f s after the last request; target ≤ %.0f s: ", round.deliveredSeconds, Self.burstDeliveredTarget)
                + Self.verdict(round.deliveredSeconds <= Self.burstDeliveredTarget)
        )
        print(
            "  last state:  \(round.lastStateDelivered) of \(activities) activities sent their last requested state, nothing waiting or in flight"
                + " (\(round.failed) failed): " + Self.verdict(round.lastStateDelivered == activities && round.failed == 0)
        )
        print(
            String(format: "  CPU:         %.2f µs a push, this process; machine %.2f µs", round.cpuMicroseconds / Double(max(1, round.accepted)),
                   round.machineCPUMicroseconds / Double(max(1, round.accepted)))
        )
        print(String(format: "  peak RSS:    %.0f MiB; target ≤ %.0f MiB: ", round.peakRSSMiB, Self.burstRSSTarget) + Self.verdict(round.peakRSSMiB <= Self.burstRSSTarget))
    }

    func reportBurstMedians(_ kind: StoreKind, _ rounds: [BurstRound]) {
        let pushes = Bench.median(rounds.map(\.pushesPerActivity)), delivered = Bench.median(rounds.map(\.deliveredSeconds))
        let rss = rounds.map(\.peakRSSMiB).max() ?? 0
        let allLast = rounds.allSatisfy { $0.lastStateDelivered == self.activities && $0.failed == 0 && $0.accepted == $0.counted }
        if self.json {
            let fields = [
                "\"benchmark\":\"activities_burst\"", "\"store\":\"\(kind.rawValue)\"", "\"median\":true", "\"rounds\":\(rounds.count)",
                "\"activities\":\(self.activities)", "\"pushes_per_activity\":\(Bench.format(pushes, digits: 3))",
                "\"delivered_after_last_request_s\":\(Bench.format(delivered, digits: 3))", "\"peak_rss_mib\":\(Bench.format(rss, digits: 1))",
                "\"every_last_state_delivered\":\(allLast)",
            ]
            print("{" + fields.joined(separator: ",") + "}")
            return
        }
        print("\(self.name(kind)), burst, median of \(rounds.count) round(s) (\(self.storeNote)):")
        print(String(format: "  pushes %.3f an activity; target ≤ %.1f: ", pushes, Self.burstPushesTarget) + Self.verdict(pushes <= Self.burstPushesTarget))
        print(String(format: "  last state delivered %.3f s after the last request; target ≤ %.0f s: ", delivered, Self.burstDeliveredTarget)
            + Self.verdict(delivered <= Self.burstDeliveredTarget))
        print("  every activity's last state sent last, every round: " + Self.verdict(allLast))
        print(String(format: "  peak RSS %.0f MiB (the largest); target ≤ %.0f MiB: ", rss, Self.burstRSSTarget) + Self.verdict(rss <= Self.burstRSSTarget))
    }
}
