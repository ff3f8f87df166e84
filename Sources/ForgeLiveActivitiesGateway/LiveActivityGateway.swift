public import ForgeLiveActivities
internal import ForgeAPNsCore
internal import Foundation
public import Logging
public import Metrics

/// `LiveActivityManager` over HTTP/1.1 and JSON, for backends in any language: the app's token
/// reports, start, update, end, and the registry's activities, with an OpenAPI 3.0 document of
/// every route at `GET /v1/openapi.json`.
///
/// ``respond(to:)`` is the whole API as a function of a request, with no socket: every route and
/// refusal is tested in-process. ``makeApplication(host:port:onServerRunning:)`` puts it on a port
/// (Hummingbird), and ``addRoutes(to:)`` mounts the routes on a router of yours.
///
/// Routes:
/// - `POST /v1/reports`: a token report of the app (`ActivityReportJSON`), as
///   `LiveActivityManager.handleReport(body:)` answers it;
/// - `POST /v1/activities/{id}/start` `{"installation", "bundle_id", "attributes_type",
///   "attributes", "content_state", "alert": {"title", "body"}, "group"}` (`group` optional: the
///   activity then gets every update of its group, by broadcast when its install listens to
///   channels);
/// - `POST /v1/activities/{id}/update` `{"content_state", "importance": "routine" | "alerting"}`
///   (apns-priority 5, the default, or 10 within the activity's budget), paced by the manager;
/// - `POST /v1/activities/{id}/end` `{"content_state", "dismissal_date"}` (both optional; the
///   date in seconds since 1970, a number);
/// - `GET /v1/activities/{id}`, `GET /v1/activities?state=&group=`;
/// - `POST /v1/groups/{group}/update` and `POST /v1/groups/{group}/end`, the bodies of an
///   activity's update and end, for every member of the group at once
///   (`LiveActivityManager.request(groupUpdate:…)`): 202 `{"id", "state": "accepted", "members",
///   "channels", "on_channels", "superseded", "skipped"}`;
/// - `GET /v1/groups/{group}`: its members by state and its broadcast channels;
/// - `GET /metrics` (Prometheus text, when ``Configuration/prometheusText`` is given),
///   `GET /readyz` (200 when the store answers), `GET /v1/openapi.json`.
///
/// The activity routes answer 202 `{"id", "state"}` once the manager has taken the request: an
/// update or an end is recorded (`LiveActivityManager.request(update:…)`), and sent by the
/// manager's `run()`, which whoever runs the gateway runs beside it. A
/// refusal is `{"error": {"code", "field", "rule"}}`: 400 for bad input (nothing stored), 401
/// without the API key, 404 for an unknown activity or a group with no member, 409 for an activity
/// that has ended or is dead (with its `state` and `why`), a start in a group that has ended, or no
/// usable push-to-start token, 413 for a body over ``Configuration/maximumBodySize``, 502 when APNs
/// did not accept a start, 503 when the store fails. The group routes answer 202 once every member's
/// push is recorded.
public struct LiveActivityGateway: Sendable {
    /// The API key, the body limit, metrics and logs.
    public struct Configuration: Sendable, CustomStringConvertible, CustomReflectable {
        /// When set, every route but `GET /readyz` needs `Authorization: Bearer <apiKey>` (compared
        /// in constant time); without it, 401. Never logged or printed.
        public var apiKey: String?
        /// The largest request body, in bytes (64 KiB by default): a larger one is refused with 413.
        public var maximumBodySize: Int
        /// Where the request counter (`forge_gateway_requests_total{route,status}`) and the
        /// activities gauge (`forge_gateway_activities{state}`, set at each scrape) are made.
        public var metrics: any MetricsFactory
        /// `GET /metrics`: the text of the registry behind ``metrics`` (Prometheus' exposition
        /// format), after the activities gauge is set; `nil` (the default): 404.
        public var prometheusText: (@Sendable () -> [UInt8])?
        /// Each request at debug level: method, route, status (never the API key).
        public var logger: Logger

        /// - Parameters:
        ///   - apiKey: the key every route but `GET /readyz` needs, or `nil` for none.
        ///   - maximumBodySize: the largest request body, in bytes.
        ///   - metrics: where the gateway's counters and gauges are made.
        ///   - prometheusText: the metrics as text for `GET /metrics`.
        ///   - logger: where requests are logged, at debug level; none by default.
        public init(
            apiKey: String? = nil, maximumBodySize: Int = 64 * 1024, metrics: any MetricsFactory = MetricsSystem.factory,
            prometheusText: (@Sendable () -> [UInt8])? = nil, logger: Logger = Logger(label: "forge.gateway", factory: { _ in SwiftLogNoOpLogHandler() })
        ) {
            self.apiKey = apiKey
            self.maximumBodySize = maximumBodySize
            self.metrics = metrics
            self.prometheusText = prometheusText
            self.logger = logger
        }

