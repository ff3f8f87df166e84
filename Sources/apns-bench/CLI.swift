import ArgumentParser
import ForgeSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension APNSBench {
    /// `apnsctl send --tokens-file` as a user runs it, against h2load on the same server.
    struct CLI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cli",
            abstract: "Run `apnsctl send --tokens-file` (the apnsctl built beside this executable) against the local server; compare with h2load.",
            discussion: """
                Writes N generated tokens to a temporary file, starts the local APNs server in a child process \
                (with --latency, every answer is held that long), and runs apnsctl with its default settings, \
                the verdicts (--json) going to a file as `> verdicts.ndjson` would. The time is the whole \
                process's, from start to exit; the CPU is apnsctl's (user + system). With --h2load, each round \
                then runs h2load with as many pushes against the same server, and the ratios are printed per \
                round and as medians: rounds alternate apnsctl and h2load, for a machine whose speed varies. \
                With --journal, each round also runs apnsctl with --journal (a fresh journal file per round), \
                alternating which goes first, and prints its rate and peak RSS and its ratio to the run without. \
                With --lints, the push is a priority-10 Live Activity update whose content state trips LA001 (so \
                every verdict line carries its id and every token is checked for LA007), and each round also runs \
                it with --no-lint LA001 --no-lint LA007, alternating which goes first: the ratio is what lints cost.

                Build both executables first: swift build -c release --product apnsctl

                Examples:
                  swift run -c release apns-bench cli --notifications 200000 --latency 30ms --h2load --rounds 3
                  swift run -c release apns-bench cli --notifications 1000000 --h2load
                  swift run -c release apns-bench cli --notifications 1000000 --journal --rounds 5
                  swift run -c release apns-bench cli --notifications 1000000 --lints --rounds 5
                """
        )

        @Option(name: .long, help: "Tokens in the file.")
        var notifications = 200_000

        @Option(
            help: ArgumentHelp("Hold each answer of the local server this long: 30ms, 0.03s, 250us (default: 0).", valueName: "duration"),
            transform: { try CommandLineDuration.parse($0) }
        )
        var latency: Duration?

        @Flag(name: .long, help: "Also run h2load against the same server, as many pushes, in each round.")
        var h2load = false

        @Option(name: .customLong("h2load-connections"), help: "Connections h2load opens (its -c).")
        var h2loadConnections = 4

        @Option(name: .customLong("in-flight"), help: "h2load's -m, streams per connection (apnsctl chooses its own).")
        var inFlight = 1000

        @Option(name: .long, help: "Rounds, each apnsctl then h2load.")
        var rounds = 1

        @Flag(name: .long, help: "Also run apnsctl with --journal (a fresh journal per round) and compare.")
        var journal = false

        @Option(name: .customLong("journal-window"), help: "With --journal: apnsctl's --journal-window (default: apnsctl's).")
        var journalWindow: Int?

        @Flag(name: .long, help: "Send a Live Activity update with lints, and compare with the same send with them silenced.")
        var lints = false

        @Option(name: .long, help: "The apnsctl executable (default: the one beside apns-bench).")
        var apnsctl: String?

        @Flag(name: .long, help: "Print one JSON object per round, then one with the medians.")
        var json = false

        func validate() throws {
            guard self.notifications >= 1 else { throw ValidationError("--notifications must be at least 1.") }
            guard self.rounds >= 1 else { throw ValidationError("--rounds must be at least 1.") }
            guard self.h2loadConnections >= 1, self.inFlight >= 1 else {
                throw ValidationError("--h2load-connections and --in-flight must be at least 1.")
            }
        }

        struct Run {
            var seconds: Double
            var cpuMicroseconds: Double
            var peakRSSMiB: Double
            var accepted: Int
            var rate: Double
            /// The server child's CPU during the run: what the client's requests cost it.
            var serverCPUMicroseconds: Double = 0
        }

        func run() async throws {
            Bench.warnIfDebug()
            let executable = self.apnsctl
                ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("apnsctl").path
            guard FileManager.default.isExecutableFile(atPath: executable) else {
                throw ValidationError("no apnsctl at \(executable): swift build -c release --product apnsctl, or pass --apnsctl")
            }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("apns-bench-cli-\(getpid())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let tokens = folder.appendingPathComponent("tokens.txt")
            try Self.writeTokens(self.notifications, to: tokens)

            let (child, port) = try ServerChild.start(["apns-server"] + ServerChild.latencyArguments(self.latency))
            defer { child.terminate() }
            let server = URL(string: "https://localhost:\(port)")!
            var arguments = [
                "send", "--tokens-file", tokens.path, "--url", server.absoluteString, "--ca-file", "keys-example/ca.pem",
                "--key-file", "keys-example/AuthKey_FORGEKEY01.p8", "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1",
                "--topic", "com.example.forgepush", "--json",
            ]
            if self.lints {
                // An ETA in Unix seconds (LA001), timestamped now; priority 10 by default, so LA007 is checked per token.
                let payload = folder.appendingPathComponent("update.json")
                let now = Int(Date().timeIntervalSince1970)
                try Data(#"{"aps":{"event":"update","timestamp":\#(now),"content-state":{"eta":\#(now + 600)}}}"#.utf8).write(to: payload)
                arguments += ["--push-type", "liveactivity", "--payload", payload.path]
            } else {
                arguments += ["--title", "Benchmark", "--body", "Hello from ForgePush"]
            }
            var lintRatios: [Double] = [], lintCPURatios: [Double] = []
            var ratios: [Double] = [], cpuRatios: [Double] = [], rates: [Double] = [], journalRatios: [Double] = []
            for round in 1...self.rounds {
                let verdicts = folder.appendingPathComponent("verdicts-\(round).ndjson")
                // With --journal, odd rounds run without it first, even rounds with it first.
                var journaled: Run?
                let serverPID = child.processIdentifier
                if self.journal, round % 2 == 0 {
                    journaled = try self.runJournaled(executable, arguments, folder: folder, round: round, serverPID: serverPID)
                }
                // With --lints, odd rounds run the silenced send after, even rounds before.
                let silencedFirst = self.lints && round % 2 == 0
                    ? try self.runSilenced(executable, arguments, folder: folder, round: round, serverPID: serverPID) : nil
                let measured = try Self.runAPNSCtl(executable, arguments, verdicts: verdicts, count: self.notifications, serverPID: serverPID)
                if self.journal, round % 2 == 1 {
                    journaled = try self.runJournaled(executable, arguments, folder: folder, round: round, serverPID: serverPID)
                }
                if let journaled { journalRatios.append(journaled.rate / measured.rate) }
                if self.lints {
                    let silenced = try silencedFirst ?? self.runSilenced(executable, arguments, folder: folder, round: round, serverPID: serverPID)
                    lintRatios.append(measured.rate / silenced.rate)
                    lintCPURatios.append(measured.cpuMicroseconds / silenced.cpuMicroseconds)
                    print(String(format: "round %d: lints on %.0f/s, %.2f µs CPU each; silenced %.0f/s, %.2f µs; on/off rate %.3f×, CPU %.3f×",
                                 round, measured.rate, measured.cpuMicroseconds / Double(self.notifications), silenced.rate,
                                 silenced.cpuMicroseconds / Double(self.notifications), measured.rate / silenced.rate,
                                 measured.cpuMicroseconds / silenced.cpuMicroseconds))
                }
                rates.append(measured.rate)
                let cpu = measured.cpuMicroseconds / Double(self.notifications)
                var h2loadResult: H2Load.Result?
                if self.h2load {
                    let result = try H2Load.runAPNS(server: server, requests: self.notifications, connections: self.h2loadConnections,
                                                    inFlight: self.inFlight)
                    ratios.append(measured.rate / result.requestsPerSecond)
                    cpuRatios.append(cpu / max(result.cpuMicroseconds / Double(self.notifications), 0.001))
                    h2loadResult = result
                }
                self.report(round: round, measured, cpu: cpu, h2load: h2loadResult, journaled: journaled)
            }
            if self.rounds > 1 { self.reportMedians(rates: rates, ratios: ratios, cpuRatios: cpuRatios, journalRatios: journalRatios) }
            if self.lints {
                print(String(format: "lints: median on/off rate %.3f×, CPU %.3f× over %d rounds", Bench.median(lintRatios),
                             Bench.median(lintCPURatios), self.rounds))
            }
        }

        /// apnsctl with the lints silenced.
        private func runSilenced(_ executable: String, _ arguments: [String], folder: URL, round: Int, serverPID: Int32) throws -> Run {
            try Self.runAPNSCtl(
                executable, arguments + ["--no-lint", "LA001", "--no-lint", "LA007"],
                verdicts: folder.appendingPathComponent("verdicts-\(round)-silenced.ndjson"), count: self.notifications, serverPID: serverPID
            )
        }

        /// apnsctl with `--journal`, on a journal file of its own (removed after).
        private func runJournaled(_ executable: String, _ arguments: [String], folder: URL, round: Int, serverPID: Int32) throws -> Run {
            let journal = folder.appendingPathComponent("journal-\(round).db").path
            defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: journal + suffix) } }
            let window = self.journalWindow.map { ["--journal-window", String($0)] } ?? []
            return try Self.runAPNSCtl(
                executable, arguments + ["--journal", journal] + window,
                verdicts: folder.appendingPathComponent("verdicts-\(round)-journal.ndjson"), count: self.notifications,
                serverPID: serverPID
            )
        }

        /// `count` generated tokens, one a line, written in chunks: this process's own peak RSS must stay
        /// below apnsctl's, because a spawned child's peak starts at its parent's (the kernel records the
        /// shared memory's high-water mark at exec).
        static func writeTokens(_ count: Int, to file: URL) throws {
            guard let stream = fopen(file.path, "w") else { throw ValidationError("cannot write \(file.path)") }
            defer { fclose(stream) }
            for index in 0..<count {
                let line = GeneratedTokens.hex(index) + "\n"
                guard fputs(line, stream) >= 0 else { throw ValidationError("cannot write \(file.path)") }
            }
        }

        /// The lines of `file` that report an accepted push, read a line at a time.
        static func acceptedLines(in file: URL) throws -> Int {
            guard let stream = fopen(file.path, "r") else { throw ValidationError("cannot read \(file.path)") }
            defer { fclose(stream) }
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(line) }
            var accepted = 0
            while getline(&line, &capacity, stream) > 0 {
                if let line, strstr(line, "\"outcome\":\"accepted\"") != nil { accepted += 1 }
            }
            return accepted
        }

        /// Runs apnsctl to the end, standard output to `verdicts`; its own time, CPU and peak RSS (from
        /// `wait4`, so neither the server child nor h2load counts), and the accepted verdicts it wrote
        /// (every token must have one, or the run is not a measurement).
        static func runAPNSCtl(_ executable: String, _ arguments: [String], verdicts: URL, count: Int, serverPID: Int32) throws -> Run {
            let diagnostics = verdicts.deletingPathExtension().appendingPathExtension("stderr")
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, verdicts.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, diagnostics.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
            defer { argv.forEach { free($0) } }
            let serverCPUStart = Bench.cpuMicroseconds(ofProcess: serverPID)
            let start = ContinuousClock.now
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
            guard spawned == 0 else { throw ValidationError("cannot start \(executable): \(String(cString: strerror(spawned)))") }
            var status: Int32 = 0
            var usage = rusage()
            while wait4(pid, &status, 0, &usage) < 0, errno == EINTR {}
            let seconds = Bench.seconds(.now - start)
            let serverCPU = Bench.cpuMicroseconds(ofProcess: serverPID) - serverCPUStart
            let accepted = try Self.acceptedLines(in: verdicts)
            // Exited normally with 0: the low 16 bits of the wait status are all zero.
            guard status & 0xFFFF == 0, accepted == count else {
                let errors = (try? String(contentsOf: diagnostics, encoding: .utf8)) ?? ""
                throw ValidationError("apnsctl ended with wait status \(status) and \(accepted) of \(count) accepted: \(errors.suffix(2000))")
            }
            return Run(seconds: seconds, cpuMicroseconds: Bench.microseconds(usage), peakRSSMiB: Double(usage.ru_maxrss) / 1024,
                       accepted: accepted, rate: Double(count) / seconds, serverCPUMicroseconds: serverCPU)
        }

        private func report(round: Int, _ measured: Run, cpu: Double, h2load: H2Load.Result?, journaled: Run?) {
            let latency = self.latency ?? .zero
            if self.json {
                var fields = [
                    "\"benchmark\":\"cli\"", "\"round\":\(round)", "\"tokens\":\(self.notifications)",
                    "\"latency_ms\":\(Bench.format(Bench.milliseconds(latency), digits: 3))",
                    "\"notifications_per_s\":\(Int(measured.rate))", "\"cpu_us_per_notification\":\(Bench.format(cpu))",
                    "\"peak_rss_mib\":\(Bench.format(measured.peakRSSMiB, digits: 1))", "\"accepted\":\(measured.accepted)",
                    "\"server_cpu_us_per_notification\":\(Bench.format(measured.serverCPUMicroseconds / Double(self.notifications)))",
                ]
                if let journaled {
                    fields += [
                        "\"journal_notifications_per_s\":\(Int(journaled.rate))",
                        "\"journal_cpu_us_per_notification\":\(Bench.format(journaled.cpuMicroseconds / Double(self.notifications)))",
                        "\"journal_peak_rss_mib\":\(Bench.format(journaled.peakRSSMiB, digits: 1))",
                        "\"journal_server_cpu_us_per_notification\":\(Bench.format(journaled.serverCPUMicroseconds / Double(self.notifications)))",
                        "\"ratio_journal\":\(Bench.format(journaled.rate / measured.rate, digits: 3))",
                    ]
                }
                if let h2load {
                    fields += h2load.jsonFields(
                        requests: self.notifications, connections: self.h2loadConnections, streams: self.inFlight,
                        rate: measured.rate, cpu: cpu
                    )
                }
                print("{" + fields.joined(separator: ",") + "}")
                return
            }
            let held = latency == .zero ? "" : " (answers held \(CommandLineDuration.text(latency)))"
            print(String(format: "round %d: apnsctl send --tokens-file: %d tokens in %.2f s: %.0f notifications/s, %.2f µs CPU each (server %.2f), peak RSS %.1f MiB",
                         round, self.notifications, measured.seconds, measured.rate, cpu,
                         measured.serverCPUMicroseconds / Double(self.notifications), measured.peakRSSMiB) + held)
            if let journaled {
                print(String(format: "         --journal: %.2f s: %.0f notifications/s, %.2f µs CPU each (server %.2f), peak RSS %.1f MiB; %.3f× the rate without",
                             journaled.seconds, journaled.rate, journaled.cpuMicroseconds / Double(self.notifications),
                             journaled.serverCPUMicroseconds / Double(self.notifications), journaled.peakRSSMiB, journaled.rate / measured.rate))
            }
            if let h2load {
                let h2cpu = h2load.cpuMicroseconds / Double(self.notifications)
                print(String(format: "         h2load: %.0f requests/s, %.2f µs CPU each (-c %d -m %d; succeeded %d)",
                             h2load.requestsPerSecond, h2cpu, self.h2loadConnections, self.inFlight, h2load.succeeded))
                print(String(format: "         ratio:  %.2f× rate, %.2f× CPU (apnsctl/h2load)", measured.rate / h2load.requestsPerSecond,
                             cpu / max(h2cpu, 0.001)))
            }
        }

        private func reportMedians(rates: [Double], ratios: [Double], cpuRatios: [Double], journalRatios: [Double]) {
            let rate = Bench.median(rates)
            if self.json {
                var fields = ["\"benchmark\":\"cli\"", "\"median\":true", "\"rounds\":\(self.rounds)", "\"notifications_per_s\":\(Int(rate))"]
                if !ratios.isEmpty {
                    fields += [
                        "\"ratio_rate\":\(Bench.format(Bench.median(ratios), digits: 3))",
                        "\"ratio_cpu\":\(Bench.format(Bench.median(cpuRatios), digits: 3))",
                    ]
                }
                if !journalRatios.isEmpty { fields.append("\"ratio_journal\":\(Bench.format(Bench.median(journalRatios), digits: 3))") }
                print("{" + fields.joined(separator: ",") + "}")
                return
            }
            var line = String(format: "median of %d rounds: %.0f notifications/s", self.rounds, rate)
            if !ratios.isEmpty {
                line += String(format: ", %.2f× h2load's rate, %.2f× its CPU", Bench.median(ratios),
                               Bench.median(cpuRatios))
            }
            if !journalRatios.isEmpty { line += String(format: "; --journal: %.3f× the rate without", Bench.median(journalRatios)) }
            print(line)
        }
    }
}
