internal import ForgeAPNsCore
internal import ForgeLiveActivities
internal import Foundation

/// The one place the gateway hands an update or an end to the manager: each is a request
/// (`request(update:…)`, `request(end:…)`), answered once the registry holds it; the manager's
/// `run()` sends it, paced per activity (the latest state wins, at most one a second, alerting ones
/// within the activity's priority-10 budget).
struct GatewaySender: Sendable {
    let manager: LiveActivityManager

    /// A new content state for a running activity, routine (priority 5) or alerting (10 while the
    /// budget allows).
    /// - Throws: the manager's refusal (unknown, not live or ending, the store).
    func update(_ id: LiveActivityID, contentState: CodableJSON, importance: UpdateImportance) async throws(LiveActivityError) {
        _ = try await self.manager.request(update: id, contentState: contentState, importance: importance)
    }

    /// The end of a running activity, with a final content state (the latest asked for or sent when
    /// `nil`); the activity is `ending` until it is sent.
    /// - Throws: as ``update(_:contentState:importance:)``.
    func end(_ id: LiveActivityID, contentState: CodableJSON?, dismissalDate: Date?) async throws(LiveActivityError) {
        _ = try await self.manager.request(end: id, contentState: contentState, dismissalDate: dismissalDate)
    }
}
