import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeLiveActivities
import ForgeSupport
import Foundation

extension APNSBench {
    /// Managed Live Activities: reports applied per second, and `update` of every activity against
    /// `sendBulk` of the same pushes.
    struct Activities: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure LiveActivityManager on each store: reports applied per second, update of every activity against sendBulk, and (--burst) requested updates coalesced.",
            discussion: """
                Each round, for each store, makes a fresh store (a new SQLite file in a temporary folder; a new \
                database in a PostgreSQL cluster started for the run on 127.0.0.1, the client with --connections \
                connections) and a LiveActivityManager on it, with a client of the local APNs server (child \
                process, TLS; with --latency every answer is held that long). Then:

                reports: N update-token reports from K tasks (--concurrency), each registering an activity the app \
                started itself (bundle id, attributes type, installation); with --push-to-start, N push-to-start \
                token reports as well. Every report must apply. Prints reports/s and the CPU per report (this \
                process's; the PostgreSQL server's is not counted).

                update: manager.update of all N activities from K tasks, one call each; then the bulk update, \
                manager.update(activities:) of all N in chunks of --chunk ids, 4 chunks at once; and sendBulk of the \
                same pushes (a Live Activity update with the same content state, to the same tokens), the order \
                of the bulk update and sendBulk alternating between rounds (odd rounds update first). Every push \
                must be accepted. Before them, the store alone: its part of the bulk update \
                (applyContentUpdate of all N, a chunk at a time, nothing sent). Prints the rates, the CPU per push \
                (this process's, and the whole machine's: the server child and PostgreSQL share its cores) and the \
                ratios to sendBulk, per round and as medians.

                The product's targets, checked on the medians: reports >= 10,000/s on SQLite and >= 5,000/s on \
                PostgreSQL with 4 connections, for 100,000 activities; the bulk update >= 0.8x sendBulk's rate at 0 ms.

                --burst measures the requested, coalesced updates instead (request(update:) and run()): after the \
                reports, each activity gets --updates requests (10) with a new content state each, the i-th of every \
                activity at i × --spread ÷ --updates (1 s) after the start, from K tasks, while manager.run() \
                delivers in the same task group; the server child holds each answer --latency. It prints the pushes \
                the server accepted an activity (its own count, checked against the store's ActivityDelivery.sent), \
                the time from the end of the last request until no activity has a push waiting or in flight, whether \
                every activity's last state sent is its last requested, and the peak RSS. The targets (30 ms, 100,000 \
                activities): at most 2.2 pushes an activity, every last state within 3 s of the last request, peak RSS \
                at most 512 MiB. The store is memory unless --store says otherwise.

                The PostgreSQL cluster runs with fsync off, as the tests' (ForgeTestSupport's PostgresProcess). \
                The SQLite file is on the temporary folder's disk, with the store's default durability (full: an \
                fsync per save, so the disk's fsync rate bounds the rates) unless --sqlite-durability normal. \
                PostgreSQL needs Debian's postgresql package (make deps).

                Examples:
                  swift run -c release apns-bench activities --activities 20000 --store sqlite
                  swift run -c release apns-bench activities --store sqlite --sqlite-durability normal --rounds 3
                  swift run -c release apns-bench activities --store sqlite --store postgres --rounds 3
                  swift run -c release apns-bench activities --store all --concurrency 100 --connections 4 --push-to-start
                  swift run -c release apns-bench activities --activities 10000 --store memory --latency 30ms
                  swift run -c release apns-bench activities --burst --latency 30ms --rounds 3
                  swift run -c release apns-bench activities --burst --latency 30ms --store sqlite --store postgres
                """
        )

        @Option(name: .long, help: "Activities to register, then update.")
        var activities = 100_000

        @Option(name: .long, help: "A store to measure: memory, sqlite, postgres or all; repeat for several (default: sqlite; memory with --burst).")
        var store: [StoreKind] = []

        @Option(name: .customLong("sqlite-durability"), help: "The SQLite store's durability: full (its default, an fsync per save) or normal.")
        var sqliteDurability: SQLiteDurability = .full

        @Option(name: .long, help: "The PostgreSQL client's connections.")
        var connections = 4

        @Option(name: .long, help: "Rounds, each with a fresh store.")
        var rounds = 1

        @Option(name: .long, help: "Tasks that apply reports, or call update, at once.")
        var concurrency = 100

        @Option(name: .long, help: "Activities per call of the bulk update.")
        var chunk = 5_000

        @Flag(name: .customLong("no-single-updates"), help: "Skip the update of one call per activity (for a profile of the bulk update).")
        var noSingleUpdates = false

        @Flag(name: .customLong("push-to-start"), help: "Also apply N push-to-start token reports in each round.")
        var pushToStart = false

        @Option(
            help: ArgumentHelp("Hold each answer of the local server this long: 30ms, 0.03s, 250us (default: 0).", valueName: "duration"),
            transform: { try CommandLineDuration.parse($0) }
        )
        var latency: Duration?

        @Flag(name: .long, help: "Also measure a group update: every activity is a member of one group, updated with one request and delivered by deliverDue.")
        var group = false

        @Flag(name: .long, help: "Measure a burst of requested updates delivered by run(), instead of the update phases.")
        var burst = false

        @Option(name: .long, help: "With --burst: requests of each activity, each with a new content state (default: 10).")
        var updates: Int?

        @Option(
            help: ArgumentHelp("With --burst: the time over which each activity's requests start (default: 1s).", valueName: "duration"),
            transform: { try CommandLineDuration.parse($0) }
        )
        var spread: Duration?

        @Flag(name: .long, help: "Print one JSON object per store and round, then one per store with the medians.")
        var json = false

        func validate() throws {
            guard self.activities >= 1 else { throw ValidationError("--activities must be at least 1.") }
            guard self.rounds >= 1 else { throw ValidationError("--rounds must be at least 1.") }
            guard self.concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1.") }
            guard self.connections >= 1 else { throw ValidationError("--connections must be at least 1.") }
            guard self.chunk >= 1 else { throw ValidationError("--chunk must be at least 1.") }
            if self.burst {
                guard !self.pushToStart else { throw ValidationError("--push-to-start does not go with --burst.") }
                guard !self.noSingleUpdates else { throw ValidationError("--no-single-updates does not go with --burst.") }
                guard !self.group else { throw ValidationError("--group does not go with --burst.") }
                guard (self.updates ?? 1) >= 1 else { throw ValidationError("--updates must be at least 1.") }
            } else {
                guard self.updates == nil else { throw ValidationError("--updates goes with --burst.") }
                guard self.spread == nil else { throw ValidationError("--spread goes with --burst.") }
            }
        }

        /// `--updates`, or its default.
        var burstUpdates: Int { self.updates ?? 10 }
        /// `--spread`, or its default.
        var burstSpread: Duration { self.spread ?? .seconds(1) }

        /// The stores to measure, each once, in the order of `StoreKind`.
        var kinds: [StoreKind] {
            let chosen = Set((self.store.isEmpty ? [self.burst ? .memory : .sqlite] : self.store).flatMap(\.kinds))
            return StoreKind.allCases.filter { chosen.contains($0) }
        }

        func run() async throws {
            Bench.warnIfDebug()
            let kinds = self.kinds
            let factory = try await StoreFactory.make(
                postgres: kinds.contains(.postgres), connections: self.connections, sqliteDurability: self.sqliteDurability
            )
            defer { factory.remove() }
            let (child, port, accepted) = try ServerChild.startCounting(["apns-server"] + ServerChild.latencyArguments(self.latency))
            defer { child.terminate() }
            let workload = try Workload(count: self.activities, pushToStart: self.pushToStart)
            try await withAPNSClient(configuration: try ServerChild.clientConfiguration(port: port)) { client in
                // Warm-up: connections, the stream limit, the allocator; tokens no round uses.
                let warmUp = try client.sendBulk(workload.notification(), to: (0..<2000).map { GeneratedTokens.token((1 << 40) + $0) })
                let warmed = await warmUp.summary()
                guard warmed.accepted == warmed.total else { throw ValidationError("the warm-up was not accepted: \(warmed)") }
                if self.burst {
                    var results: [StoreKind: [BurstRound]] = [:]
                    for round in 1...self.rounds {
                        for kind in kinds {
                            let measured = try await factory.withFreshStore(kind, name: "bench_\(getpid())_\(round)") { store in
                                try await self.measureBurst(
                                    round: round, kind: kind, store: store, client: client, workload: workload, accepted: accepted
                                )
                            }
                            results[kind, default: []].append(measured)
                            self.reportBurst(measured)
                        }
                    }
                    for kind in kinds { self.reportBurstMedians(kind, results[kind] ?? []) }
                    return
                }
                var results: [StoreKind: [Round]] = [:]
                for round in 1...self.rounds {
                    for kind in kinds {
                        let measured = try await factory.withFreshStore(kind, name: "bench_\(getpid())_\(round)") { store in
                            try await self.measure(round: round, kind: kind, store: store, client: client, workload: workload)
                        }
                        results[kind, default: []].append(measured)
                        self.report(measured)
                    }
                }
                for kind in kinds { self.reportMedians(kind, results[kind] ?? []) }
            }
        }
    }
}

