internal import ForgeSupport

/// The handlers of a router, by unique id, safe to change while pushes are being handled: each
/// dispatch works on the snapshot it took. Shared by the silent and visible routers.
package final class HandlerRegistry<Handler: Sendable>: Sendable {
    private let handlers = LockedBox<[(id: String, handler: Handler)]>([])

    package init() {}

    /// Adds `handler` under `id`; refuses (returns `false`) when the id is taken.
    package func add(_ handler: Handler, id: String) -> Bool {
        self.handlers.withLock { handlers in
            guard !handlers.contains(where: { $0.id == id }) else { return false }
            handlers.append((id, handler))
            return true
        }
    }

    /// Removes the handler with `id`; returns whether there was one.
    package func remove(id: String) -> Bool {
        self.handlers.withLock { handlers in
            guard let index = handlers.firstIndex(where: { $0.id == id }) else { return false }
            handlers.remove(at: index)
            return true
        }
    }

    /// The ids, in registration order.
    package var ids: [String] { self.handlers.withLock { $0.map(\.id) } }

    /// The handlers now, in registration order.
    package var snapshot: [Handler] { self.handlers.withLock { $0.map(\.handler) } }
}
