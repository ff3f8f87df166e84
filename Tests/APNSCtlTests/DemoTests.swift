import ForgeTestSupport
import Foundation
import Testing

/// The limit counts from when the test is started, not from when it gets a thread: under
/// ThreadSanitizer on 2 cores the CLI suites' process runs queue behind one another, and the
/// demo tests passed their checks after 99 s with a 1-minute limit. Each process run is bounded
/// on its own (`CommandRunner.run`'s timeout).
@Suite("apnsctl demo: the whole push path in one process", .timeLimit(.minutes(4)))
struct DemoTests {
    @Test("--help describes the demo and its --tokens option")
    func help() throws {
        let result = try CommandRunner.run(["demo", "--help"])
        #expect(result.exitCode == 0)
        #expect(result.stdout.contains("USAGE: apnsctl demo"))
        #expect(result.stdout.contains("--tokens"))
        // The help text is wrapped to the terminal: compare with single spaces.
        let words = result.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("no Apple account, no network"))
        #expect(words.contains("every 100th is unregistered"))
        let root = try CommandRunner.run(["--help"])
        #expect(root.stdout.contains("demo"))
    }

    @Test("A bad --tokens is a usage error, before anything starts")
    func badTokens() throws {
        let result = try CommandRunner.run(["demo", "--tokens", "0"])
        #expect(result.exitCode == 64)
        #expect(result.stderr.contains("--tokens"))
        #expect(result.stdout.isEmpty)
    }

    @Test("Installed outside the checkout, demo needs no file: its CA is made in memory")
    func noFileOnDisk() throws {
        let folder = try TemporaryFolder("apnsctl-demo")
        defer { folder.remove() }
        let result = try CommandRunner.run(
            ["demo", "--tokens", "100"], binary: try CommandRunner.installedCopy(in: folder), currentDirectory: folder.url, timeout: 60
        )
        #expect(result.exitCode == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("trusting a CA made in memory for this run"))
        #expect(result.stdout.contains("demo: all 14 checks passed"), "\(result.stdout)")
        #expect(!result.stdout.contains("keys-example") && !result.stderr.contains("keys-example"))
    }

    @Test("demo --tokens 500 exits 0 and its timeline reaches every milestone, in order")
    func run() throws {
        let result = try CommandRunner.run(["demo", "--tokens", "500"])
        #expect(result.exitCode == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.isEmpty)
        let out = result.stdout
        // Each milestone is a device event, a handler's note, a server verdict or a passed check.
        let milestones = [
            "200 alert apns-id",
            "app     open-message: opened message M-1001 (tap, app inactive)",
            "handled the response to",
            "ok     tap handled by open-message",
            "200 background apns-id",
            "app     inbox-sync: fetched 3 new messages",
            "with newData",
            "ok     silent handlers inbox-sync + badge-count returned newData",
            "service extension of com.example.forgepush completed for",
            #"added to the notification list: "From Bob" "The keys are under the mat""#,
            #"ok     rewritten title "From Bob" shown"#,
            "(DeliveryAttributes) started for com.example.forgepush",
            "ignored: timestamp",
            "Live Activity activity-1 ended",
            "ok     stale update ignored; applied states preparing -> on the way -> delivered",
            "ok     Live Activity ended",
            "launched by the user opening notification",
            "scene connected with the response to",
            "app     scene: connected with the response to message M-2002",
            "routed to com.example.forgepush's VisiblePushRouter",
            "app     open-message: opened message M-2002 (tap, app inactive)",
            "ok     the scene got the response first, then open-message",
            "ok     didReceive ran with the app inactive; the app is active afterwards",
            "Live Activity activity-2 subscribed to channel",
            "200 liveactivity apns-request-id",
            "received on channel",
            "Live Activity activity-2 updated",
            "ok     stale update ignored; applied states preparing -> on the way",
            "7. iOS's rules: an offline phone gets the last of three pushes",
            "stored (device offline): the device is offline",
            "delivered from storage",
            "sender's lint: LA007: a priority-10 update",
            "throttled (live activity budget): update ignored: the activity's priority-10 budget is spent",
            "ok     offline: the first two replaced in storage, the last delivered from storage and shown",
            "ok     priority 10: 10 updates applied, the 2 beyond the budget throttled",
            "410 Unregistered alert apns-id",
            "judged 500 requests: 495 x 200, 5 x 410 Unregistered",
            "0 of the 495 accepted pushes reached this simulated device: the bulk's tokens are made up and belong to no app on it",
            "bulk summary: 500 tokens: 495 accepted, 5 rejected (Unregistered 5), 0 failed, 0 not sent",
            "notifications/s, elapsed",
            "ok     bulk: 495 accepted + 5 Unregistered",
            "demo: all 14 checks passed",
        ]
        var from = out.startIndex
        for milestone in milestones {
            guard let found = out.range(of: milestone, range: from..<out.endIndex) else {
                Issue.record("missing, or out of order: \(milestone)\n\(out)")
                return
            }
            from = found.upperBound
        }
        #expect(!out.contains("FAILED"))
        // The app's state says it is the app's; absolute times are ISO 8601 dates, never seconds since 1970.
        #expect(out.contains("device: com.example.forgepush (app in background), token"))
        #expect(out.contains(try Regex(#"updated \(timestamp 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z\)"#)))
        #expect(out.contains(try Regex(#"unregistered at 20\d\d-\d\d-\d\dT[0-9:.]+Z"#)))
        #expect(!out.contains(try Regex(#"\b1[0-9]{9}\b"#)), "a raw epoch number in the output")
        // The rate says which build measured it, and where real figures come from.
        #if DEBUG
        if CommandRunner.testsARelease {
            #expect(out.contains("(a release build, with the whole stack in one process"))
        } else {
            #expect(out.contains("notifications/s, elapsed") && out.contains("(a debug build, with the whole stack in one process; "
                                                                              + "for real figures run `swift run -c release apns-bench bulk"))
        }
        #else
        #expect(out.contains("(a release build, with the whole stack in one process"))
        #endif
        // Every timeline line carries its offset.
        let lines = out.split(separator: "\n").filter { $0.contains(" server  ") || $0.contains(" device  ") || $0.contains(" app     ") }
        #expect(lines.count > 20)
        #expect(lines.allSatisfy { $0.trimmingCharacters(in: .whitespaces).hasPrefix("+") && $0.contains(" ms  ") })
        // No secret leaks: no provider token (a JWT starts with eyJ) and no key.
        #expect(!out.contains("eyJ"))
        #expect(!out.contains("PRIVATE KEY"))
    }
}