// MARK: The workload

extension APNSBench.Activities {
    /// The content state every update sends.
    struct DeliveryState: Codable, Hashable, Sendable {
        var status: String
        var etaMinutes: Int
        var courier: String
    }

    /// What every round sends and reports, made before any clock starts: an application holds its
    /// ids and tokens already.
    struct Workload: Sendable {
        static let bundleID = try! APNSBundleID("com.example.forgepush")
        static let attributesType = "DeliveryAttributes"
        static let contentState = DeliveryState(status: "on the way", etaMinutes: 12, courier: "Sam")
        /// The group every activity joins through its report.
        static let group = try! LiveActivityGroupID("bench-group")

        var ids: [LiveActivityID]
        var tokens: [DeviceToken]
        var updateTokenReports: [ActivityReport]
        var pushToStartReports: [ActivityReport]

        /// - Parameter pushToStart: whether to make the push-to-start reports too (`[]` otherwise).
        init(count: Int, pushToStart: Bool) throws {
            self.ids = try (0..<count).map { index throws(LiveActivityError) in try LiveActivityID("activity-\(index)") }
            self.tokens = (0..<count).map { GeneratedTokens.token($0) }
            var updateTokenReports: [ActivityReport] = []
            var pushToStartReports: [ActivityReport] = []
            updateTokenReports.reserveCapacity(count)
            if pushToStart { pushToStartReports.reserveCapacity(count) }
            for index in 0..<count {
                let installation = try InstallationID("installation-\(index)")
                let registration = try ActivityReport.Registration(
                    bundleID: Self.bundleID, attributesType: Self.attributesType, installation: installation, group: Self.group
                )
                updateTokenReports.append(.updateToken(self.ids[index], token: self.tokens[index], sequence: 1, registration: registration))
                guard pushToStart else { continue }
                pushToStartReports.append(
                    .pushToStartToken(
                        PushToStartKey(installation: installation, bundleID: Self.bundleID, attributesType: Self.attributesType),
                        token: GeneratedTokens.token((1 << 32) + index), sequence: 1, environment: .production
                    )
                )
            }
            self.updateTokenReports = updateTokenReports
            self.pushToStartReports = pushToStartReports
        }