        public var description: String {
            "LiveActivityGateway.Configuration(apiKey: \(self.apiKey == nil ? "none" : "<redacted>"), maximumBodySize: \(self.maximumBodySize))"
        }

        /// What `dump` and debuggers show: the key redacted.
        public var customMirror: Mirror {
            Mirror(self, children: ["apiKey": self.apiKey == nil ? "none" : "<redacted>", "maximumBodySize": self.maximumBodySize])
        }
    }

    /// One request, as the gateway needs it.
    public struct Request: Sendable {
        /// `GET`, `POST`, …
        public var method: String
        /// The path, percent-encoded as sent, without the query.
        public var path: String
        /// The query, without its `?`.
        public var query: String?
        /// The `Authorization` header.
        public var authorization: String?
        /// The body (a transport may stop reading one byte past ``Configuration/maximumBodySize``).
        public var body: [UInt8]

        /// - Parameters:
        ///   - method: the request's method.
        ///   - path: its path, percent-encoded as sent.
        ///   - query: its query, without the `?`.
        ///   - authorization: its `Authorization` header.
        ///   - body: its body.
        public init(method: String, path: String, query: String? = nil, authorization: String? = nil, body: [UInt8] = []) {
            self.method = method
            self.path = path
            self.query = query
            self.authorization = authorization
            self.body = body
        }
    }

    /// One answer.
    public struct Response: Sendable {
        public var status: Int
        public var contentType: String
        public var body: [UInt8]
        /// Headers besides the content type (`Allow`, `WWW-Authenticate`).
        public var headers: [(name: String, value: String)]
    }

    public let manager: LiveActivityManager
    public let configuration: Configuration

    /// - Parameters:
    ///   - manager: the manager the routes call; it needs a client for start, update and end.
    ///   - configuration: the API key, the body limit, metrics and logs.
    public init(manager: LiveActivityManager, configuration: Configuration = Configuration()) {
        self.manager = manager
        self.configuration = configuration
    }

    /// The routes, each as `METHOD pattern`: the route label of the request counter.
    static let routes: [(method: String, pattern: [String])] = [
        ("POST", ["v1", "reports"]),
        ("GET", ["v1", "activities"]),
        ("GET", ["v1", "activities", "{id}"]),
        ("POST", ["v1", "activities", "{id}", "start"]),
        ("POST", ["v1", "activities", "{id}", "update"]),
        ("POST", ["v1", "activities", "{id}", "end"]),
        ("GET", ["v1", "groups", "{group}"]),
        ("POST", ["v1", "groups", "{group}", "update"]),
        ("POST", ["v1", "groups", "{group}", "end"]),
        ("GET", ["metrics"]),
        ("GET", ["readyz"]),
        ("GET", ["v1", "openapi.json"]),
    ]

    /// The answer to `request`; every refusal is an answer too.
    public func respond(to request: Request) async -> Response {
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        let matching = Self.routes.filter { Self.matches($0.pattern, segments) }
        let label = matching.first.map { "/" + $0.pattern.joined(separator: "/") } ?? "unmatched"
        let response: Response
        do throws(GatewayFailure) {
            response = try await self.route(request, segments: segments, matching: matching)
        } catch {
            response = Self.answer(error)
        }
        Counter(label: "forge_gateway_requests_total", dimensions: [("route", label), ("status", String(response.status))], factory: self.configuration.metrics)
            .increment()
        self.configuration.logger.debug(
            "gateway request", metadata: ["gateway.method": "\(request.method)", "gateway.route": "\(label)", "gateway.status": "\(response.status)"]
        )
        return response
    }

