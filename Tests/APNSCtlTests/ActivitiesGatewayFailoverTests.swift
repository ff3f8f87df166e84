import ForgeTestSupport
import Foundation
import Testing

private let keyFile = KeysExample.path("AuthKey_FORGEKEY01.p8")
private let credentials = ["--key-file", keyFile, "--key-id", "FORGEKEY01", "--team-id", "FORGETEAM1"]

/// Several gateways are one backend: on a PostgreSQL registry they share each activity's pushes,
/// and a gateway killed with its pushes in flight loses none of them.
@Suite("apnsctl activities serve on PostgreSQL: two gateways, one killed mid-send", .serialized, .timeLimit(.minutes(4)))
struct ActivitiesGatewayFailoverTests {
    @Test("SIGKILL with pushes in flight: the other takes them over after the lease; every activity ends on its last state; a state sent twice is flagged")
    func failover() throws {
        let postgres = try PostgresProcess()
        defer { postgres.stop() }
        let folder = try TemporaryFolder("activities-failover")
        defer { folder.remove() }
        let key = "failover-\(UUID().uuidString)"
        let keyPath = folder.url.appendingPathComponent("api-key").path
        try Data(key.utf8).write(to: URL(fileURLWithPath: keyPath))
        // Answers held 300 ms: the killed gateway has pushes in flight, as a gateway 300 ms from APNs would.
        let apns = try ServerProcess([
            "--register-key", "\(keyFile):FORGEKEY01:FORGETEAM1", "--topic", "com.example.shop", "--json", "--print-requests", "--latency", "300ms",
        ])
        let gateway = [
            CommandRunner.binary.path, "activities", "serve", "--store", postgres.url, "--port", "0", "--api-key-file", keyPath,
            "--url", "https://127.0.0.1:\(apns.port)", "--ca-file", KeysExample.path("ca.pem"), "--lease", "2s",
        ] + credentials
        let run = try ChildProcess.run(
            try venvPython(),
            [PackageRoot.path("Tests/InboxClients/gateway_failover.py"), "--gateway", gateway.joined(separator: " "), "--key", key, "--activities", "40"],
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
            #expect(steps.last == expected, "\(id): APNs received \(steps)")
            let flagged = activity["may_have_been_delivered_twice"] as? Int ?? 0
            #expect(Set(steps).count == steps.count || flagged > 0, "\(id): a state sent twice, unflagged: \(steps)")
        }
        // The kill happened mid-send: some pushes were taken over, and each such activity says so.
        let takenOver = activities.values.filter { ($0["may_have_been_delivered_twice"] as? Int ?? 0) > 0 }
        #expect(!takenOver.isEmpty, "no push was in flight when the gateway was killed")
    }
}
