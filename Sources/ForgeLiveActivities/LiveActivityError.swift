public import ForgeAPNs

/// Why the manager refused a report or a send: the field and the rule it broke, or the state that
/// forbids it. Nothing was sent and nothing in the store changed unless ``Code/sendFailed`` says a
/// push was tried (its ``apnsError`` then says what APNs or the transport answered).
public struct LiveActivityError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of refusal.
    public enum Code: String, Hashable, Sendable {
        /// A report or an argument is malformed: ``field`` and ``rule`` say which and why.
        case invalidInput = "invalid_input"
        /// No activity has this id.
        case unknownActivity = "unknown_activity"
        /// The activity has ended or is dead: nothing more is sent to it.
        case notLive = "not_live"
        /// No usable push-to-start token for the installation, bundle id and attributes type:
        /// none reported, or the one reported is stale or dead (``rule`` says which).
        case noPushToStartToken = "no_push_to_start_token"
        /// A push was sent and not accepted (``apnsError``).
        case sendFailed = "send_failed"
        /// The store failed or kept changing under a write (``rule`` says which).
        case store
        /// A send asked of a manager made without a client (``LiveActivityManager/init(store:clock:configuration:)``).
        case noClient = "no_client"
        /// The install's start budget for the attributes type is spent
        /// (``LiveActivityManager/Configuration/startBudget``): a start now would be accepted by
        /// APNs and dropped by iOS. The rule says when the next one is free.
        case startBudgetSpent = "start_budget_spent"
    }

    public var code: Code
    /// The field of the report or argument at fault, when one is.
    public var field: String?
    /// The rule broken, or the state met, in words.
    public var rule: String
    /// For ``Code/sendFailed``: APNs' answer or the transport's failure.
    public var apnsError: APNSError?
    /// For ``Code/sendFailed``: the token the push went to.
    public var token: DeviceToken?

    public init(_ code: Code, field: String? = nil, rule: String, apnsError: APNSError? = nil, token: DeviceToken? = nil) {
        self.code = code
        self.field = field
        self.rule = rule
        self.apnsError = apnsError
        self.token = token
    }

    public var description: String {
        if let field { return "\(field): \(self.rule)" }
        return self.rule
    }
}