        /// The push `update` sends, as sendBulk sends it: a Live Activity update with the same content state.
        func notification() -> APNSLiveActivityNotification<DeliveryState> {
            APNSLiveActivityNotification(event: .update, contentState: Self.contentState, timestamp: Date(), topic: Self.bundleID)
        }
    }
}

// MARK: Measuring

extension APNSBench.Activities {
    /// One timed phase: how many operations, the wall time, this process's CPU and the whole
    /// machine's (this process, the server child, PostgreSQL's processes, anything else running).
    struct Phase {
        var operations: Int
        var seconds: Double
        var cpuMicroseconds: Double
        var machineCPUMicroseconds: Double

        var rate: Double { Double(self.operations) / self.seconds }
        var cpuPerOperation: Double { self.cpuMicroseconds / Double(self.operations) }
        var machineCPUPerOperation: Double { self.machineCPUMicroseconds / Double(self.operations) }

        /// Times `body`, which returns how many operations it did.
        static func measure(_ body: () async throws -> Int) async rethrows -> Phase {
            let cpuStart = Bench.cpuMicroseconds()
            let machineStart = Bench.machineCPUMicroseconds()
            let start = ContinuousClock.now
            let operations = try await body()
            return Phase(
                operations: operations, seconds: Bench.seconds(.now - start), cpuMicroseconds: Bench.cpuMicroseconds() - cpuStart,
                machineCPUMicroseconds: Bench.machineCPUMicroseconds() - machineStart
            )
        }
    }

