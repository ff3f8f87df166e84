internal import ForgeLiveActivities
internal import Foundation

/// A refusal of the gateway: the HTTP status and the body `{"error": {"code", "field", "rule"}}`
/// (with `state` and `why` for an activity that is not live, `apns` for a push APNs refused).
struct GatewayFailure: Error, Sendable {
    var status: Int
    var code: String
    var field: String?
    var rule: String
    /// For 409: the activity's state and why.
    var state: String?
    var why: String?
    /// For 502: APNs' status and reason (both `nil` when the push never got an answer).
    var apns: (status: Int?, reason: String?)?
    /// Extra response headers (`Allow`, `WWW-Authenticate`).
    var headers: [(String, String)] = []

    init(_ status: Int, _ code: String, field: String? = nil, rule: String) {
        self.status = status
        self.code = code
        self.field = field
        self.rule = rule
    }

    /// A malformed request: 400 naming the field.
    static func invalid(_ field: String, _ rule: String) -> Self {
        Self(400, "invalid_input", field: field, rule: rule)
    }

    /// The status for each of the manager's refusals: the one place they are mapped.
    /// - invalid input: 400; an unknown activity: 404; an activity that is not live, or no usable
    ///   push-to-start token: 409; a push APNs did not accept: 502; the store failed: 503; a manager
    ///   without a client: 503; a start beyond the install's start budget with a manager set to fail
    ///   it: 429 (the gateway's own manager defers such a start instead).
    /// `field` renames the manager's field `activity` (the route's `{id}`).
    init(_ error: LiveActivityError) {
        let status =
            switch error.code {
            case .invalidInput: 400
            case .unknownActivity: 404
            case .notLive, .noPushToStartToken: 409
            case .sendFailed: 502
            case .store, .noClient: 503
            case .startBudgetSpent: 429
            }
        self.init(status, error.code.rawValue, field: error.field == "activity" ? "id" : error.field, rule: error.rule)
        if error.code == .sendFailed { self.apns = (error.apnsError?.status, error.apnsError?.reason?.rawValue) }
    }

    var body: [UInt8] {
        var error: [String: Any] = ["code": self.code, "rule": self.rule]
        if let field = self.field { error["field"] = field }
        if let state = self.state { error["state"] = state }
        if self.state != nil { error["why"] = self.why ?? NSNull() }
        if let apns = self.apns {
            error["apns"] = ["status": apns.status ?? NSNull(), "reason": apns.reason ?? NSNull()] as [String: Any]
        }
        return ActivityJSON.bytes(["error": error])
    }
}
