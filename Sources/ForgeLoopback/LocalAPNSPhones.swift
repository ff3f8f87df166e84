public import ForgeSimulatedDevice
internal import ForgeNotificationTypes
internal import ForgeAPNsCore
internal import ForgeHTTP2
internal import ForgeSupport
package import struct Foundation.Date
public import Metrics
public import Logging

/// A simulated phone for every device token that an accepted push reaches, for a server that has no
/// devices of its own (`apnsctl serve`): what each push would do on an iPhone, with the rules the
/// `SimulatedDevice` follows (notification list, collapse-id replacement, badges, Live Activities
/// started, updated and ended with older timestamps ignored, broadcasts to subscribed activities).
///
/// Each phone has one app per bundle id (the topic without its push-type suffix) that installs no
/// handlers: background pushes complete at once, alerts are shown as sent. Live Activities:
/// - a `start` to a token makes it the app's push-to-start token; the activity gets an update
///   token of its own (`DeviceView.Activity.pushToken`), to which its updates go, as on iOS;
/// - an `update` or `end` to a token that is neither is taken for an activity the app started
///   itself (`Activity.request`) and reported to its server with that token.
///
/// Each phone applies `DeviceRules` (budgets, with the defaults unless given) and keeps a delivery
/// log: what became of each push (``delivery(of:)``), counted by state in swift-metrics as
/// `apns_local_deliveries_total{state, reason}`.
///
/// At most `maximumPhones` phones are kept (the least recently changed go first), each with a
/// bounded timeline and notification list: a long-running server does not grow with its traffic.
public final class LocalAPNSPhones: Sendable {
    /// One phone in ``phones``.
    package struct Summary: Sendable, Hashable {
        package var token: String
        package var apps: [String]
        package var notifications: Int
        package var liveActivities: Int
        package var updatedAt: Date
    }

    private struct Phone {
        var device: SimulatedDevice
        var token: String
        var updatedAt: Date
    }

    private struct State {
        var phones: [String: Phone] = [:]
        /// Live Activity update tokens to the phone (its own token) that issued them.
        var issued: [String: String] = [:]
        var skipped = 0
        /// Phones made by ``create(apps:)`` so far.
        var created = 0
    }

    private let environment: LocalAPNSConfiguration.Environment
    /// Where the apps of phones made by ``create(apps:asksBeforeActivities:)`` post their Live
    /// Activity token reports; `nil`: they report nothing.
    private let reports: (@Sendable (ActivityTokenReport) -> Void)?
    /// What the apps of created phones decode, by attributes type (`apnsctl serve --activity-type`).
    private let contracts: [String: LiveActivityContract]
    private let maximumPhones: Int
    private let rules: DeviceRules
    private let state = LockedBox(State())
    private let changes = Fanout<String>()
    /// `apns_local_deliveries_total` per state and reason, made once.
    private let deliveries: [String: Counter]

    /// Creates an empty set of phones.
    /// - Parameters:
    ///   - environment: the environment the server plays (the phones' tokens belong to it).
    ///   - maximumPhones: the most phones kept.
    ///   - rules: the budgets and limits each phone applies.
    ///   - metrics: where the delivery counters come from; the bootstrapped factory by default.
    public convenience init(
        environment: LocalAPNSConfiguration.Environment = .sandbox, maximumPhones: Int = 1_000, rules: DeviceRules = DeviceRules(),
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.init(environment: environment, maximumPhones: maximumPhones, rules: rules, metrics: metrics, reports: nil)
    }

