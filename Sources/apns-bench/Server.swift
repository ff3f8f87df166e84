import ArgumentParser
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
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

                Example:
                  swift run -c release apns-bench server --requests 200000 --in-flight 100 --rounds 3
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
            let token = String(repeating: "ab", count: 32)
            for _ in 0..<self.rounds {
                // The bare transport: a constant 200.
                let response = HTTP2Response(status: 200, headers: [HTTP2HeaderField("apns-id", "00000000-0000-0000-0000-000000000000")])
                let plain = try HTTP2Server.start(http2) { _, _ in response }
                bare.append(try self.round(port: plain.port, token: token, headers: []))
                await plain.shutdown()
                // The APNs server with token authentication.
                let authenticator = TokenAuthenticator(
                    keys: [LocalAPNsKey(keyID: keyID, teamID: teamID, verificationKey: key.publicKey)], environment: .sandbox
                )
                // h2load opens K streams before it reads SETTINGS, so APNs' one-stream start (C2) would
                // refuse K-1 of them; the client benchmark keeps the rule on.
                let local = try LocalAPNsServer.start(
                    LocalAPNsConfiguration(oneStreamUntilFirstPush: false, keepsHistory: false), http2: http2, authenticator: authenticator
                )
                apns.append(try self.round(port: local.port, token: token, headers: ["authorization: \(jwt.authorizationHeaderValue)"]))
                let accepted = local.acceptedCount
                await local.shutdown()
                guard accepted == self.requests else {
                    throw ValidationError("the APNs server accepted \(accepted) of \(self.requests) pushes")
                }
            }
            self.report(bare: bare, apns: apns)
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
