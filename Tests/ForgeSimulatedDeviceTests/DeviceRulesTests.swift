import ForgeNotificationTypes
import ForgeSimulatedDevice
import Foundation
import Testing

/// A countdown whose content state holds a `Date`, as ActivityKit apps declare it.
struct Countdown: Codable, Sendable, Equatable {
    var title: String
    var eta: Date
}

@Suite("Device rules: budgets, storage while offline, tokens, dates, each with its event")
struct DeviceRulesTests {
    let clock = ManualDeviceClock(now: Fixture.start)
    var now: Int { Int(self.clock.now.timeIntervalSince1970) }

    private static func iso(_ date: Date) -> String { date.formatted(Date.ISO8601FormatStyle()) }

    /// A push with headers (priority, expiration) as the loopback hands them over.
    private func push(
        _ json: String, token: String = Fixture.sandboxToken, pushType: String = "alert", apnsID: String, headers: [String: String] = [:]
    ) -> DevicePush {
        DevicePush(token: token, pushType: pushType, headers: headers, payload: Array(json.utf8), apnsID: apnsID, date: self.clock.now)
    }

    private func update(_ activity: LiveActivity, apnsID: String, priority: Int = 10) -> DevicePush {
        self.push(
            #"{"aps":{"event":"update","timestamp":\#(self.now),"content-state":{"status":"on the way","eta":10}}}"#,
            token: activity.updateToken, pushType: "liveactivity", apnsID: apnsID, headers: ["apns-priority": String(priority)]
        )
    }

    private func start(apnsID: String, token: String = Fixture.pushToStartToken) -> DevicePush {
        self.push(
            #"{"aps":{"event":"start","timestamp":\#(self.now),"attributes-type":"PizzaDeliveryAttributes","#
                + #""attributes":{"pizzaName":"Margherita"},"content-state":{"status":"baking","eta":20}}}"#,
            token: token, pushType: "liveactivity", apnsID: apnsID, headers: ["apns-priority": "10"]
        )
    }

    private func activity(on device: SimulatedDevice, app: SimulatedApp = Fixture.app()) throws -> LiveActivity {
        device.install(app)
        return try device.requestActivity(
            bundleID: Fixture.bundleID, attributesType: "PizzaDeliveryAttributes",
            contentState: .object(["status": .string("baking"), "eta": .number(20)])
        )
    }

    private func lastDelivery(_ device: SimulatedDevice, _ apnsID: String) -> String? {
        device.timeline.last { if case .delivery(apnsID, _, _) = $0.event { true } else { false } }?.event.description
    }

    // MARK: Live Activity budgets

    @Test("priority 10 spends the activity's budget: the 11th in an hour is throttled and not applied; priority 5 is free; the window rolls")
    func liveActivityBudget() async throws {
        let device = Fixture.device(clock: self.clock)
        let activity = try self.activity(on: device)
        for index in 1...10 { await device.deliver(self.update(activity, apnsID: "U-\(index)")) }
        #expect(device.liveActivity(activity.id)?.history.count == 11)

        await device.deliver(self.update(activity, apnsID: "U-11"))
        #expect(device.liveActivity(activity.id)?.history.count == 11, "a throttled update is not applied")
        #expect(device.delivery(apnsID: "U-11")?.state == .throttled(.liveActivityBudget))
        #expect(
            self.lastDelivery(device, "U-11")
                == "push U-11 throttled (live activity budget): update ignored: the activity's priority-10 budget is spent (10 in the last hour); send priority 5 or enable frequent updates"
        )

        await device.deliver(self.update(activity, apnsID: "U-12", priority: 5))
        #expect(device.liveActivity(activity.id)?.history.count == 12, "priority 5 spends no budget")
        #expect(device.delivery(apnsID: "U-12")?.state == .delivered)