    /// Creates an empty set of phones whose created phones' apps post their Live Activity token
    /// reports to `reports` (`apnsctl serve --report-tokens-to`).
    /// - Parameters:
    ///   - environment: the environment the server plays (the phones' tokens belong to it).
    ///   - maximumPhones: the most phones kept.
    ///   - rules: the budgets and limits each phone applies.
    ///   - metrics: where the delivery counters come from.
    ///   - reports: takes each report of the apps of phones made by ``create(apps:asksBeforeActivities:)``,
    ///     in the order each app posts them; called on the delivering task, so it must return at once.
    ///   - contracts: what those apps decode, by attributes type: a Live Activity push of a type
    ///     with a contract whose content state does not decode is discarded as `decoding_failed`.
    package init(
        environment: LocalAPNSConfiguration.Environment = .sandbox, maximumPhones: Int = 1_000, rules: DeviceRules = DeviceRules(),
        metrics: any MetricsFactory = MetricsSystem.factory, reports: (@Sendable (ActivityTokenReport) -> Void)?,
        contracts: [String: LiveActivityContract] = [:]
    ) {
        self.environment = environment
        self.reports = reports
        self.contracts = contracts
        self.maximumPhones = max(1, maximumPhones)
        self.rules = rules
        let states: [DeliveryState] = [.delivered, .stored, .deliveredFromStorage]
            + DeliveryState.DiscardReason.allCases.map { .discarded($0) } + DeliveryState.ThrottleReason.allCases.map { .throttled($0) }
        var counters: [String: Counter] = [:]
        for state in states {
            counters[Self.counterKey(state)] = Counter(
                label: "apns_local_deliveries_total", dimensions: [("state", state.name), ("reason", state.cause ?? "")], factory: metrics
            )
        }
        self.deliveries = counters
    }

    private static func counterKey(_ state: DeliveryState) -> String { state.name + "/" + (state.cause ?? "") }

    /// Counts the state the push with `apnsID` reached on `device`.
    private func count(_ apnsID: String, on device: SimulatedDevice) {
        guard let record = device.delivery(apnsID: apnsID) else { return }
        self.deliveries[Self.counterKey(record.state)]?.increment()
    }

    /// What became of an accepted device push on its phone (its latest delivery state); `nil` for a
    /// rejected request, a broadcast, or a push the phones have not taken yet (or forgot).
    public func delivery(of entry: LocalAPNSInboxEntry) -> DeliveryRecord? {
        guard entry.isAccepted, let token = entry.decision.target.token?.lowercased() else { return nil }
        let phone = self.state.withLock { state in state.phones[token] ?? state.issued[token].flatMap { state.phones[$0] } }
        return phone?.device.delivery(apnsID: entry.apnsID)
    }

    /// Delivers every accepted push the inbox records to its phone, in order, until the inbox is
    /// closed (the server's shutdown closes it); a clear of the inbox clears the phones.
    ///
    /// The phones read the inbox in batches of at most `batch` requests, woken once per batch rather
    /// than once per request. A full batch means a flood: the phones then pause for `pause` before the
    /// next one and take its newest `batch` requests, skipping (and counting, ``skippedRequests``)
    /// the rest, so a flood of pushes costs the server a bounded share of the CPU and no memory; the
    /// inbox keeps every request all the same. By default at most 1,000 pushes a second reach the
    /// phones during a flood (250 every 250 ms): `apns-bench server --inbox` measured the server at
    /// 0.83× the rate without the inbox with a 100 ms pause, 0.90× with this one
    /// (docs/benchmark-history.md).
    ///
    /// A push whose delivery takes longer than `slowDelivery` is logged at `warning` with its
    /// apns-id (once, while it lasts), so a phone never stays stuck unseen.
    public func run(
        _ inbox: LocalAPNSInbox, batch: Int = 250, pause: Duration = .milliseconds(250), slowDelivery: Duration = .seconds(5),
        logger: Logger = Logger(label: "forgepush.phones")
    ) async {
        let watch = DeliveryWatch(limit: slowDelivery)
        await withDiscardingTaskGroup { group in
            group.addTask {
                // One look a second (at most a fifth of the limit): cheap, and late by at most that.
                let period = min(.seconds(1), slowDelivery / 5)
                while !Task.isCancelled {
                    try? await Task.sleep(for: period)
                    if let slow = watch.overdue(now: .now) {
                        logger.warning(
                            "a phone has been delivering one push for over \(slow.elapsed)", metadata: ["apns-id": "\(slow.apnsID)"]
                        )
                    }
                }
            }
            await self.follow(inbox, batch: batch, pause: pause, watch: watch)
            group.cancelAll()
        }
    }