    private func route(_ request: Request, segments: [String], matching: [(method: String, pattern: [String])]) async throws(GatewayFailure)
        -> Response
    {
        let isReadiness = segments == ["readyz"]
        if !isReadiness { try self.authorize(request.authorization) }
        guard let route = matching.first(where: { $0.method == request.method }) else {
            guard !matching.isEmpty else {
                throw GatewayFailure(404, "not_found", field: "path", rule: "no route has this path (GET /v1/openapi.json lists them)")
            }
            var failure = GatewayFailure(405, "method_not_allowed", field: "method", rule: "\(request.path) takes \(matching.map(\.method).joined(separator: ", "))")
            failure.headers = [("Allow", matching.map(\.method).joined(separator: ", "))]
            throw failure
        }
        guard request.body.count <= self.configuration.maximumBodySize else {
            throw GatewayFailure(413, "body_too_large", field: "body", rule: "must be at most \(self.configuration.maximumBodySize) bytes")
        }
        if route.method == "GET", segments != ["v1", "activities"], let query = request.query, !query.isEmpty {
            let name = String(query.prefix { $0 != "=" && $0 != "&" })
            throw GatewayFailure.invalid(name.removingPercentEncoding ?? name, "is not a parameter of \(request.path)")
        }
        switch (route.method, route.pattern) {
        case ("POST", ["v1", "reports"]):
            if let unknown = Self.unknownReportField(request.body) {
                let error: [String: Any] = [
                    "code": "invalid_input", "field": unknown,
                    "rule": "is not a field of a report (fields: \(Self.reportFields.sorted().joined(separator: ", ")))",
                ]
                return Self.json(400, ActivityJSON.bytes(["applied": false, "error": error]))
            }
            let (status, body) = await self.manager.handleReport(body: request.body)
            return Self.json(status, body)
        case ("GET", ["v1", "activities"]):
            return try await self.list(query: request.query)
        case ("GET", ["v1", "activities", "{id}"]):
            return try await self.show(try Self.activityID(segments[2]))
        case ("POST", ["v1", "activities", "{id}", "start"]):
            return try await self.start(try Self.activityID(segments[2]), body: request.body)
        case ("POST", ["v1", "activities", "{id}", "update"]):
            let id = try Self.activityID(segments[2])
            let update = try UpdateRequest(request.body)
            try await self.sending(id) { () async throws(LiveActivityError) in
                // Recorded now, sent paced by the manager's run() (latest state wins, within the budget).
                _ = try await self.manager.request(update: id, contentState: update.contentState, importance: update.importance)
            }
            return try await self.accepted(id)
        case ("POST", ["v1", "activities", "{id}", "end"]):
            let id = try Self.activityID(segments[2])
            let end = try EndRequest(request.body)
            try await self.sending(id) { () async throws(LiveActivityError) in
                _ = try await self.manager.request(end: id, contentState: end.contentState, dismissalDate: end.dismissalDate)
            }
            return try await self.accepted(id)
        case ("GET", ["v1", "groups", "{group}"]):
            return try await self.showGroup(try Self.groupID(segments[2]))
        case ("POST", ["v1", "groups", "{group}", "update"]):
            let group = try Self.groupID(segments[2])
            let update = try UpdateRequest(request.body)
            return try await self.groupAccepted(group) { () async throws(LiveActivityError) in
                try await self.manager.request(groupUpdate: group, contentState: update.contentState, importance: update.importance)
            }
        case ("POST", ["v1", "groups", "{group}", "end"]):
            let group = try Self.groupID(segments[2])
            let end = try EndRequest(request.body)
            return try await self.groupAccepted(group) { () async throws(LiveActivityError) in
                try await self.manager.request(groupEnd: group, contentState: end.contentState, dismissalDate: end.dismissalDate)
            }
        case ("GET", ["metrics"]):
            return try await self.metrics()
        case ("GET", ["readyz"]):
            do throws(LiveActivityError) {
                _ = try await self.manager.activity(try LiveActivityID("readyz"))
            } catch {
                throw GatewayFailure(error)
            }
            return Self.json(200, ActivityJSON.bytes(["ready": true]))
        default:
            return Response(status: 200, contentType: "application/json", body: Array(GatewayOpenAPI.document.utf8), headers: [])
        }
    }

    // MARK: Routes