    /// One store's round.
    struct Round {
        var round: Int
        var kind: StoreKind
        var reports: Phase
        var pushToStart: Phase?
        /// `nil` with `--no-single-updates`.
        var update: Phase?
        var bulkUpdate: Phase
        /// The store's part of the bulk update alone: applyContentUpdate of every activity, a chunk at a time.
        var storeAlone: Phase
        var bulk: Phase
        var updateFirst: Bool
        /// With `--group`: one group update of every activity, requested and delivered.
        var groupUpdate: Phase?

        var groupRatio: Double? { self.groupUpdate.map { $0.rate / self.bulk.rate } }

        var ratio: Double? { self.update.map { $0.rate / self.bulk.rate } }
        var bulkRatio: Double { self.bulkUpdate.rate / self.bulk.rate }
    }

    private func measure(round: Int, kind: StoreKind, store: any LiveActivityStore, client: APNSClient, workload: Workload) async throws -> Round {
        let manager = LiveActivityManager(client: client, store: store)
        let reports = try await Phase.measure { try await self.apply(workload.updateTokenReports, to: manager, kind: kind) }
        let pushToStart = self.pushToStart
            ? try await Phase.measure { try await self.apply(workload.pushToStartReports, to: manager, kind: kind) } : nil
        // Odd rounds update first, even rounds send in bulk first: for a machine whose speed varies.
        let updateFirst = round % 2 == 1
        var bulk: Phase?
        let update = self.noSingleUpdates ? nil : try await Phase.measure { try await self.update(workload, manager: manager, kind: kind) }
        let storeAlone = try await Phase.measure { try await self.applyContentUpdate(workload, store: store, kind: kind) }
        if !updateFirst { bulk = try await Phase.measure { try await self.sendBulk(workload, client: client) } }
        let bulkUpdate = try await Phase.measure { try await self.bulkUpdate(workload, manager: manager, kind: kind) }
        if updateFirst { bulk = try await Phase.measure { try await self.sendBulk(workload, client: client) } }
        let groupUpdate = self.group ? try await Phase.measure { try await self.groupUpdate(workload, manager: manager, kind: kind) } : nil
        return Round(
            round: round, kind: kind, reports: reports, pushToStart: pushToStart, update: update, bulkUpdate: bulkUpdate, storeAlone: storeAlone, bulk: bulk!,
            updateFirst: updateFirst, groupUpdate: groupUpdate
        )
    }