    /// ``run(_:batch:pause:slowDelivery:logger:)``'s loop: reads the inbox as its doorbell rings.
    private func follow(_ inbox: LocalAPNSInbox, batch: Int, pause: Duration, watch: DeliveryWatch) async {
        // Subscribed first: a record after the reading below rings it. What the inbox holds already
        // is delivered first. The doorbell keeps one unread ring, never ends before the inbox closes.
        var changes = inbox.changes().makeAsyncIterator()
        var last = 0
        var clears = inbox.entries(after: .max, limit: 0).clears
        var first = true
        while true {
            if !first, await changes.next() == nil { break }
            first = false
            while !Task.isCancelled {
                let next = inbox.entries(after: last, limit: batch)
                if next.clears != clears {
                    clears = next.clears
                    self.clear()
                } else if next.skipped > 0 {
                    self.state.withLock { $0.skipped += next.skipped }
                }
                guard let newest = next.entries.last else { break }
                for entry in next.entries {
                    watch.begin(entry.apnsID, at: .now)
                    await self.deliver(entry)
                }
                watch.end()
                last = newest.sequence
                guard next.entries.count == batch else { continue }
                try? await Task.sleep(for: pause)
            }
        }
    }

    /// How many judged requests the phones skipped because they fell behind (see ``run(_:batch:pause:slowDelivery:logger:)``).
    public var skippedRequests: Int { self.state.withLock { $0.skipped } }

    /// Delivers one judged request when it is an accepted push (device or broadcast).
    public func deliver(_ entry: LocalAPNSInboxEntry) async {
        guard entry.isAccepted, entry.decision.target.isPush else { return }
        let date = entry.date
        if case .broadcast(_, let channel) = entry.decision.target {
            let push = DevicePush.broadcast(channelID: channel, payload: entry.body, apnsID: entry.apnsID, date: date)
            let phones = self.state.withLock { Array($0.phones.values) }
            for phone in phones where phone.device.liveActivities.contains(where: { $0.channelID == channel }) {
                await phone.device.deliver(push)
                self.count(push.apnsID, on: phone.device)
                self.touched(phone.token, at: date)
            }
            return
        }
        guard let token = entry.decision.target.token else { return }
        let pushType = entry.pushType ?? "alert"
        let bundleID = APNSJudge.bundleID(of: entry.topic ?? "", pushType: entry.decision.pushType ?? .alert)
        let (phone, isIssued) = self.phone(for: token, at: date)
        let device = phone.device
        var headers: [String: String] = [:]
        for header in entry.headers where header.name != "authorization" { headers[header.name] = header.value }
        let push = DevicePush(
            token: token, pushType: pushType, headers: headers, payload: entry.body, apnsID: entry.apnsID,
            collapseID: entry.collapseID, environment: self.environment == .sandbox ? .sandbox : .production, date: date
        )
        if device.app(bundleID) == nil, device.wasUninstalled(bundleID) {
            // Uninstalled by the person (the inbox's `uninstall` action): not installed again by a push.
            device.discardForUninstalledApp(push, bundleID: bundleID)
            self.count(push.apnsID, on: device)
            self.touched(phone.token, at: date)
            return
        }
        let app = device.app(bundleID) ?? self.install(bundleID, token: phone.token, on: device)
        if pushType == "liveactivity", !isIssued {
            // Read here only for Live Activities (the device reads every payload itself).
            let aps = (try? JSONValue(parsing: entry.body))?["aps"]
            let event = aps?["event"]?.stringValue
            let typeName = aps?["attributes-type"]?.stringValue ?? "LiveActivity"
            if event == "start" {
                app.pushToStartToken = token
                app.registerActivityType(LiveActivityType(attributesType: typeName) { _ in })
            } else if app.pushToStartToken != token, !device.liveActivities.contains(where: { $0.updateToken == token }) {
                // An activity the app started itself and reported with this token.
                app.registerActivityType(LiveActivityType(attributesType: typeName) { _ in })
                _ = try? device.requestActivity(
                    bundleID: bundleID, attributesType: typeName, attributes: aps?["attributes"] ?? .object([:]),
                    contentState: aps?["content-state"] ?? .object([:]), updateToken: token,
                    startedAt: aps?["timestamp"]?.doubleValue.map { Date(timeIntervalSince1970: $0) }
                )
            }
        }
        await device.deliver(push)
        self.count(push.apnsID, on: device)
        self.touched(phone.token, at: date)
    }

    /// An app to install on a phone made by ``create(apps:)``.
    package struct NewApp: Sendable, Hashable {
        package var bundleID: String
        /// The Live Activity attributes types it registers, each with a push-to-start token.
        package var attributesTypes: [String]

        package init(bundleID: String, attributesTypes: [String]) {
            self.bundleID = bundleID
            self.attributesTypes = attributesTypes
        }
    }

