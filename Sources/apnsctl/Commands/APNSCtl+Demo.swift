import ArgumentParser
import ForgeLoopback
import ForgeLoopbackScenarios
import ForgeLoopbackUI
import Foundation
import UnixSignals

extension APNSCtl {
    /// `apnsctl demo`: runs the end-to-end scenarios of `ForgeLoopbackScenarios` (the client, the
    /// local APNs server and a simulated iPhone in one process, over TLS on loopback) and prints
    /// their timelines and checks.
    struct Demo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "demo",
            abstract: "Run the whole push path in-process on loopback: no Apple account, no network.",
            discussion: """
                Starts the local APNs server (TLS with a CA and certificate made in memory: no file is \
                needed) and a simulated device \
                with one app (two silent-push handlers, a visible-push handler, a scene delegate, a \
                notification service extension, a Live Activity type), then sends with the real client: an \
                alert the user taps, a background push, a mutable-content alert the extension rewrites, a \
                Live Activity start, two updates (one stale) and an end, an alert that launches the \
                terminated app (the scene first, then the handler), a broadcast to a Live Activity \
                subscribed to a channel, and a bulk send where every 100th token is unregistered.

                Prints a timeline: what the server judged, what the device and the app's handlers did, \
                each line with its offset in milliseconds; then the bulk summary. With --html FILE it also \
                writes the timeline as a self-contained HTML page: a sequence diagram per scenario (client, \
                server, device, app handler), no script and nothing fetched. Exit 0 when every step did what \
                the demo expects; otherwise what differed goes to stderr and the exit code is 70 (73 when \
                the HTML file cannot be written).

                With --serve, the demo's server keeps what it judged, and once the scenarios have run the \
                inbox of `apnsctl serve --ui-port` shows it (the page, the JSON API, a phone per token) on \
                --ui-port (0 by default: one the system picks) until Ctrl-C; its address is printed as \
                `demo: inbox on http://127.0.0.1:PORT/`.
                """
        )

        @Option(help: "How many tokens the bulk send addresses (every 100th is unregistered).")
        var tokens: Int = 10_000

        @Option(help: ArgumentHelp("Also write the timeline as a self-contained HTML page to this file.", valueName: "file"))
        var html: String?

        @Flag(help: "Then keep the demo's inbox open in a browser page until Ctrl-C (see --ui-port).")
        var serve = false

        @Option(name: .customLong("ui-port"), help: "With --serve, the inbox's port on 127.0.0.1; 0 lets the system choose.")
        var uiPort: Int = 0

        /// Rules between flags; run() checks them first, once the parser has refused unknown options.
        func check() throws {
            guard (1...1_000_000).contains(self.tokens) else { throw ValidationError("--tokens must be 1...1000000 (got \(self.tokens)).") }
            guard (0...65_535).contains(self.uiPort) else { throw ValidationError("--ui-port must be 0...65535 (got \(self.uiPort)).") }
            if let html = self.html, html.isEmpty || html.hasSuffix("/") {
                throw ValidationError("--html must name a file (got '\(html)').")
            }
        }

        func run() async throws {
            try self.check()
            var failed = false
            try await runReportingFailures {
                // Room for every request of the demo, the bulk send's included.
                let inbox = self.serve ? LocalAPNSInbox(capacity: self.tokens + 1_000) : nil
                let sections = try await Self.runScenarios(tokens: self.tokens, inbox: inbox)
                failed = sections.contains { $0.checks.contains { !$0.passed } }
                if let html = self.html { try Self.write(TimelineHTML.render(sections: sections), to: html) }
                if let inbox { try await self.serveInbox(inbox) }
            }
            if failed { throw ExitCode(CLIExit.software) }
        }

        /// `--serve`: the demo's requests in the inbox page and API until SIGINT or SIGTERM. Each token's
        /// phone is what `apnsctl serve` would show for the pushes it accepted (apps without handlers).
        private func serveInbox(_ inbox: LocalAPNSInbox) async throws {
            let phones = LocalAPNSPhones(maximumPhones: self.tokens + 100)
            for entry in inbox.pushes(matching: LocalAPNSInboxQuery(limit: LocalAPNSInboxQuery.maximumLimit + self.tokens)).entries.reversed() {
                await phones.deliver(entry)
            }
            let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
            let http = LocalAPNSInboxServer(api: LocalAPNSInboxAPI(inbox: inbox, phones: phones), port: self.uiPort)
            try await withThrowingDiscardingTaskGroup { group in
                let port: Int
                do {
                    port = try await http.start(in: &group)
                } catch {
                    throw CLIFailure(message: "--ui-port: cannot serve the inbox on 127.0.0.1:\(self.uiPort): \(error)", exitCode: CLIExit.cannotCreate)
                }
                Output.result("demo: inbox on http://127.0.0.1:\(port)/ (\(inbox.count) requests; Ctrl-C stops)")
                _ = await signals.first()
                inbox.close()
                phones.finish()
                group.cancelAll()
            }
        }

        /// Writes the HTML timeline; a file that cannot be written is exit 73, naming --html and the file.
        private static func write(_ page: String, to path: String) throws {
            do {
                try page.write(toFile: path, atomically: true, encoding: .utf8)
            } catch {
                throw CLIFailure(
                    message: "--html: cannot write \(path): \((error as NSError).localizedDescription)", exitCode: CLIExit.cannotCreate
                )
            }
            Output.result("demo: timeline written to \(path)")
        }

        /// Runs the scenarios, printing each section as it finishes, then the checks' tally.
        private static func runScenarios(tokens: Int, inbox: LocalAPNSInbox?) async throws -> [ScenarioSection] {
            let sections: [ScenarioSection]
            do {
                sections = try await LoopbackScenarios(tls: .ephemeral, bulkTokens: tokens, inbox: inbox).run(
                    started: { setup in
                        Output.result("apnsctl demo: local APNs (\(setup.environment)) on localhost:\(setup.port) over TLS, "
                                      + "trusting a CA made in memory for this run")
                        for app in setup.apps { Output.result("device: \(app)") }
                    },
                    finished: Self.print
                )
            } catch {
                throw CLIFailure(message: "cannot start the local APNs server: \(error)", exitCode: CLIExit.unavailable)
            }
            let checks = sections.flatMap(\.checks)
            let failures = checks.count { !$0.passed }
            Output.result("")
            if failures == 0 {
                Output.result("demo: all \(checks.count) checks passed")
            } else {
                Output.result("demo: \(failures) of \(checks.count) checks FAILED (details on stderr)")
            }
            return sections
        }

        /// Prints a section: its title, its timeline (`+  12.3 ms  server  …`), its checks; each failed
        /// check's details also go to stderr.
        private static func print(_ section: ScenarioSection) {
            Output.result("")
            Output.result("== \(section.title)")
            for line in section.lines {
                Output.result("\(Self.offset(line.offset))  \(line.source.padding(toLength: 6, withPad: " ", startingAt: 0))  \(line.text)")
            }
            for check in section.checks {
                Output.result("   \(check.passed ? "ok    " : "FAILED") \(check.text)")
                if !check.passed {
                    Output.diagnostic("apnsctl demo: check failed: \(check.text)\(check.detail.isEmpty ? "" : ": \(check.detail)")")
                }
            }
        }

        /// Seconds as milliseconds with one decimal, right-aligned: `    +12.3 ms`.
        private static func offset(_ seconds: Double) -> String {
            let tenths = Int((seconds * 10_000).rounded())
            let text = "+\(tenths / 10).\(abs(tenths % 10)) ms"
            return String(repeating: " ", count: max(0, 12 - text.count)) + text
        }
    }
}