    /// Applies every report from `concurrency` tasks, each taking every K-th; all must apply.
    func apply(_ reports: [ActivityReport], to manager: LiveActivityManager, kind: StoreKind) async throws -> Int {
        let tasks = min(self.concurrency, reports.count)
        let applied = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var applied = 0
                    for index in stride(from: task, to: reports.count, by: tasks) {
                        let outcome = try await manager.report(reports[index])
                        guard outcome.applied else {
                            throw ValidationError("\(kind): report \(index) was not applied: \(outcome.why ?? "no reason given")")
                        }
                        applied += 1
                    }
                    return applied
                }
            }
            return try await group.reduce(0, +)
        }
        guard applied == reports.count else { throw ValidationError("\(kind): \(applied) of \(reports.count) reports applied") }
        return applied
    }

    /// `manager.update` of every activity from `concurrency` tasks; every push must be sent and accepted.
    private func update(_ workload: Workload, manager: LiveActivityManager, kind: StoreKind) async throws -> Int {
        let ids = workload.ids
        let tasks = min(self.concurrency, ids.count)
        let sent = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var sent = 0
                    for index in stride(from: task, to: ids.count, by: tasks) {
                        let outcome: LiveActivityManager.SendOutcome
                        do {
                            outcome = try await manager.update(activity: ids[index], contentState: Workload.contentState)
                        } catch {
                            throw ValidationError("\(kind): the update of \(ids[index]) failed: \(error)")
                        }
                        guard case .sent = outcome else { throw ValidationError("\(kind): the update of \(ids[index]) was held, not sent") }
                        sent += 1
                    }
                    return sent
                }
            }
            return try await group.reduce(0, +)
        }
        guard sent == ids.count else { throw ValidationError("\(kind): \(sent) of \(ids.count) updates accepted") }
        return sent
    }

    /// `manager.update(activities:)` of every activity, in chunks, 4 at once; every push must be accepted.
    private func bulkUpdate(_ workload: Workload, manager: LiveActivityManager, kind: StoreKind) async throws -> Int {
        let chunks = stride(from: 0, to: workload.ids.count, by: self.chunk).map { Array(workload.ids[$0..<min($0 + self.chunk, workload.ids.count)]) }
        let sent = try await withThrowingTaskGroup(of: Int.self) { group in
            var next = 0
            var sent = 0
            func add() {
                let ids = chunks[next]
                next += 1
                group.addTask {
                    let outcome = try await manager.update(activities: ids, contentState: Workload.contentState)
                    guard outcome.sent == ids.count else {
                        let failure = outcome.outcomes.values.first { if case .failure = $0 { true } else { false } }
                        throw ValidationError("\(kind): the bulk update sent \(outcome.sent) of \(ids.count): \(String(describing: failure))")
                    }
                    return outcome.sent
                }
            }
            while next < min(4, chunks.count) { add() }
            while let done = try await group.next() {
                sent += done
                if next < chunks.count { add() }
            }
            return sent
        }
        guard sent == workload.ids.count else { throw ValidationError("\(kind): \(sent) of \(workload.ids.count) bulk updates accepted") }
        return sent
    }

    /// One `request(groupUpdate:)` of the group every activity belongs to, then `deliverDue` until
    /// every member's push was accepted.
    private func groupUpdate(_ workload: Workload, manager: LiveActivityManager, kind: StoreKind) async throws -> Int {
        let outcome = try await manager.request(groupUpdate: Workload.group, contentState: Workload.contentState)
        guard outcome.members == workload.ids.count else {
            throw ValidationError("\(kind): the group update reached \(outcome.members) of \(workload.ids.count) members: \(outcome)")
        }
        var sent = 0
        while sent < workload.ids.count {
            let summary = try await manager.deliverDue(limit: workload.ids.count)
            guard summary.failed == 0, summary.due > 0 else { throw ValidationError("\(kind): the group update's delivery stopped at \(sent): \(summary)") }
            sent += summary.sent
        }
        return sent
    }

    /// The store's part of the bulk update, without sending: `applyContentUpdate` of every
    /// activity, a chunk of --chunk ids at a time; every activity must change.
    private func applyContentUpdate(_ workload: Workload, store: any LiveActivityStore, kind: StoreKind) async throws -> Int {
        let state = Array(#"{"status":"at the door","etaMinutes":0,"courier":"Sam"}"#.utf8)
        var applied = 0
        for start in stride(from: 0, to: workload.ids.count, by: self.chunk) {
            let ids = Array(workload.ids[start..<min(start + self.chunk, workload.ids.count)])
            applied += try await store.applyContentUpdate(ContentUpdate(ids: ids, contentState: state, now: Date(), staleDate: nil)).count
        }
        guard applied == workload.ids.count else { throw ValidationError("\(kind): the store changed \(applied) of \(workload.ids.count) activities") }
        return applied
    }

    /// sendBulk of the pushes `update` sends, to the same tokens; every one must be accepted.
    private func sendBulk(_ workload: Workload, client: APNSClient) async throws -> Int {
        let summary = try await client.sendBulk(workload.notification(), to: workload.tokens).summary()
        guard summary.accepted == workload.tokens.count, summary.total == workload.tokens.count else {
            throw ValidationError("sendBulk: \(summary.accepted) of \(workload.tokens.count) accepted: \(summary)")
        }
        return summary.accepted
    }
}

// MARK: Reporting

extension APNSBench.Activities {
    /// The product's targets for reports applied per second, by store.
    static func reportTarget(_ kind: StoreKind) -> Double? {
        switch kind {
        case .sqlite: 10_000
        case .postgres: 5_000
        case .memory, .all: nil
        }
    }

    /// The product's target for update's rate over sendBulk's.
    static let updateTarget = 0.8

    var storeNote: String {
        let held = self.latency.map { ", answers held \(CommandLineDuration.text($0))" } ?? ""
        return "\(self.activities) activities, \(self.concurrency) tasks\(held)"
    }

    func name(_ kind: StoreKind) -> String {
        switch kind {
        case .postgres: "postgres (\(self.connections) connections)"
        case .sqlite: "sqlite (durability \(self.sqliteDurability.rawValue))"
        case .memory, .all: kind.rawValue
        }
    }

