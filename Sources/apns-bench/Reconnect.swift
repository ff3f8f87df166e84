import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension APNSBench {
    /// Pushes one by one to a server that ends every connection after one answer: the RSS as
    /// connections come and go (what a lost connection leaves behind).
    struct Reconnect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send pushes one by one to a local server that ends every connection after one answer; print the RSS as connections come and go.",
            discussion: """
                Each send opens a new connection of the pool (TLS handshake, I/O thread, nghttp2 session) and the \
                old one goes away: memory that a connection leaves behind grows the RSS with the count.
                Example: swift run -c release apns-bench reconnect --connections 10000
                """
        )

        @Option(name: .long, help: "Connections to open and lose, one push each.")
        var connections = 10_000

        @Flag(name: .long, help: "Print one JSON object.")
        var json = false

        func run() async throws {
            Bench.warnIfDebug()
            let (child, port) = try ServerChild.start(["apns-server", "--goaway-after-each"])
            defer { child.terminate() }
            let configuration = try ServerChild.clientConfiguration(port: port)
            let alert = try ServerChild.alert()
            let warmUp = min(1_000, self.connections / 10)
            var rssAfterWarmUp = 0.0
            var accepted = 0
            let start = ContinuousClock.now
            try await withAPNSClient(configuration: configuration) { client in
                for index in 0..<self.connections {
                    if index == warmUp { rssAfterWarmUp = Bench.currentRSSMiB() }
                    let token = try DeviceToken(String(format: "%064x", index + 1))
                    if (try? await client.send(alert, to: token)) != nil { accepted += 1 }
                }
            }
            let seconds = Bench.seconds(.now - start)
            let rssAtEnd = Bench.currentRSSMiB()
            let perConnection = (rssAtEnd - rssAfterWarmUp) * 1_048_576 / Double(max(1, self.connections - warmUp))
            if self.json {
                print("{\"benchmark\":\"reconnect\",\"connections\":\(self.connections),\"accepted\":\(accepted),"
                    + "\"rss_after_warm_up_mib\":\(Bench.format(rssAfterWarmUp, digits: 1)),\"rss_at_end_mib\":\(Bench.format(rssAtEnd, digits: 1)),"
                    + "\"bytes_per_connection\":\(Int(perConnection)),\"peak_rss_mib\":\(Bench.format(Bench.peakRSSMiB(), digits: 1)),"
                    + "\"seconds\":\(Bench.format(seconds))}")
                return
            }
            print(String(format: "reconnect: %d connections (%d accepted) in %.1f s; RSS %.1f MiB after %d, %.1f MiB at the end "
                         + "(%.0f bytes per connection after the warm-up); peak %.1f MiB",
                         self.connections, accepted, seconds, rssAfterWarmUp, warmUp, rssAtEnd, perConnection, Bench.peakRSSMiB()))
        }
    }
}