    /// A phone made by ``create(apps:asksBeforeActivities:)``: its device token, and each app's
    /// push-to-start token (one per app, for all its attributes types, as on iOS). The device token
    /// is also the `installation` its apps' token reports name.
    package struct Created: Sendable, Hashable {
        package var token: String
        package var pushToStartTokens: [String: String]
    }

    /// Makes a phone with `apps` installed before any push reaches it, as a test in another language
    /// needs to start from an installed app: a new device token, and a push-to-start token for each
    /// app that registers an attributes type. A start to that token starts an activity on this phone,
    /// which then shows with its own update token (after the person's Allow when
    /// `asksBeforeActivities`, see `SimulatedDevice.asksBeforeActivities`). A content state is
    /// decoded against the attributes type's contract when the phones have one, else any is
    /// accepted (no app type to decode it with). With reports configured, each app reports its
    /// tokens with the phone's device token as its installation id.
    package func create(apps: [NewApp], asksBeforeActivities: Bool = false) -> Created {
        let (token, pushToStart) = self.state.withLock { state -> (String, [String: String]) in
            state.created += 1
            var generator = DeviceTokenGenerator(seed: Self.seed("created-\(state.created)"))
            let token = generator.next()
            var pushToStart: [String: String] = [:]
            for app in apps where !app.attributesTypes.isEmpty { pushToStart[app.bundleID] = generator.next() }
            return (token, pushToStart)
        }
        let date = Date()
        let (phone, _) = self.phone(for: token, at: date)
        phone.device.asksBeforeActivities = asksBeforeActivities
        for app in apps {
            let startToken = pushToStart[app.bundleID]
            if let startToken { self.state.withLock { $0.issued[startToken] = token } }
            let installed = SimulatedApp(
                // The server's environment only: the app's reports name it.
                bundleID: app.bundleID, deviceTokens: [self.environment == .sandbox ? .sandbox : .production: token], pushToStartToken: startToken,
                activityTypes: app.attributesTypes.map { name in
                    self.contracts[name].map(LiveActivityType.init(contract:)) ?? LiveActivityType(attributesType: name) { _ in }
                }
            )
            if let reports = self.reports { installed.activityReporting = ActivityReporting(installation: token, post: reports) }
            // Installed with its reporting: the push-to-start token reports go out now.
            phone.device.install(installed)
        }
        self.touched(token, at: date)
        return Created(token: token, pushToStartTokens: pushToStart)
    }

    /// A person's action on the phone that `token` reaches (tapping Allow, say), given the device and
    /// the phone's own token, then what the phone shows; `nil` when no phone has the token.
    /// - Throws: what `action` throws.
    package func perform(on token: String, _ action: (SimulatedDevice, String) async throws -> Void) async rethrows -> DeviceView? {
        let token = token.lowercased()
        let phone = self.state.withLock { state in state.phones[token] ?? state.issued[token].flatMap { state.phones[$0] } }
        guard let phone else { return nil }
        try await action(phone.device, phone.token)
        self.touched(phone.token, at: Date())
        return phone.device.view(token: phone.token)
    }

    /// What the phone that `token` reaches shows now (the phone's own token, or an update token
    /// one of its Live Activities issued); `nil` when no push reached it.
    package func view(token: String) -> DeviceView? {
        let token = token.lowercased()
        let phone = self.state.withLock { state in state.phones[token] ?? state.issued[token].flatMap { state.phones[$0] } }
        return phone.map { $0.device.view(token: $0.token) }
    }

    /// The phones, most recently changed first.
    package var phones: [Summary] {
        let phones = self.state.withLock { Array($0.phones.values) }
        return phones.sorted { $0.updatedAt > $1.updatedAt }.map { phone in
            let view = phone.device.view(token: phone.token, events: 0)
            return Summary(
                token: phone.token, apps: view.apps, notifications: view.notifications.count,
                liveActivities: view.liveActivities.count, updatedAt: phone.updatedAt
            )
        }
    }

    /// Forgets every phone.
    public func clear() {
        self.state.withLock { state in
            state.phones.removeAll()
            state.issued.removeAll()
        }
    }

    /// The tokens of the phones whose view changed, as they change (see ``LocalAPNSInbox/events(buffer:)``
    /// for the buffering rule); ends with ``finish()``.
    package func updates(buffer: Int = 4_096) -> AsyncStream<String> {
        self.changes.subscribe(buffer: buffer)
    }