    private func list(query: String?) async throws(GatewayFailure) -> Response {
        var state: String?
        var group: LiveActivityGroupID?
        for pair in (query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "") : ""
            switch name {
            case "state":
                guard ActivityJSON.stateNames.contains(value) else {
                    throw GatewayFailure.invalid("state", "must be one of \(ActivityJSON.stateNames.joined(separator: ", ")) (got '\(value)')")
                }
                state = value
            case "group":
                do throws(LiveActivityError) { group = try LiveActivityGroupID(value) } catch { throw GatewayFailure.invalid("group", error.rule) }
            default:
                throw GatewayFailure.invalid(name, "is not a parameter of /v1/activities (state, group)")
            }
        }
        let activities: [ManagedActivity]
        do throws(LiveActivityError) {
            if let group { activities = try await self.manager.activities(inGroup: group) } else { activities = try await self.manager.activities() }
        } catch {
            throw GatewayFailure(error)
        }
        let objects = activities.filter { state == nil || $0.state.name == state }.map { ActivityJSON.object($0) }
        return Self.json(200, ActivityJSON.bytes(objects))
    }

    private func show(_ id: LiveActivityID) async throws(GatewayFailure) -> Response {
        let found: ManagedActivity?
        do throws(LiveActivityError) { found = try await self.manager.activity(id) } catch { throw GatewayFailure(error) }
        guard let found else { throw Self.unknown(id) }
        return Self.json(200, ActivityJSON.bytes(ActivityJSON.detailed(found)))
    }

    private func start(_ id: LiveActivityID, body: [UInt8]) async throws(GatewayFailure) -> Response {
        let start = try StartRequest(body)
        let existing: ManagedActivity?
        do throws(LiveActivityError) { existing = try await self.manager.activity(id) } catch { throw GatewayFailure(error) }
        if let existing, !existing.state.isLive {
            var failure = GatewayFailure(409, "not_live", field: "id", rule: "\(id) already exists and is \(existing.state): start a new id")
            failure.state = existing.state.name
            failure.why = existing.why
            throw failure
        }
        do throws(LiveActivityError) {
            let outcome = try await self.manager.start(
                activity: id, installation: start.installation, bundleID: start.bundleID, attributesType: start.attributesType,
                attributes: start.attributes, contentState: start.contentState, alert: start.alert, group: start.group
            )
            return Self.json(202, ActivityJSON.bytes(["id": id.rawValue, "state": outcome.activity.state.name]))
        } catch {
            throw GatewayFailure(error)
        }
    }

    /// Runs an update or an end; a refusal of an activity that is not live says its state and why.
    private func sending(_ id: LiveActivityID, _ body: () async throws(LiveActivityError) -> Void) async throws(GatewayFailure) {
        do throws(LiveActivityError) {
            try await body()
        } catch {
            var failure = GatewayFailure(error)
            if error.code == .notLive, let activity = try? await self.manager.activity(id) {
                failure.state = activity.state.name
                failure.why = activity.why
            }
            throw failure
        }
    }

    /// 202 `{"id", "state"}`, the state as the registry has it now.
    private func accepted(_ id: LiveActivityID) async throws(GatewayFailure) -> Response {
        let activity: ManagedActivity?
        do throws(LiveActivityError) { activity = try await self.manager.activity(id) } catch { throw GatewayFailure(error) }
        guard let activity else { throw Self.unknown(id) }
        return Self.json(202, ActivityJSON.bytes(["id": id.rawValue, "state": activity.state.name]))
    }

    /// `{"id", "members": {"total", "by_state"}, "channels": […]}`; 404 for a group with no member.
    private func showGroup(_ group: LiveActivityGroupID) async throws(GatewayFailure) -> Response {
        let members: [ManagedActivity]
        let channels: [GroupChannel]
        do throws(LiveActivityError) {
            members = try await self.manager.activities(inGroup: group)
            channels = try await self.manager.channels(of: group)
        } catch {
            throw GatewayFailure(error)
        }
        guard !members.isEmpty else { throw Self.unknown(group) }
        return Self.json(200, ActivityJSON.bytes(ActivityJSON.group(group, members: members, channels: channels)))
    }

    /// Runs a group's update or end: 202 with what it did (members reached by token, channels, …);
    /// 404 naming `group` for a group with no member.
    private func groupAccepted(
        _ group: LiveActivityGroupID, _ body: () async throws(LiveActivityError) -> LiveActivityManager.GroupRequestOutcome
    ) async throws(GatewayFailure) -> Response {
        let outcome: LiveActivityManager.GroupRequestOutcome
        do throws(LiveActivityError) { outcome = try await body() } catch { throw GatewayFailure(error) }
        return Self.json(202, ActivityJSON.bytes([
            "id": group.rawValue, "state": "accepted", "members": outcome.members, "channels": outcome.channels,
            "on_channels": outcome.onChannels, "superseded": outcome.superseded, "skipped": outcome.skipped,
        ]))
    }

    private func metrics() async throws(GatewayFailure) -> Response {
        guard let text = self.configuration.prometheusText else {
            throw GatewayFailure(404, "not_found", field: "path", rule: "this gateway exports no metrics")
        }
        let activities: [ManagedActivity]
        do throws(LiveActivityError) { activities = try await self.manager.activities() } catch { throw GatewayFailure(error) }
        var counts = Dictionary(uniqueKeysWithValues: ActivityJSON.stateNames.map { ($0, 0) })
        for activity in activities { counts[activity.state.name, default: 0] += 1 }
        for (state, count) in counts {
            Gauge(label: "forge_gateway_activities", dimensions: [("state", state)], factory: self.configuration.metrics).record(count)
        }
        return Response(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: text(), headers: [])
    }

    // MARK: Support

    /// The fields of a report: those `ActivityReportJSON` encodes, read from its encoding so that
    /// a field it gains is taken here too.
    static let reportFields: Set<String> = {
        let full = ActivityReportJSON(
            kind: "", installation: "", bundleID: "", attributesType: "", activity: "", token: "", sequence: 0, environment: "", channels: false, group: ""
        )
        guard let data = try? JSONEncoder().encode(full), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            return []
        }
        return Set(object.keys)
    }()

    /// The first field of a report body that no report has (the manager's decoder would ignore it).
    private static func unknownReportField(_ body: [UInt8]) -> String? {
        guard case .object(let fields)? = try? CodableJSON(parsing: body) else { return nil }
        return fields.keys.sorted().first { !Self.reportFields.contains($0) }
    }

    /// 401 unless the request carries the API key; the answer does not say what was wrong.
    private func authorize(_ header: String?) throws(GatewayFailure) {
        guard let key = self.configuration.apiKey else { return }
        let given = header.flatMap { value -> Substring? in
            let scheme = value.prefix { $0 != " " }
            guard scheme.lowercased() == "bearer" else { return nil }
            return value.dropFirst(scheme.count).drop { $0 == " " }
        }
        if let given, Self.constantTimeEqual(Array(given.utf8), Array(key.utf8)) { return }
        var failure = GatewayFailure(401, "unauthorized", rule: "needs Authorization: Bearer and the gateway's API key")
        failure.headers = [("WWW-Authenticate", "Bearer")]
        throw failure
    }

    /// Whether `given` equals `key`, in a time that depends on the key's length only.
    static func constantTimeEqual(_ given: [UInt8], _ key: [UInt8]) -> Bool {
        var difference: UInt8 = given.count == key.count ? 0 : 1
        for index in key.indices {
            difference |= key[index] ^ (index < given.count ? given[index] : 0)
        }
        return difference == 0
    }

    /// The route's `{id}`, percent-decoded and checked: 400 naming `id`.
    static func activityID(_ segment: String) throws(GatewayFailure) -> LiveActivityID {
        guard let text = segment.removingPercentEncoding else { throw GatewayFailure.invalid("id", "is not valid percent-encoded UTF-8") }
        do throws(LiveActivityError) { return try LiveActivityID(text) } catch { throw GatewayFailure.invalid("id", error.rule) }
    }

    /// The route's `{group}`, percent-decoded and checked: 400 naming `group`.
    static func groupID(_ segment: String) throws(GatewayFailure) -> LiveActivityGroupID {
        guard let text = segment.removingPercentEncoding else { throw GatewayFailure.invalid("group", "is not valid percent-encoded UTF-8") }
        do throws(LiveActivityError) { return try LiveActivityGroupID(text) } catch { throw GatewayFailure.invalid("group", error.rule) }
    }

    private static func unknown(_ id: LiveActivityID) -> GatewayFailure {
        GatewayFailure(404, "unknown_activity", field: "id", rule: "no activity has the id \(id)")
    }

    private static func unknown(_ group: LiveActivityGroupID) -> GatewayFailure {
        GatewayFailure(404, "unknown_activity", field: "group", rule: "no activity belongs to the group \(group)")
    }

    /// Whether `segments` fit `pattern`, whose `{name}` segments take any non-empty segment.
    static func matches(_ pattern: [String], _ segments: [String]) -> Bool {
        pattern.count == segments.count && zip(pattern, segments).allSatisfy { $0.hasPrefix("{") ? !$1.isEmpty : $0 == $1 }
    }

    private static func json(_ status: Int, _ body: [UInt8]) -> Response {
        Response(status: status, contentType: "application/json", body: body, headers: [])
    }

    private static func answer(_ failure: GatewayFailure) -> Response {
        Response(status: failure.status, contentType: "application/json", body: failure.body, headers: failure.headers.map { (name: $0.0, value: $0.1) })
    }
}