        self.clock.advance(by: 3_600)
        await device.deliver(self.update(activity, apnsID: "U-13"))
        #expect(device.delivery(apnsID: "U-13")?.state == .delivered, "an hour later the budget is back")
    }

    @Test("an app with frequent updates gets the larger budget; the budgets are values on the device")
    func frequentUpdates() async throws {
        let device = Fixture.device(clock: self.clock)
        let app = Fixture.app()
        app.supportsFrequentUpdates = true
        device.rules.frequentLiveActivityUpdates = .perHour(15)
        let activity = try self.activity(on: device, app: app)
        for index in 1...15 { await device.deliver(self.update(activity, apnsID: "F-\(index)")) }
        #expect(device.deliveryLog.allSatisfy { $0.state == .delivered })
        await device.deliver(self.update(activity, apnsID: "F-16"))
        #expect(
            self.lastDelivery(device, "F-16")
                == "push F-16 throttled (live activity budget): update ignored: the activity's priority-10 budget is spent (15 in the last hour, frequent updates on); send priority 5"
        )
    }

    @Test("push-to-start: 10 starts in the window, the 11th dropped; a later one starts")
    func pushToStartWindow() async throws {
        let device = Fixture.device(clock: self.clock)
        device.install(Fixture.app())
        for index in 1...10 { await device.deliver(self.start(apnsID: "S-\(index)")) }
        #expect(device.liveActivities.count == 10)
        await device.deliver(self.start(apnsID: "S-11"))
        #expect(device.liveActivities.count == 10)
        #expect(
            self.lastDelivery(device, "S-11")
                == "push S-11 throttled (push to start budget): start ignored: com.example.tasks's push-to-start budget is spent (10 in the last hour); iOS drops starts beyond it, so retry later with the same apns-collapse-id"
        )
        self.clock.advance(by: 3_601)
        await device.deliver(self.start(apnsID: "S-12"))
        #expect(device.liveActivities.count == 11)
    }

    @Test("a rotated push-to-start token: pushes to the old one reach no activity, the new one starts")
    func rotatedToken() async throws {
        let device = Fixture.device(clock: self.clock)
        device.install(Fixture.app())
        let new = try device.rotatePushToStartToken(of: Fixture.bundleID)
        #expect(new != Fixture.pushToStartToken && device.app(Fixture.bundleID)?.pushToStartToken == new)
        await device.deliver(self.start(apnsID: "R-1"))
        #expect(device.liveActivities.isEmpty)
        #expect(device.delivery(apnsID: "R-1")?.state == .discarded(.tokenUnregistered))
        #expect(
            self.lastDelivery(device, "R-1")
                == "push R-1 discarded (token unregistered): com.example.tasks rotated its push-to-start token; this one is no longer registered on the device (send to the new one)"
        )
        await device.deliver(self.start(apnsID: "R-2", token: new))
        #expect(device.liveActivities.count == 1)
    }

    // MARK: Offline

    @Test("offline: APNs stores the last push per app (the earlier one discarded as replaced) and delivers it on reconnect")
    func offlineStoresTheLast() async throws {
        let device = Fixture.device(clock: self.clock)
        device.install(Fixture.app())
        device.goOffline()
        #expect(!device.isOnline)
        let later = ["apns-expiration": String(self.now + 3_600)]
        await device.deliver(self.push(#"{"aps":{"alert":"first"}}"#, apnsID: "O-1", headers: later))
        await device.deliver(self.push(#"{"aps":{"alert":"second"}}"#, apnsID: "O-2"))
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
        #expect(
            self.lastDelivery(device, "O-1")
                == "push O-1 discarded (replaced in storage): replaced by push O-2: APNs stores one push per app while the device is offline, the last"
        )
        #expect(
            self.lastDelivery(device, "O-2")
                == "push O-2 stored (device offline): the device is offline: APNs keeps the last push for com.example.tasks until it reconnects"
        )
        #expect(!device.timeline.contains { if case .pushReceived = $0.event { true } else { false } }, "nothing reached the phone")

        await device.goOnline()
        #expect(device.notificationList(for: Fixture.bundleID).map(\.request.content.body) == ["second"])
        #expect(device.delivery(apnsID: "O-2")?.state == .deliveredFromStorage)
        #expect(device.deliveryLog.filter { $0.apnsID == "O-2" }.map(\.state) == [.stored, .deliveredFromStorage])
    }

    @Test("offline: apns-expiration 0 is now or never; a stored push whose expiration passes is discarded on reconnect")
    func offlineExpiration() async throws {
        let device = Fixture.device(clock: self.clock)
        device.install(Fixture.app())
        device.goOffline()
        await device.deliver(self.push(#"{"aps":{"alert":"now"}}"#, apnsID: "E-1", headers: ["apns-expiration": "0"]))
        #expect(
            self.lastDelivery(device, "E-1")
                == "push E-1 discarded (expired): apns-expiration is 0 (now or never) and the device is offline: APNs does not store it"
        )
        let expiry = self.clock.now.addingTimeInterval(600)
        await device.deliver(self.push(#"{"aps":{"alert":"soon"}}"#, apnsID: "E-2", headers: ["apns-expiration": String(self.now + 600)]))
        #expect(device.delivery(apnsID: "E-2")?.state == .stored)
        self.clock.advance(by: 601)
        await device.goOnline()
        #expect(device.notificationList(for: Fixture.bundleID).isEmpty)
        #expect(
            self.lastDelivery(device, "E-2")
                == "push E-2 discarded (expired): apns-expiration \(Self.iso(expiry)) passed while the device was offline"
        )
        // Online, apns-expiration 0 is delivered: APNs tries once, and the device is there.
        await device.deliver(self.push(#"{"aps":{"alert":"now"}}"#, apnsID: "E-3", headers: ["apns-expiration": "0"]))
        #expect(device.delivery(apnsID: "E-3")?.state == .delivered)
    }

    @Test("a broadcast is logged only on a phone whose Live Activity listens to its channel; offline, it is stored per channel")
    func broadcasts() async throws {
        let device = Fixture.device(clock: self.clock)
        let activity = try self.activity(on: device)
        try device.subscribe(activity.id, toChannel: "dGVhbS1h")
        let update = #"{"aps":{"event":"update","timestamp":\#(self.now),"content-state":{"status":"on the way","eta":10}}}"#
        await device.deliver(DevicePush.broadcast(channelID: "b3RoZXI=", payload: Array(update.utf8), apnsID: "BC-1", date: self.clock.now))
        #expect(device.delivery(apnsID: "BC-1") == nil, "not this phone's broadcast")
        await device.deliver(DevicePush.broadcast(channelID: "dGVhbS1h", payload: Array(update.utf8), apnsID: "BC-2", date: self.clock.now))
        #expect(device.delivery(apnsID: "BC-2")?.state == .delivered)
        device.goOffline()
        await device.deliver(DevicePush.broadcast(channelID: "dGVhbS1h", payload: Array(update.utf8), apnsID: "BC-3", date: self.clock.now))
        #expect(device.delivery(apnsID: "BC-3")?.state == .stored)
        await device.goOnline()
        #expect(device.delivery(apnsID: "BC-3")?.state == .deliveredFromStorage)
        #expect(device.liveActivity(activity.id)?.history.count == 3)
    }

    // MARK: Notification list

    @Test("the view sorts the notification list by relevance score, highest first, then newest first")
    func relevanceOrder() async throws {
        let device = Fixture.device(clock: self.clock)
        device.install(Fixture.app())
        for (id, score) in [("N-1", "0.2"), ("N-2", nil), ("N-3", "0.9"), ("N-4", nil)] {
            let relevance = score.map { #","relevance-score":\#($0)"# } ?? ""
            await device.deliver(self.push(#"{"aps":{"alert":"\#(id)"\#(relevance)}}"#, apnsID: id))
            self.clock.advance(by: 1)
        }
        #expect(device.view(token: Fixture.sandboxToken).notifications.map(\.apnsID) == ["N-3", "N-1", "N-4", "N-2"])
    }

    // MARK: Background and widgets

    @Test("background pushes: 3 an hour by default, the excess throttled; the allowance is configurable; a force-quit app gets none")
    func backgroundAllowance() async throws {
        let device = Fixture.device(clock: self.clock)
        let app = Fixture.app()
        device.install(app)
        let sync = #"{"aps":{"content-available":1},"type":"task_sync"}"#
        for index in 1...3 { await device.deliver(self.push(sync, pushType: "background", apnsID: "B-\(index)", headers: ["apns-priority": "5"])) }
        await device.deliver(self.push(sync, pushType: "background", apnsID: "B-4", headers: ["apns-priority": "5"]))
        #expect(
            self.lastDelivery(device, "B-4")
                == "push B-4 throttled (background budget): background push not delivered: com.example.tasks's background allowance is spent (3 in the last hour); iOS throttles background pushes (Apple: no more than two or three an hour)"
        )
        #expect(!device.timeline.contains { $0.event == .backgroundDeliveryStarted(bundleID: Fixture.bundleID, apnsID: "B-4", payload: try! JSONValue(parsing: Array(sync.utf8))) })
        device.rules.backgroundPushes = .perHour(4)
        await device.deliver(self.push(sync, pushType: "background", apnsID: "B-5"))
        #expect(device.delivery(apnsID: "B-5")?.state == .delivered)

        app.forceQuit()
        self.clock.advance(by: 3_600)
        await device.deliver(self.push(sync, pushType: "background", apnsID: "B-6"))
        #expect(
            self.lastDelivery(device, "B-6")
                == "push B-6 discarded (force quit): the user force-quit com.example.tasks: iOS does not launch it for background pushes"
        )
    }

    @Test("widget pushes reload the widget within a daily budget of 40")
    func widgetBudget() async throws {
        let device = Fixture.device(clock: self.clock)
        device.install(Fixture.app())
        let changed = #"{"aps":{"content-changed":true}}"#
        for index in 1...40 { await device.deliver(self.push(changed, pushType: "widgets", apnsID: "W-\(index)")) }
        #expect(device.events.filter { if case .widgetReloaded = $0 { true } else { false } }.count == 40)
        #expect(device.events.contains(.widgetReloaded(bundleID: Fixture.bundleID, apnsID: "W-1")))
        await device.deliver(self.push(changed, pushType: "widgets", apnsID: "W-41"))
        #expect(!device.events.contains(.widgetReloaded(bundleID: Fixture.bundleID, apnsID: "W-41")))
        #expect(
            self.lastDelivery(device, "W-41")
                == "push W-41 throttled (widget budget): widget reload skipped: com.example.tasks's widget reload budget is spent (40 in the last 24 hours); WidgetKit spreads a widget's reloads over the day"
        )
        self.clock.advance(by: 86_400)
        await device.deliver(self.push(changed, pushType: "widgets", apnsID: "W-42"))
        #expect(device.events.contains(.widgetReloaded(bundleID: Fixture.bundleID, apnsID: "W-42")))
    }

    // MARK: Discarded

    @Test("discarded: notifications turned off (disabled), an uninstalled app's token; delivered otherwise")
    func discarded() async throws {
        let device = Fixture.device(clock: self.clock)
        let app = Fixture.app(authorization: .denied)
        device.install(app)
        await device.deliver(self.push(#"{"aps":{"alert":"hi"}}"#, apnsID: "D-1"))
        #expect(
            self.lastDelivery(device, "D-1")
                == "push D-1 discarded (disabled): the user turned notifications off for com.example.tasks; APNs and the app get no error"
        )
        app.authorization = .granted
        await device.deliver(self.push(#"{"aps":{"alert":"hi"}}"#, apnsID: "D-2"))
        #expect(self.lastDelivery(device, "D-2") == "push D-2 delivered")
        device.uninstall(Fixture.bundleID)
        await device.deliver(self.push(#"{"aps":{"alert":"hi"}}"#, apnsID: "D-3"))
        #expect(self.lastDelivery(device, "D-3") == "push D-3 discarded (app uninstalled): com.example.tasks was uninstalled from the device")
    }

    // MARK: Content-state dates

    private func countdownDevice() -> (SimulatedDevice, LiveActivity) {
        let device = Fixture.device(clock: self.clock)
        device.install(
            SimulatedApp(
                bundleID: Fixture.bundleID, deviceTokens: [.sandbox: Fixture.sandboxToken],
                activityTypes: [LiveActivityType(attributesType: "Countdown", contentState: Countdown.self)]
            )
        )
        let activity = try! device.requestActivity(
            bundleID: Fixture.bundleID, attributesType: "Countdown",
            contentState: .object(["title": .string("Pickup"), "eta": .number(self.clock.now.timeIntervalSinceReferenceDate)])
        )
        return (device, activity)
    }

    private func update(_ activity: LiveActivity, encoded state: Countdown, with encoder: JSONEncoder, apnsID: String) throws -> DevicePush {
        let contentState = String(decoding: try encoder.encode(state), as: UTF8.self)
        return self.push(
            #"{"aps":{"event":"update","timestamp":\#(self.now),"content-state":\#(contentState)}}"#,
            token: activity.updateToken, pushType: "liveactivity", apnsID: apnsID, headers: ["apns-priority": "5"]
        )
    }

    @Test("differential: content states JSONEncoder encodes by default decode to the same dates on the device, with no event")
    func contentStateDatesRoundTrip() async throws {
        let (device, activity) = self.countdownDevice()
        for (index, offset) in ([0, 90, 3_600, -86_400, 200 * 86_400, 0.5] as [TimeInterval]).enumerated() {
            let state = Countdown(title: "Pickup", eta: self.clock.now.addingTimeInterval(offset))
            await device.deliver(try self.update(activity, encoded: state, with: JSONEncoder(), apnsID: "C-\(index)"))
            let shown = try JSONDecoder().decode(Countdown.self, from: try #require(device.liveActivity(activity.id)?.current?.contentState.jsonData))
            #expect(shown == state, "the device shows what the sender encoded")
        }
        #expect(!device.events.contains { if case .contentStateDateMisread = $0 { true } else { false } })
    }

    @Test("a content-state Date sent as Unix seconds: the update applies and an event says the date the app would show, and why")
    func contentStateDatesUnixSeconds() async throws {
        let (device, activity) = self.countdownDevice()
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        let eta = self.clock.now.addingTimeInterval(3_600)
        await device.deliver(try self.update(activity, encoded: Countdown(title: "Pickup", eta: eta), with: encoder, apnsID: "C-unix"))
        let unix = eta.timeIntervalSince1970
        let shown = Date(timeIntervalSinceReferenceDate: unix)
        let event = try #require(device.events.first { if case .contentStateDateMisread = $0 { true } else { false } })
        #expect(event == .contentStateDateMisread(apnsID: "C-unix", field: "eta", shows: shown, reason: event.reason))
        #expect(
            event.description
                == "Live Activity push C-unix: content-state.eta would show \(Self.iso(shown)), 31 years after the push's timestamp \(Self.iso(self.clock.now)): "
                + "\(Int(unix)) looks like Unix seconds (\(Self.iso(eta))); a Date decoded with JSONDecoder's default reads seconds since 2001-01-01 "
                + "and shows \(Self.iso(shown)): send \(Int(unix) - 978_307_200)"
        )
        #expect(device.liveActivity(activity.id)?.history.count == 2, "the app shows the wrong date; the update is applied")

        device.rules.contentStateDateTolerance = nil
        await device.deliver(try self.update(activity, encoded: Countdown(title: "Pickup", eta: eta), with: encoder, apnsID: "C-off"))
        #expect(!device.events.contains { if case .contentStateDateMisread("C-off", _, _, _) = $0 { true } else { false } })
    }
}

extension DeviceEvent {
    /// The reason of a ``contentStateDateMisread(apnsID:field:shows:reason:)``.
    fileprivate var reason: String {
        if case .contentStateDateMisread(_, _, _, let reason) = self { return reason }
        return ""
    }
}
