internal import ForgeAPNsCore
internal import ForgeLiveActivities
internal import Foundation

/// The one place the gateway hands an update or an end to the manager. Each call is one
/// `update(activity:…)` or `end(activity:…)` now, answered once APNs has answered; this type is the
/// seam where a coalescing send (answered when accepted, sent after) takes its place, so the
/// routes, their answers and their tests do not change with it.
struct GatewaySender: Sendable {
    let manager: LiveActivityManager

    /// A new content state for a running activity, at `priority`; held until its update token
    /// arrives when it has none yet.
    /// - Throws: the manager's refusal (unknown, not live, a push not accepted, the store).
    func update(_ id: LiveActivityID, contentState: CodableJSON, priority: APNSPriority) async throws(LiveActivityError) {
        _ = try await self.manager.update(activity: id, contentState: contentState, priority: priority)
    }

    /// The end of a running activity, with a final content state (the last one sent when `nil`).
    /// - Throws: as ``update(_:contentState:priority:)``.
    func end(_ id: LiveActivityID, contentState: CodableJSON?, dismissalDate: Date?) async throws(LiveActivityError) {
        _ = try await self.manager.end(activity: id, contentState: contentState, dismissalDate: dismissalDate)
    }
}
