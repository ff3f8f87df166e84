import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeSupport
import ForgeTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension APNSBench {
    /// The server side of `client` and `bulk`.
    struct APNSServer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apns-server", abstract: "Run the local APNs server for the client benchmarks; prints the port.",
            shouldDisplay: false
        )

        @Flag(name: .long, help: "Serve cleartext h2c.")
        var h2c = false

        @Flag(name: .customLong("lenient-tokens"), help: "Accept DER signatures and a string iat (APNSwift 6.4 sends one).")
        var lenientTokens = false

        @Flag(name: .customLong("goaway-after-each"), help: "Answer each request, then GOAWAY: every request needs a new connection.")
        var goAwayAfterEach = false

        @Option(help: ArgumentHelp("Hold each answer this long: 30ms, 0.03s, 250us (default: 0).", valueName: "duration"),
                transform: { try CommandLineDuration.parse($0) })
        var latency: Duration?

        @Flag(name: .customLong("answer-counts"), help: "Answer each line read from stdin with the count of pushes accepted so far; exit at its end.")
        var answerCounts = false

        func run() async throws {
            let key = try APNSSigningKey(contentsOfFile: "keys-example/AuthKey_FORGEKEY01.p8")
            let tls = self.h2c ? nil : HTTP2ServerTLSConfiguration(certificateChainFile: "keys-example/server.pem",
                                                                    privateKeyFile: "keys-example/server.key")
            let server = try LocalAPNSServer.start(
                LocalAPNSConfiguration(keepsHistory: false), http2: HTTP2ServerConfiguration(tls: tls, responseDelay: self.latency ?? .zero),
                authenticator: TokenAuthenticator(
                    keys: [LocalAPNSKey(keyID: try APNSKeyID("FORGEKEY01"), teamID: try APNSTeamID("FORGETEAM1"),
                                        verificationKey: key.publicKey)],
                    environment: .sandbox, lenient: self.lenientTokens
                )
            )
            if self.goAwayAfterEach {
                server.schedule(.goAway(errorCode: .noError, reason: .shutdown), afterRequests: 0, count: .max)
            }
            print(server.port)
            fflush(nil)
            if self.answerCounts {
                // readLine blocks: a thread of its own, not one of the cooperative pool's.
                while try await offPool({ readLine() }) != nil {
                    print(server.acceptedCount)
                    fflush(nil)
                }
                return
            }
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
    }
}