    /// Ends every stream of ``updates(buffer:)``.
    package func finish() {
        self.changes.finish()
    }

    // MARK: Phones

    /// The phone a push to `token` reaches, made when there is none; whether `token` is an update
    /// token a phone's Live Activity issued.
    private func phone(for token: String, at date: Date) -> (Phone, Bool) {
        let (found, evicted) = self.state.withLock { state -> ((Phone, Bool), Bool) in
            if let owner = state.issued[token], let phone = state.phones[owner] { return ((phone, true), false) }
            if let phone = state.phones[token] { return ((phone, false), false) }
            // Each phone's own clock: the system time, moved ahead by the phone's `advance_clock` actions.
            let device = SimulatedDevice(
                clock: OffsetSystemDeviceClock(), backgroundBudget: nil, rules: self.rules, activityTokenSeed: Self.seed(token), timelineRetention: 500,
                notificationRetention: 100
            )
            let phone = Phone(device: device, token: token, updatedAt: date)
            state.phones[token] = phone
            return ((phone, false), state.phones.count > self.maximumPhones + max(1, self.maximumPhones / 8))
        }
        if evicted { self.evict() }
        if !found.1 {
            // Update tokens the phone issues reach it from now on.
            _ = found.0.device.observeIssuedTokens { [weak self] issued, _ in
                self?.state.withLock { $0.issued[issued] = token }
            }
        }
        return found
    }

    /// Installs an app with no handlers whose device token is the phone's `token` (either environment).
    @discardableResult
    package func install(_ bundleID: String, token: String, on device: SimulatedDevice) -> SimulatedApp {
        let app = SimulatedApp(bundleID: bundleID, deviceTokens: [.sandbox: token, .production: token])
        device.install(app)
        return app
    }

    private func touched(_ token: String, at date: Date) {
        self.state.withLock { state in state.phones[token]?.updatedAt = date }
        self.changes.yield(token)
    }

    /// Drops the least recently changed phones down to the limit.
    private func evict() {
        self.state.withLock { state in
            let excess = state.phones.count - self.maximumPhones
            guard excess > 0 else { return }
            let oldest = state.phones.values.sorted { $0.updatedAt < $1.updatedAt }.prefix(excess).map(\.token)
            for token in oldest { state.phones[token] = nil }
            let gone = Set(oldest)
            state.issued = state.issued.filter { !gone.contains($0.value) }
        }
    }