    private func report(_ round: Round) {
        if self.json {
            var fields = [
                "\"benchmark\":\"activities\"", "\"store\":\"\(round.kind.rawValue)\"", "\"round\":\(round.round)",
                "\"activities\":\(self.activities)", "\"concurrency\":\(self.concurrency)",
                "\"latency_ms\":\(Bench.format(Bench.milliseconds(self.latency ?? .zero), digits: 3))",
                "\"reports_per_s\":\(Int(round.reports.rate))", "\"cpu_us_per_report\":\(Bench.format(round.reports.cpuPerOperation))",
                "\"bulk_per_s\":\(Int(round.bulk.rate))", "\"cpu_us_per_bulk_push\":\(Bench.format(round.bulk.cpuPerOperation))",
                "\"update_first\":\(round.updateFirst)",
                "\"bulk_updates_per_s\":\(Int(round.bulkUpdate.rate))",
                "\"cpu_us_per_bulk_update\":\(Bench.format(round.bulkUpdate.cpuPerOperation))",
                "\"ratio_bulk_update_bulk\":\(Bench.format(round.bulkRatio, digits: 3))",
                "\"machine_cpu_us_per_bulk_push\":\(Bench.format(round.bulk.machineCPUPerOperation))",
                "\"machine_cpu_us_per_bulk_update\":\(Bench.format(round.bulkUpdate.machineCPUPerOperation))",
                "\"store_alone_per_s\":\(Int(round.storeAlone.rate))",
                "\"machine_cpu_us_per_store_alone\":\(Bench.format(round.storeAlone.machineCPUPerOperation))",
            ]
            if let update = round.update, let ratio = round.ratio {
                fields += [
                    "\"updates_per_s\":\(Int(update.rate))", "\"cpu_us_per_update\":\(Bench.format(update.cpuPerOperation))",
                    "\"ratio_update_bulk\":\(Bench.format(ratio, digits: 3))",
                ]
            }
            if let group = round.groupUpdate, let ratio = round.groupRatio {
                fields += [
                    "\"group_updates_per_s\":\(Int(group.rate))", "\"cpu_us_per_group_update\":\(Bench.format(group.cpuPerOperation))",
                    "\"ratio_group_update_bulk\":\(Bench.format(ratio, digits: 3))",
                ]
            }
            if round.kind == .postgres { fields.append("\"connections\":\(self.connections)") }
            if round.kind == .sqlite { fields.append("\"sqlite_durability\":\"\(self.sqliteDurability.rawValue)\"") }
            if let pushToStart = round.pushToStart {
                fields += [
                    "\"push_to_start_reports_per_s\":\(Int(pushToStart.rate))",
                    "\"cpu_us_per_push_to_start_report\":\(Bench.format(pushToStart.cpuPerOperation))",
                ]
            }
            print("{" + fields.joined(separator: ",") + "}")
            return
        }
        print("\(self.name(round.kind)), round \(round.round) (\(self.storeNote)):")
        print(String(format: "  reports:        %9.0f/s  %7.2f µs CPU each  (%.2f s)", round.reports.rate, round.reports.cpuPerOperation, round.reports.seconds))
        if let pushToStart = round.pushToStart {
            print(String(format: "  push-to-start:  %9.0f/s  %7.2f µs CPU each  (%.2f s)", pushToStart.rate, pushToStart.cpuPerOperation, pushToStart.seconds))
        }
        let first = round.updateFirst ? "bulk update first" : "sendBulk first"
        if let update = round.update {
            print(String(format: "  update:         %9.0f/s  %7.2f µs CPU each  (%.2f s)", update.rate, update.cpuPerOperation, update.seconds))
        }
        print(String(format: "  bulk update:    %9.0f/s  %7.2f µs CPU each  (%.2f s)", round.bulkUpdate.rate, round.bulkUpdate.cpuPerOperation, round.bulkUpdate.seconds)
            + String(format: "; machine %.2f µs", round.bulkUpdate.machineCPUPerOperation))
        print(String(format: "  store alone:    %9.0f/s  %7.2f µs CPU each  (%.2f s)", round.storeAlone.rate, round.storeAlone.cpuPerOperation, round.storeAlone.seconds)
            + String(format: "; machine %.2f µs", round.storeAlone.machineCPUPerOperation))
        print(String(format: "  sendBulk:       %9.0f/s  %7.2f µs CPU each  (%.2f s)", round.bulk.rate, round.bulk.cpuPerOperation, round.bulk.seconds)
            + String(format: "; machine %.2f µs", round.bulk.machineCPUPerOperation))
        if let update = round.update, let ratio = round.ratio {
            print(String(format: "  update/sendBulk: %.3f× rate, %.2f× CPU", ratio, update.cpuPerOperation / round.bulk.cpuPerOperation))
        }
        print(String(format: "  bulk update/sendBulk: %.3f× rate, %.2f× CPU", round.bulkRatio, round.bulkUpdate.cpuPerOperation / round.bulk.cpuPerOperation)
            + " (\(first))")
        if let group = round.groupUpdate, let ratio = round.groupRatio {
            print(String(format: "  group update:   %9.0f/s  %7.2f µs CPU each  (%.2f s)", group.rate, group.cpuPerOperation, group.seconds)
                + String(format: "; machine %.2f µs", group.machineCPUPerOperation))
            print(String(format: "  group update/sendBulk: %.3f× rate, %.2f× CPU", ratio, group.cpuPerOperation / round.bulk.cpuPerOperation))
        }
    }

