import ForgeTestSupport
import Foundation
import Testing

private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]

/// Several gateways are one backend: on a PostgreSQL registry they share each activity's pushes,
/// and a gateway killed with its pushes in flight loses none of them.
@Suite("apnsctl activities serve on PostgreSQL: two gateways, one killed mid-send", .serialized, .timeLimit(.minutes(4)))
struct ActivitiesGatewayFailoverTests {
    @Test("SIGKILL with pushes in flight: the other takes them over after the lease; every activity ends on its last state, each flagged as possibly delivered twice")
    func failover() throws {
        let postgres = try PostgresProcess()
        defer { postgres.stop() }
        let folder = try TemporaryFolder("activities-failover")
        defer { folder.remove() }
        let key = "failover-\(UUID().uuidString)"
        let keyPath = folder.url.appendingPathComponent("api-key").path
        try Data(key.utf8).write(to: URL(fileURLWithPath: keyPath))
        // The second gateway's APNs; the first one's never answers (the script's socket).
        let apns = try ServerProcess([
            "--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1", "--topic", "com.example.shop", "--json", "--print-requests",
        ])
        let gateway = [
            CommandRunner.binary.path, "activities", "serve", "--store", postgres.url, "--port", "0", "--api-key-file", keyPath,
            "--ca-file", KeysExample.path("ca.pem"), "--lease", "2s",
        ] + credentials
        let run = try ChildProcess.run(
            try venvPython(),
            [PackageRoot.path("Tests/InboxClients/gateway_failover.py"), "--gateway", gateway.joined(separator: " "),
             "--apns", "https://127.0.0.1:\(apns.port)", "--key", key, "--activities", "40"],
            mergesStandardError: true, timeout: .seconds(200)
        )
        #expect(run.exitCode == 0 && run.stdout.contains(" passed, 0 failed"), "\(run.stdout)")
        let line = try #require(run.stdout.split(separator: "\n").first { $0.hasPrefix("ACTIVITIES ") }, "\(run.stdout)")
        let activities = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst("ACTIVITIES ".count).utf8)) as? [String: [String: Any]])

        // What APNs received, by token: each state in the order it arrived.
        var received: [String: [Int]] = [:]
        for text in apns.stop().stdout.split(separator: "\n") {
            guard let served = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], let token = served["token"] as? String,
                let request = served["request"] as? [String: Any], let body = request["body"] as? String,
                let payload = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
                let state = (payload["aps"] as? [String: Any])?["content-state"] as? [String: Any], let step = state["step"] as? Int
            else { continue }
            received[token, default: []].append(step)
        }
        #expect(activities.count == 40)
        for (id, activity) in activities {
            let token = try #require(activity["update_token"] as? String)
            let steps = received[token] ?? []
            let expected = Int(id.dropFirst("match-".count))! % 2 == 0 ? 2 : 1
            // One push each, from the second gateway: the first one's never reached a server.
            #expect(steps == [expected], "\(id): APNs received \(steps)")
        }
        // Every push was in flight at the kill: each activity's was taken over, and each says it may
        // have been delivered twice (the second gateway cannot know whether the first one's went;
        // here it did not, which only the test can see).
        let unflagged = activities.filter { ($0.value["may_have_been_delivered_twice"] as? Int ?? 0) == 0 }.map(\.key)
        #expect(unflagged.isEmpty, "taken over without the flag: \(unflagged.sorted())")
    }
}