    /// A seed per token: phones side by side issue different Live Activity update tokens.
    private static func seed(_ token: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in token.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}

extension DeviceView {
    /// The view as the inbox's JSON API gives it: `token`, `apps`, `badge` (the highest app badge,
    /// `null` when none), `badges`, `push_to_start_tokens` (per app that has one), `notifications`, `live_activities`, `channels`,
    /// `background_pushes`, `online`, `deliveries` (the delivery log, newest first: see
    /// ``DeliveryRecord/json``), `silent_pushes`, `events`; dates in ISO 8601 with milliseconds.
    package var json: [UInt8] {
        var writer = JSONObjectWriter()
        writer.field("token", self.token)
        writer.strings("apps", self.apps)
        writer.field("badge", self.badges.values.max())
        var badges = JSONObjectWriter()
        for (bundle, badge) in self.badges.sorted(by: { $0.key < $1.key }) { badges.field(bundle, badge) }
        writer.raw("badges", badges.finish())
        var starts = JSONObjectWriter()
        for (bundle, token) in self.pushToStartTokens.sorted(by: { $0.key < $1.key }) { starts.field(bundle, token) }
        writer.raw("push_to_start_tokens", starts.finish())
        writer.raw("notifications", JSONArrayWriter.array(self.notifications.map { notification in
            var item = JSONObjectWriter()
            item.field("apns_id", notification.apnsID)
            item.field("bundle_id", notification.bundleID)
            item.field("title", notification.title)
            item.field("subtitle", notification.subtitle)
            item.field("body", notification.body)
            item.field("thread_id", notification.threadID)
            item.field("collapse_id", notification.collapseID)
            item.field("badge", notification.badge)
            item.field("delivered_at", date: notification.deliveredAt)
            return item.finish()
        }))
        writer.raw("live_activities", JSONArrayWriter.array(self.liveActivities.map { activity in
            var item = JSONObjectWriter()
            item.field("id", activity.id)
            item.field("bundle_id", activity.bundleID)
            item.field("attributes_type", activity.attributesType)
            item.raw("attributes", Array(activity.attributes.jsonData))
            item.raw("content_state", Array(activity.contentState.jsonData))
            item.field("stale_date", date: activity.staleDate)
            item.field("dismissal_date", date: activity.dismissalDate)
            item.field("state", activity.state)
            item.field("updated_at", date: activity.updatedAt)
            // `null` while the activity awaits the person's permission: iOS issued no token yet.
            item.field("push_token", activity.pushToken.isEmpty ? nil : activity.pushToken)
            item.field("channel_id", activity.channelID)
            if activity.alertTitle != nil || activity.alertBody != nil {
                var alert = JSONObjectWriter()
                alert.field("title", activity.alertTitle)
                alert.field("body", activity.alertBody)
                item.raw("alert", alert.finish())
            } else {
                item.field("alert", nil as String?)
            }
            item.field("updates", activity.updates)
            return item.finish()
        }))
        writer.strings("channels", self.channels)
        writer.field("background_pushes", self.backgroundPushes)
        writer.raw("online", Array((self.isOnline ? "true" : "false").utf8))
        writer.raw("deliveries", JSONArrayWriter.array(self.deliveries.map { $0.json }))
        writer.raw("silent_pushes", JSONArrayWriter.array(self.silentPushes.map { push in
            var item = JSONObjectWriter()
            item.field("apns_id", push.apnsID)
            item.field("bundle_id", push.bundleID)
            item.field("received_at", date: push.receivedAt)
            if let payload = push.payload { item.raw("payload", Array(payload.jsonData)) } else { item.field("payload", nil as String?) }
            item.field("not_delivered", push.notDelivered)
            return item.finish()
        }))
        writer.raw("events", JSONArrayWriter.array(self.events.map { event in
            var item = JSONObjectWriter()
            item.field("at", date: event.date)
            item.field("text", event.text)
            return item.finish()
        }))
        return writer.finish()
    }
}

extension DeliveryRecord {
    /// `{"apns_id", "state", "reason", "why", "at"}`: the state's name (`delivered`, `stored`,
    /// `delivered_from_storage`, `discarded`, `throttled`), the discard or throttle reason's name
    /// (`expired`, `token_unregistered`, `live_activity_budget`, …; `null` for the others), the
    /// sentence that says why, and when.
    package var json: [UInt8] {
        var writer = JSONObjectWriter()
        writer.field("apns_id", self.apnsID)
        writer.field("state", self.state.name)
        writer.field("reason", self.state.cause)
        writer.field("why", self.reason)
        writer.field("at", date: self.date)
        return writer.finish()
    }
}

extension LocalAPNSPhones.Summary {
    /// `{"token", "apps", "notifications", "live_activities", "updated_at"}`.
    package var json: [UInt8] {
        var writer = JSONObjectWriter()
        writer.field("token", self.token)
        writer.strings("apps", self.apps)
        writer.field("notifications", self.notifications)
        writer.field("live_activities", self.liveActivities)
        writer.field("updated_at", date: self.updatedAt)
        return writer.finish()
    }
}

/// The push the phones are delivering and since when: the run loop's watchdog reads it to log a
/// delivery that takes too long. A value behind one lock, with the instant passed in (tested without
/// waiting).
struct DeliveryWatch: Sendable {
    private struct Current {
        var apnsID: String
        var since: ContinuousClock.Instant
        var reported = false
    }

    let limit: Duration
    private let current = LockedBox<Current?>(nil)

    init(limit: Duration) {
        self.limit = limit
    }

    /// A delivery of `apnsID` starts.
    func begin(_ apnsID: String, at now: ContinuousClock.Instant) {
        self.current.withLock { $0 = Current(apnsID: apnsID, since: now) }
    }

    /// No delivery is under way.
    func end() {
        self.current.withLock { $0 = nil }
    }

    /// The delivery under way when it has lasted longer than the limit and was not reported yet
    /// (then it counts as reported).
    func overdue(now: ContinuousClock.Instant) -> (apnsID: String, elapsed: Duration)? {
        self.current.withLock { current in
            guard let started = current, !started.reported, now - started.since > self.limit else { return nil }
            current?.reported = true
            return (started.apnsID, now - started.since)
        }
    }
}