    private func reportMedians(_ kind: StoreKind, _ rounds: [Round]) {
        let reports = Bench.median(rounds.map(\.reports.rate)), reportsCPU = Bench.median(rounds.map(\.reports.cpuPerOperation))
        let updates = rounds.compactMap(\.update).map(\.rate), bulk = Bench.median(rounds.map(\.bulk.rate))
        let ratios = rounds.compactMap(\.ratio)
        let bulkUpdate = Bench.median(rounds.map(\.bulkUpdate.rate)), bulkRatio = Bench.median(rounds.map(\.bulkRatio))
        let pushToStart = rounds.compactMap(\.pushToStart).map(\.rate)
        if self.json {
            var fields = [
                "\"benchmark\":\"activities\"", "\"store\":\"\(kind.rawValue)\"", "\"median\":true", "\"rounds\":\(rounds.count)",
                "\"activities\":\(self.activities)", "\"reports_per_s\":\(Int(reports))", "\"cpu_us_per_report\":\(Bench.format(reportsCPU))",
                "\"bulk_per_s\":\(Int(bulk))",
                "\"bulk_updates_per_s\":\(Int(bulkUpdate))", "\"ratio_bulk_update_bulk\":\(Bench.format(bulkRatio, digits: 3))",
            ]
            if !pushToStart.isEmpty { fields.append("\"push_to_start_reports_per_s\":\(Int(Bench.median(pushToStart)))") }
            if !updates.isEmpty {
                fields += ["\"updates_per_s\":\(Int(Bench.median(updates)))", "\"ratio_update_bulk\":\(Bench.format(Bench.median(ratios), digits: 3))"]
            }
            print("{" + fields.joined(separator: ",") + "}")
            return
        }
        print("\(self.name(kind)), median of \(rounds.count) round(s) (\(self.storeNote)):")
        var line = String(format: "  reports %.0f/s (%.2f µs CPU each)", reports, reportsCPU)
        if let target = Self.reportTarget(kind) {
            line += String(format: "; target ≥ %.0f/s: ", target) + (reports >= target ? "met" : "MISSED")
        }
        print(line)
        if !pushToStart.isEmpty { print(String(format: "  push-to-start reports %.0f/s", Bench.median(pushToStart))) }
        if !updates.isEmpty {
            print(String(format: "  update (one call each) %.0f/s, sendBulk %.0f/s: %.3f×", Bench.median(updates), bulk, Bench.median(ratios)))
        }
        print(String(format: "  bulk update %.0f/s, sendBulk %.0f/s: %.3f×; target ≥ %.1f×: ", bulkUpdate, bulk, bulkRatio, Self.updateTarget)
            + (bulkRatio >= Self.updateTarget ? "met" : "MISSED"))
        let groupRatios = rounds.compactMap(\.groupRatio)
        if !groupRatios.isEmpty {
            let groupRatio = Bench.median(groupRatios)
            print(String(format: "  group update %.0f/s, sendBulk %.0f/s: %.3f×; target ≥ %.1f×: ", Bench.median(rounds.compactMap(\.groupUpdate).map(\.rate)), bulk, groupRatio, Self.updateTarget)
                + (groupRatio >= Self.updateTarget ? "met" : "MISSED"))
        }
    }
}
