import ArgumentParser
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeLoopbackUI
import Foundation

extension APNSBench {
    /// CPU per request of the local APNs server, beside the bare transport server, under h2load.
    struct Server: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure the local APNs server's CPU per request against the bare HTTP/2 server.",
            discussion: """
                Both servers run in this process; h2load (a child process) sends N pushes with K in flight on \
                one connection. The bare server answers 200 without reading anything; the APNs server judges \
                every push (shape, provider token, token registry) and counts it. Rounds alternate the two so \
                machine noise hits both. CPU is this process's (the servers' I/O threads) per request.

                With --inbox, each round also runs the APNs server with `apnsctl serve`'s inbox (keeping the \
                newest --keep requests) and its phones, and reports its rate against the server without: the \
                inbox's cost. Meanwhile the inbox API's `GET /api/v1/pushes?limit=100` is answered every 100 ms \
                (its slowest answer is reported), and after the run a wait is satisfied 200 times (the slowest \
                from a push's recording to the wait's return is reported), with the process's peak RSS.

                Example:
                  swift run -c release apns-bench server --requests 200000 --in-flight 100 --rounds 3
                  swift run -c release apns-bench server --inbox --requests 1000000 --rounds 1
                """
        )

        @Option(name: .long, help: "Requests per round.")
        var requests = 100_000

        @Option(name: .customLong("in-flight"), help: "Requests in flight (h2load -m).")
        var inFlight = 100

        @Option(name: .long, help: "Rounds per server, alternated.")
        var rounds = 3

        @Flag(name: .long, help: "Serve TLS (keys-example's test certificate) instead of h2c.")
        var tls = false

        @Flag(name: .long, help: "Print one JSON object.")
        var json = false

        @Flag(name: .long, help: "Also run the APNs server with the inbox and its phones, and compare.")
        var inbox = false

        @Option(name: .long, help: "With --inbox: how many judged requests the inbox keeps.")
        var keep = 10_000

        @Flag(name: .customLong("no-phones"), help: "With --inbox: the store alone, no simulated phone per token.")
        var noPhones = false

        func run() async throws {
            Bench.warnIfDebug()
            let key = try APNSSigningKey(contentsOfFile: "keys-example/AuthKey_FORGEKEY01.p8")
            let keyID = try APNSKeyID("FORGEKEY01"), teamID = try APNSTeamID("FORGETEAM1")
            let jwt = try APNSProviderToken.sign(keyID: keyID, teamID: teamID, issuedAt: Date(), key: key)
            let tlsConfiguration = self.tls
                ? HTTP2ServerTLSConfiguration(certificateChainFile: "keys-example/server.pem", privateKeyFile: "keys-example/server.key")
                : nil
            let http2 = HTTP2ServerConfiguration(tls: tlsConfiguration)
            var bare: [(rate: Double, cpu: Double)] = []
            var apns: [(rate: Double, cpu: Double)] = []
            var withInbox: [(rate: Double, cpu: Double)] = []
            var slowestList: Duration = .zero
            let token = String(repeating: "ab", count: 32)
            for _ in 0..<self.rounds {
                // The bare transport: a constant 200.
                let response = HTTP2Response(status: 200, headers: [HTTP2HeaderField("apns-id", "00000000-0000-0000-0000-000000000000")])
                let plain = try HTTP2Server.start(http2) { _, _ in response }
                bare.append(try self.round(port: plain.port, token: token, headers: []))
                await plain.shutdown()
                // The APNs server with token authentication.
                let authenticator = TokenAuthenticator(
                    keys: [LocalAPNSKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: .sandbox
                )
                // h2load opens K streams before it reads SETTINGS, so APNs' one-stream start (C2) would
                // refuse K-1 of them; the client benchmark keeps the rule on.
                let local = try LocalAPNSServer.start(
                    LocalAPNSConfiguration(oneStreamUntilFirstPush: false, keepsHistory: false), http2: http2, authenticator: authenticator
                )
                apns.append(try self.round(port: local.port, token: token, headers: ["authorization: \(jwt.authorizationHeaderValue)"]))
                let accepted = local.acceptedCount
                await local.shutdown()
                guard accepted == self.requests else {
                    throw ValidationError("the APNs server accepted \(accepted) of \(self.requests) pushes")
                }
                if self.inbox {
                    let (result, slowest) = try await self.inboxRound(http2: http2, authenticator: TokenAuthenticator(
                        keys: [LocalAPNSKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: .sandbox
                    ), token: token, headers: ["authorization: \(jwt.authorizationHeaderValue)"])
                    withInbox.append(result)
                    slowestList = max(slowestList, slowest)
                }
            }
            self.report(bare: bare, apns: apns)
            if self.inbox { await self.reportInbox(apns: apns, withInbox: withInbox, slowestList: slowestList) }
        }

        private func round(port: Int, token: String, headers: [String]) throws -> (rate: Double, cpu: Double) {
            let scheme = self.tls ? "https" : "http"
            let target = URL(string: "\(scheme)://127.0.0.1:\(port)/3/device/\(token)")!
            let before = Bench.cpuMicroseconds()
            let result = try H2Load.run(target: target, requests: self.requests, inFlight: self.inFlight, headers: headers)
            let cpu = Bench.cpuMicroseconds() - before
            guard result.succeeded == self.requests else {
                throw ValidationError("h2load: \(result.succeeded) of \(self.requests) succeeded")
            }
            return (result.requestsPerSecond, cpu / Double(self.requests))
        }

        /// One round against the server with the inbox and its phones, the API's list timed every 100 ms.
        private func inboxRound(
            http2: HTTP2ServerConfiguration, authenticator: TokenAuthenticator, token: String, headers: [String]
        ) async throws -> ((rate: Double, cpu: Double), Duration) {
            let inbox = LocalAPNSInbox(capacity: self.keep)
            let phones = LocalAPNSPhones()
            let api = LocalAPNSInboxAPI(inbox: inbox, phones: phones)
            let phonesOn = !self.noPhones
            let local = try LocalAPNSServer.start(
                LocalAPNSConfiguration(oneStreamUntilFirstPush: false, keepsHistory: false), http2: http2, authenticator: authenticator,
                inbox: inbox
            )
            return try await withThrowingTaskGroup(of: Duration.self) { group in
                group.addTask {
                    if phonesOn { await phones.run(inbox) }
                    return .zero
                }
                group.addTask {
                    var slowest: Duration = .zero
                    while !Task.isCancelled {
                        let started = ContinuousClock.now
                        _ = await api.respond(method: "GET", path: "/api/v1/pushes", query: "limit=100")
                        slowest = max(slowest, ContinuousClock.now - started)
                        try? await Task.sleep(for: .milliseconds(100))
                    }
                    return slowest
                }
                let result = try self.round(port: local.port, token: token, headers: headers)
                let accepted = local.acceptedCount
                await local.shutdown()
                inbox.close()
                group.cancelAll()
                var slowest: Duration = .zero
                for try await value in group { slowest = max(slowest, value) }
                guard accepted == self.requests, inbox.pushes().total == min(self.keep, self.requests) else {
                    throw ValidationError("with the inbox: \(accepted) of \(self.requests) accepted, \(inbox.count) kept")
                }
                return (result, slowest)
            }
        }

        /// The inbox's rate against the server without it, the list's slowest answer, the slowest
        /// satisfied wait, the peak RSS.
        private func reportInbox(apns: [(rate: Double, cpu: Double)], withInbox: [(rate: Double, cpu: Double)], slowestList: Duration) async {
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            // A satisfied wait: from the push's recording to the wait's return.
            let inbox = LocalAPNSInbox(capacity: 10)
            var judge = APNSJudge()
            var slowestWait: Duration = .zero
            for index in 0..<200 {
                let token = String(format: "%064x", index + 1)
                let request = APNSJudge.Request(
                    method: "POST", path: "/3/device/\(token)", headers: [(name: "apns-topic", value: "com.example.bench")],
                    body: Array(#"{"aps":{"alert":"hi"}}"#.utf8)
                )
                let decision = judge.judge(request)
                let entry = LocalAPNSInboxEntry(
                    sequence: 0, date: Date(), method: "POST", path: request.path, headers: [], body: request.body, decision: decision,
                    why: nil, fault: nil, connectionID: 0, lints: []
                )
                async let waited: ContinuousClock.Instant? = {
                    await inbox.waitForPush(matching: LocalAPNSInboxQuery(token: token), timeout: .seconds(5)).map { _ in .now }
                }()
                // Recorded until the waiter has it: the waiter may subscribe after the first record.
                var recordedAt = ContinuousClock.now
                while inbox.pushes(matching: LocalAPNSInboxQuery(token: token)).total == 0 {
                    recordedAt = .now
                    inbox.record(entry)
                    await Task.yield()
                }
                if let returned = await waited { slowestWait = max(slowestWait, returned - recordedAt) }
            }
            let rate = median(apns.map(\.rate)), inboxRate = median(withInbox.map(\.rate))
            let ms: (Duration) -> String = { String(format: "%.2f ms", Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1e3) }
            print(String(format: "with the inbox       %9.0f req/s  %6.2f µs CPU/req  (%.3f× the rate without; keep %d)",
                         inboxRate, median(withInbox.map(\.cpu)), inboxRate / max(rate, 1), self.keep))
            print("inbox API: slowest GET /api/v1/pushes?limit=100 during the run \(ms(slowestList)); slowest satisfied wait \(ms(slowestWait))")
            print(String(format: "peak RSS %.1f MiB", Bench.peakRSSMiB()))
        }

        private func report(bare: [(rate: Double, cpu: Double)], apns: [(rate: Double, cpu: Double)]) {
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            let bareCPU = median(bare.map(\.cpu)), apnsCPU = median(apns.map(\.cpu))
            let bareRate = median(bare.map(\.rate)), apnsRate = median(apns.map(\.rate))
            if self.json {
                print("{\"benchmark\":\"server\",\"tls\":\(self.tls),\"requests\":\(self.requests),\"in_flight\":\(self.inFlight),"
                    + "\"rounds\":\(self.rounds),\"bare\":{\"requests_per_s\":\(Int(bareRate)),\"cpu_us_per_request\":\(Bench.format(bareCPU))},"
                    + "\"apns\":{\"requests_per_s\":\(Int(apnsRate)),\"cpu_us_per_request\":\(Bench.format(apnsCPU))},"
                    + "\"ratio_cpu_per_request\":\(Bench.format(apnsCPU / max(bareCPU, 0.001), digits: 3))}")
                return
            }
            print("\(self.tls ? "TLS" : "h2c"), \(self.requests) requests × \(self.rounds) rounds, \(self.inFlight) in flight (medians)")
            print(String(format: "bare HTTP/2 server   %9.0f req/s  %6.2f µs CPU/req", bareRate, bareCPU))
            print(String(format: "local APNs server    %9.0f req/s  %6.2f µs CPU/req  (%.2f× the bare server's CPU)",
                         apnsRate, apnsCPU, apnsCPU / max(bareCPU, 0.001)))
        }
    }
}
