internal import ForgeAPNsCore
public import ForgeLoopback
internal import ForgeSupport
internal import Foundation

/// The inbox's JSON API as a pure function of a request's method, path and query: no HTTP in here,
/// so every route and every refusal is tested without a socket. ``LocalAPNSInboxServer`` puts it on
/// a port, with the event stream and the page.
///
/// Routes (the contract other languages' tests rely on):
/// - `GET /api/v1/pushes` (`token`, `topic`, `push_type`, `status`, `q`, `since`, `limit`),
///   `GET /api/v1/pushes/{apns_id}`, `DELETE /api/v1/pushes`;
/// - `GET /api/v1/wait` (`token`, `topic`, `push_type`, `status`, `since`; `timeout` up to 60 s);
/// - `GET /api/v1/devices`, `GET /api/v1/devices/{token}`;
/// - `POST /api/v1/devices` with `{"apps": [{"bundle_id": …, "attributes_types": [ … ]}],
///   "ask_before_activities": BOOL}`: a phone with those apps installed, answered 201 `{"token": HEX,
///   "installation": HEX, "ask_before_activities": BOOL, "apps": [{"bundle_id": …,
///   "push_to_start_tokens": {"TYPE": HEX}}]}` (one push-to-start token per app, for each of its
///   types; `installation`, the device token, is what its apps' token reports name). A phone that
///   asks before activities gives a remotely started activity no update token until the person allows the app's activities;
/// - `POST /api/v1/devices/{token}/actions` with `{"action": …}` and the action's fields
///   (`DeviceAction`): what a person does to the phone (offline, online, install, uninstall,
///   force_quit, notifications_off/on, rotate_push_to_start_token, rotate_update_token,
///   allow_activity, deny_activity, dismiss_activity, tap, advance_clock); answered 200 with the
///   phone's view (as `GET /api/v1/devices/{token}`), 404 naming an app, attributes type, activity or
///   notification the phone does not have, 409 for an install of an app it has.
///
/// A bad request is a 400 whose `{"error": …}` names the parameter and the rule.
public struct LocalAPNSInboxAPI: Sendable {
    /// One answer.
    public struct Response: Sendable, Equatable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]

        /// Every answer of the API (entries, phones, errors quoting a path or a parameter): a
        /// provider token in it is redacted (``ProviderTokenRedaction``).
        static func json(_ status: Int, _ body: [UInt8]) -> Response {
            Response(status: status, contentType: "application/json; charset=utf-8", body: ProviderTokenRedaction.redacting(body))
        }

        static func error(_ status: Int, _ message: String) -> Response {
            var writer = JSONObjectWriter()
            writer.field("error", message)
            return .json(status, writer.finish())
        }
    }

    /// The inbox it reads.
    public let inbox: LocalAPNSInbox
    /// The phones it shows; cleared with the inbox.
    public let phones: LocalAPNSPhones?
    /// The longest `timeout` of a wait.
    public static let maximumWait: Duration = .seconds(60)

    /// Creates the API over an inbox and its phones.
    public init(inbox: LocalAPNSInbox, phones: LocalAPNSPhones?) {
        self.inbox = inbox
        self.phones = phones
    }

    /// `POST /api/v1/devices`: a phone with apps installed.
    private func createDevice(_ body: [UInt8]) throws -> Response {
        guard let phones = self.phones else { return .error(404, "this server runs no phones") }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw APIError("body: must be a JSON object such as {\"apps\": [{\"bundle_id\": \"com.example.app\", \"attributes_types\": [\"OrderAttributes\"]}]}")
        }
        if let unknown = object.keys.sorted().first(where: { !["apps", "ask_before_activities"].contains($0) }) {
            throw APIError("\(unknown): not a field of a new device (apps, ask_before_activities)")
        }
        var asks = false
        if let ask = object["ask_before_activities"] {
            // JSONSerialization reads `true` and `1` alike as NSNumber; JSONValue tells them apart.
            guard let flag = JSONValue(foundation: ask).boolValue else {
                throw APIError("ask_before_activities: must be true or false")
            }
            asks = flag
        }
        guard let apps = object["apps"] as? [Any], !apps.isEmpty else { throw APIError("apps: must be a non-empty array of apps") }
        var made: [LocalAPNSPhones.NewApp] = []
        for (index, item) in apps.enumerated() {
            guard let app = item as? [String: Any] else { throw APIError("apps[\(index)]: must be an object with bundle_id") }
            guard let bundle = app["bundle_id"] as? String, (try? APNSBundleID(bundle)) != nil else {
                throw APIError("apps[\(index)].bundle_id: must be a bundle id such as com.example.app")
            }
            guard !made.contains(where: { $0.bundleID == bundle }) else { throw APIError("apps[\(index)].bundle_id: \(bundle) is given twice") }
            let types = app["attributes_types"] ?? [String]()
            guard let names = types as? [String], names.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 128 }) else {
                throw APIError("apps[\(index)].attributes_types: must be an array of attributes type names (1 to 128 bytes)")
            }
            made.append(LocalAPNSPhones.NewApp(bundleID: bundle, attributesTypes: names))
        }
        let created = phones.create(apps: made, asksBeforeActivities: asks)
        var writer = JSONObjectWriter()
        writer.field("token", created.token)
        writer.field("installation", created.token)
        writer.raw("ask_before_activities", Array((asks ? "true" : "false").utf8))
        writer.raw("apps", JSONArrayWriter.array(made.map { app in
            var item = JSONObjectWriter()
            item.field("bundle_id", app.bundleID)
            var tokens = JSONObjectWriter()
            if let token = created.pushToStartTokens[app.bundleID] {
                for type in app.attributesTypes { tokens.field(type, token) }
            }
            item.raw("push_to_start_tokens", tokens.finish())
            return item.finish()
        }))
        return .json(201, writer.finish())
    }

    /// What a person can do on a phone through `POST /api/v1/devices/{token}/actions`, by the
    /// `action` field's value. One case per action; a new action is a case here, its fields in
    /// ``fields`` and a line in ``perform(_:on:)``.
    enum DeviceAction: String, CaseIterable {
        /// The phone loses its connection: APNs stores the last push per app.
        case offline
        /// The phone reconnects: the stored pushes are delivered from storage.
        case online
        /// Installs an app with no handlers (`bundle_id`) whose device token is the phone's.
        case install
        /// Removes the app (`bundle_id`) and its Live Activities; pushes to its tokens are discarded.
        case uninstall
        /// Swipes the app (`bundle_id`) away: background pushes no longer reach it.
        case forceQuit = "force_quit"
        /// Turns the app's (`bundle_id`) notifications off in Settings: its alerts are not shown.
        case notificationsOff = "notifications_off"
        /// Turns the app's (`bundle_id`) notifications back on.
        case notificationsOn = "notifications_on"
        /// The app (`bundle_id`) gets a new push-to-start token (for `attributes_type` and its other types).
        case rotatePushToStartToken = "rotate_push_to_start_token"
        /// The Live Activity (`activity`) gets a new update token.
        case rotateUpdateToken = "rotate_update_token"
        /// Taps Allow for the app's Live Activities (`bundle_id`).
        case allowActivity = "allow_activity"
        /// Taps Don't Allow for the app's Live Activities (`bundle_id`).
        case denyActivity = "deny_activity"
        /// Dismisses the Live Activity (`activity`) from the Lock Screen.
        case dismissActivity = "dismiss_activity"
        /// Taps the notification (`notification`, its `apns_id` in the phone's view).
        case tap
        /// Moves the phone's clock forward by `seconds`.
        case advanceClock = "advance_clock"

        /// The fields the action reads besides `action`, all required.
        var fields: [String] {
            switch self {
            case .offline, .online: return []
            case .install, .uninstall, .forceQuit, .notificationsOff, .notificationsOn, .allowActivity, .denyActivity: return ["bundle_id"]
            case .rotatePushToStartToken: return ["bundle_id", "attributes_type"]
            case .rotateUpdateToken, .dismissActivity: return ["activity"]
            case .tap: return ["notification"]
            case .advanceClock: return ["seconds"]
            }
        }
    }

    /// The longest `advance_clock` step, in seconds: a year.
    static let maximumClockStep: Double = 366 * 86_400

    /// A refused action whose field names something the phone does not have: 404.
    private struct NotFound: Error {
        var message: String
    }

    /// `POST /api/v1/devices/{token}/actions`: reads the action, checks its fields, runs it on the
    /// phone, answers its view. Every check comes before the action: a refused action changes nothing.
    private func perform(_ body: [UInt8], on token: String) async throws -> Response {
        guard let phones = self.phones else { return .error(404, "this server runs no phones") }
        let names = DeviceAction.allCases.map(\.rawValue).joined(separator: ", ")
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw APIError("body: must be a JSON object such as {\"action\": \"allow_activity\", \"bundle_id\": \"com.example.app\"}")
        }
        guard let name = object["action"] as? String else { throw APIError("action: must be one of \(names)") }
        guard let action = DeviceAction(rawValue: name) else {
            throw APIError("action: unknown action '\(APNSJudge.clip(name))' (known: \(names))")
        }
        let known = ["action"] + action.fields
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw APIError("\(APNSJudge.clip(unknown)): not a field of the action \(name) (\(known.joined(separator: ", ")))")
        }
        var bundleID = ""
        if action.fields.contains("bundle_id") {
            guard let text = object["bundle_id"] as? String, (try? APNSBundleID(text)) != nil else {
                throw APIError("bundle_id: must be the bundle id of an app on the phone, such as com.example.app")
            }
            bundleID = text
        }
        var attributesType = ""
        if action.fields.contains("attributes_type") {
            guard let text = object["attributes_type"] as? String, !text.isEmpty, text.utf8.count <= 128 else {
                throw APIError("attributes_type: must be the name of an attributes type the app registers (1 to 128 bytes)")
            }
            attributesType = text
        }
        var activityID = ""
        if action.fields.contains("activity") {
            guard let text = object["activity"] as? String, !text.isEmpty else {
                throw APIError("activity: must be the id of a Live Activity on the phone, as its view lists it (such as activity-1)")
            }
            activityID = text
        }
        var notificationID = ""
        if action.fields.contains("notification") {
            guard let text = object["notification"] as? String, !text.isEmpty else {
                throw APIError("notification: must be the apns_id of a notification in the phone's list, as its view lists it")
            }
            notificationID = text.lowercased()
        }
        var seconds = 0.0
        if action.fields.contains("seconds") {
            // JSONSerialization reads `true` as a number too; JSONValue tells them apart.
            guard let value = object["seconds"].flatMap({ JSONValue(foundation: $0).doubleValue }), value > 0, value <= Self.maximumClockStep else {
                throw APIError("seconds: must be a number of seconds above 0 and at most \(Int(Self.maximumClockStep)) (a year)")
            }
            seconds = value
        }
        let view: DeviceView?
        do {
            view = try await phones.perform(on: token) { device, phoneToken in
                let app = bundleID.isEmpty ? nil : device.app(bundleID)
                if action.fields.contains("bundle_id"), action != .install, app == nil {
                    throw NotFound(message: "bundle_id: no app \(bundleID) on the phone")
                }
                switch action {
                case .offline: device.goOffline()
                case .online: await device.goOnline()
                case .install:
                    guard app == nil else { throw NotFound(message: "bundle_id: \(bundleID) is installed already") }
                    phones.install(bundleID, token: phoneToken, on: device)
                case .uninstall: device.uninstall(bundleID)
                case .forceQuit: try device.forceQuit(bundleID)
                case .notificationsOff: try device.setNotificationsAllowed(false, for: bundleID)
                case .notificationsOn: try device.setNotificationsAllowed(true, for: bundleID)
                case .rotatePushToStartToken:
                    guard let app, app.activityTypeNames.contains(attributesType) else {
                        throw NotFound(message: "attributes_type: \(bundleID) registers no attributes type \(attributesType)")
                    }
                    guard app.pushToStartToken != nil else {
                        throw NotFound(message: "bundle_id: \(bundleID) has no push-to-start token")
                    }
                    try device.rotatePushToStartToken(of: bundleID)
                case .rotateUpdateToken:
                    try device.rotateUpdateToken(of: activityID)
                case .allowActivity: try device.allowActivities(of: bundleID)
                case .denyActivity: try device.denyActivities(of: bundleID)
                case .dismissActivity:
                    try device.dismissActivity(activityID)
                case .tap:
                    let shown = device.view(token: phoneToken, events: 0).notifications.first { $0.apnsID.lowercased() == notificationID }
                    guard let shown else { throw NotFound(message: "notification: no notification \(notificationID) in the phone's list") }
                    try await device.tap(shown.collapseID ?? shown.apnsID, in: shown.bundleID)
                case .advanceClock: try device.advanceClock(by: seconds)
                }
            }
        } catch let error as NotFound {
            // 409 for an install of an app the phone has: the request is right, the phone's state refuses it.
            return .error(action == .install ? 409 : 404, error.message)
        } catch let error as SimulatedDeviceError {
            // What the device does not have, under the field that named it.
            return .error(404, "\(action.fields.first ?? "token"): \(error.message)")
        }
        guard let view else { return .error(404, "token: no phone has token \(token)") }
        return .json(200, view.json)
    }

    /// Answers one request; `query` is the raw query string (without `?`), percent-encoded; `body`
    /// the request's body (read by `POST /api/v1/devices` and `POST /api/v1/devices/{token}/actions` only).
    public func respond(method: String, path: String, query: String?, body: [UInt8] = []) async -> Response {
        let parameters: [(name: String, value: String)]
        switch Self.parse(query: query) {
        case .success(let parsed): parameters = parsed
        case .failure(let error): return .error(400, error.message)
        }
        let segments = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard segments.count >= 3, segments[0] == "api", segments[1] == "v1" else {
            return .error(404, "no such resource: \(path) (the API is under /api/v1/: pushes, wait, devices, events)")
        }
        do {
            switch (segments[2], segments.count) {
            case ("pushes", 3):
                switch method {
                case "GET": return try self.list(parameters)
                case "DELETE":
                    try Self.allow([], in: parameters, for: "DELETE /api/v1/pushes")
                    self.inbox.clear()
                    self.phones?.clear()
                    return Response(status: 204, contentType: "application/json; charset=utf-8", body: [])
                default: return Self.methodNotAllowed(method, path, allowed: "GET, DELETE")
                }
            case ("pushes", 4):
                guard method == "GET" else { return Self.methodNotAllowed(method, path, allowed: "GET") }
                try Self.allow([], in: parameters, for: "GET /api/v1/pushes/{apns_id}")
                let id = segments[3]
                guard (try? APNSID(id)) != nil else {
                    throw APIError("apns_id: must be a UUID, 8-4-4-4-12 hex digits (got '\(APNSJudge.clip(id))')")
                }
                guard let entry = self.inbox.entry(apnsID: id) else { return .error(404, "apns_id: no push \(id) in the inbox") }
                return .json(200, self.json(entry))
            case ("wait", 3):
                guard method == "GET" else { return Self.methodNotAllowed(method, path, allowed: "GET") }
                return try await self.wait(parameters)
            case ("devices", 3):
                if method == "POST" {
                    try Self.allow([], in: parameters, for: "POST /api/v1/devices")
                    return try self.createDevice(body)
                }
                guard method == "GET" else { return Self.methodNotAllowed(method, path, allowed: "GET, POST") }
                try Self.allow([], in: parameters, for: "GET /api/v1/devices")
                let phones = self.phones?.phones ?? []
                var writer = JSONObjectWriter()
                writer.raw("devices", JSONArrayWriter.array(phones.map(\.json)))
                writer.field("skipped_requests", self.phones?.skippedRequests ?? 0)
                return .json(200, writer.finish())
            case ("devices", 5) where segments[4] == "actions":
                guard method == "POST" else { return Self.methodNotAllowed(method, path, allowed: "POST") }
                try Self.allow([], in: parameters, for: "POST /api/v1/devices/{token}/actions")
                return try await self.perform(body, on: try Self.token(segments[3], name: "token"))
            case ("devices", 4):
                guard method == "GET" else { return Self.methodNotAllowed(method, path, allowed: "GET") }
                try Self.allow([], in: parameters, for: "GET /api/v1/devices/{token}")
                let token = try Self.token(segments[3], name: "token")
                guard let view = self.phones?.view(token: token) else {
                    return .error(404, "token: no accepted push reached \(token)")
                }
                return .json(200, view.json)
            default:
                return .error(404, "no such resource: \(path) (the API is under /api/v1/: pushes, wait, devices, events)")
            }
        } catch let error as APIError {
            return .error(400, error.message)
        } catch {
            return .error(500, "\(error)")
        }
    }

    // MARK: Routes

    private func list(_ parameters: [(name: String, value: String)]) throws -> Response {
        try Self.allow(["token", "topic", "push_type", "status", "q", "since", "limit"], in: parameters, for: "GET /api/v1/pushes")
        var query = try Self.query(parameters)
        if let text = Self.value("limit", parameters) {
            guard let limit = Int(text), (1...LocalAPNSInboxQuery.maximumLimit).contains(limit) else {
                throw APIError("limit: must be 1…\(LocalAPNSInboxQuery.maximumLimit) (got \(APNSJudge.clip(text)))")
            }
            query.limit = limit
        }
        let page = self.inbox.pushes(matching: query)
        var writer = JSONObjectWriter()
        writer.field("total", page.total)
        writer.field("dropped", page.dropped)
        writer.raw("pushes", JSONArrayWriter.array(page.entries.map(self.json)))
        return .json(200, writer.finish())
    }

    private func wait(_ parameters: [(name: String, value: String)]) async throws -> Response {
        try Self.allow(["token", "topic", "push_type", "status", "since", "timeout"], in: parameters, for: "GET /api/v1/wait")
        let query = try Self.query(parameters)
        guard query.token != nil || query.topic != nil || query.pushType != nil || query.status != nil else {
            throw APIError("wait: give at least one of token, topic, push_type, status (a wait for anything is a list: GET /api/v1/pushes)")
        }
        var timeout: Duration = .seconds(10)
        if let text = Self.value("timeout", parameters) {
            // Seconds as a number (`5`, `0.5`), else a duration (`500ms`). `nan`, `inf` and `1e300` are
            // numbers too, which Int64(_:) would trap on: anything beyond an hour becomes zero, refused below.
            let parsed = Double(text).map { seconds in
                seconds.isFinite && seconds.magnitude <= 3_600 ? Duration.milliseconds(Int64(seconds * 1000)) : .zero
            } ?? (try? CommandLineDuration.parse(text))
            guard let parsed, parsed > .zero, parsed <= Self.maximumWait else {
                throw APIError("timeout: must be a duration above 0 and at most 60s, such as 5s or 500ms (got \(APNSJudge.clip(text)))")
            }
            timeout = parsed
        }
        guard let entry = await self.inbox.waitForPush(matching: query, timeout: timeout) else {
            return .error(408, "no matching push within \(CommandLineDuration.text(timeout))")
        }
        return .json(200, self.json(entry))
    }

    /// An entry with what became of it on its phone (`delivery`).
    private func json(_ entry: LocalAPNSInboxEntry) -> [UInt8] {
        entry.json(delivery: self.phones?.delivery(of: entry))
    }

    // MARK: Parameters

    struct APIError: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }

    private static func methodNotAllowed(_ method: String, _ path: String, allowed: String) -> Response {
        .error(405, "method \(method) is not allowed on \(path); allowed: \(allowed)")
    }

    private static func allow(_ names: Set<String>, in parameters: [(name: String, value: String)], for route: String) throws {
        for parameter in parameters where !names.contains(parameter.name) {
            let known = names.isEmpty ? "none" : names.sorted().joined(separator: ", ")
            throw APIError("\(APNSJudge.clip(parameter.name)): unknown parameter for \(route) (known: \(known))")
        }
        var seen: Set<String> = []
        for parameter in parameters where !seen.insert(parameter.name).inserted {
            throw APIError("\(parameter.name): given more than once")
        }
    }

    private static func value(_ name: String, _ parameters: [(name: String, value: String)]) -> String? {
        parameters.first { $0.name == name }?.value
    }

    /// The filters every route shares.
    private static func query(_ parameters: [(name: String, value: String)]) throws -> LocalAPNSInboxQuery {
        var query = LocalAPNSInboxQuery()
        if let token = Self.value("token", parameters) { query.token = try Self.token(token, name: "token") }
        if let topic = Self.value("topic", parameters) {
            guard !topic.isEmpty else { throw APIError("topic: must not be empty") }
            query.topic = topic
        }
        if let type = Self.value("push_type", parameters) {
            let names = APNSPushType.allCases.map(\.rawValue)
            guard names.contains(type.lowercased()) else {
                throw APIError("push_type: must be one of \(names.joined(separator: ", ")) (got \(APNSJudge.clip(type)))")
            }
            query.pushType = type.lowercased()
        }
        if let status = Self.value("status", parameters) {
            switch status {
            case "accepted": query.status = .accepted
            case "rejected": query.status = .rejected
            default:
                guard let code = Int(status), (100...599).contains(code) else {
                    throw APIError("status: must be a status 100…599, accepted or rejected (got \(APNSJudge.clip(status)))")
                }
                query.status = .code(code)
            }
        }
        if let text = Self.value("q", parameters), !text.isEmpty { query.text = text }
        if let since = Self.value("since", parameters) {
            guard let date = Self.date(since) else {
                throw APIError("since: must be an ISO 8601 time such as 2026-11-27T20:41:02.123Z (got \(APNSJudge.clip(since)))")
            }
            query.since = date
        }
        return query
    }

    private static func token(_ text: String, name: String) throws -> String {
        guard !text.isEmpty, text.utf8.count <= 200,
            text.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) })
        else {
            throw APIError("\(name): must be hex digits, at most 200 (got '\(APNSJudge.clip(text))')")
        }
        return text.lowercased()
    }

    static func date(_ text: String) -> Date? {
        let styles = [
            Date.ISO8601FormatStyle(includingFractionalSeconds: true),
            Date.ISO8601FormatStyle(includingFractionalSeconds: false),
        ]
        for style in styles { if let date = try? style.parse(text) { return date } }
        return nil
    }

    /// `a=1&b=x%20y` as pairs, percent-decoded (`+` is a space, as forms send it).
    static func parse(query: String?) -> Result<[(name: String, value: String)], APIError> {
        guard let query, !query.isEmpty else { return .success([]) }
        var pairs: [(name: String, value: String)] = []
        for part in query.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decoded = pieces.map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            guard let name = decoded[0], let value = decoded.count > 1 ? decoded[1] : "" else {
                return .failure(APIError("query: '\(APNSJudge.clip(String(part)))' is not percent-encoded correctly"))
            }
            pairs.append((name, value))
        }
        return .success(pairs)
    }
}
