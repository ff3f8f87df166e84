/// Hands each element to every subscriber's `AsyncStream`, each with a bounded buffer: a subscriber
/// that falls `buffer` elements behind is dropped (its stream ends after what it buffered), so a
/// reader that stops reading cannot grow memory. ``finish()`` ends every stream, and streams
/// subscribed afterwards end at once.
///
/// The streams are the standard library's; this type only keeps the continuations, under one lock,
/// and finishes them outside it (a stream's termination handler takes the lock to unsubscribe).
/// Elements are yielded in the order of ``yield(_:)`` calls that do not overlap; callers that need
/// an order across threads call it under their own lock (that lock, then this one, never the reverse).
package final class Fanout<Element: Sendable>: Sendable {
    private struct Subscriber {
        var continuation: AsyncStream<Element>.Continuation
        /// Only elements it selects are yielded; `nil` yields everything.
        var filter: (@Sendable (Element) -> Bool)?
        /// Whether a full buffer ends the stream (a reader that fell behind). A doorbell's buffer
        /// keeps the newest element: its stream reports the older one as `.dropped` on every ring
        /// the reader has not read yet, which is its normal working, never a reason to end it.
        var endsWhenFull: Bool
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var next = 0
        var finished = false
    }

    private let state = LockedBox(State())

    package init() {}

    /// Whether ``finish()`` was called.
    package var isFinished: Bool { self.state.withLock { $0.finished } }

    /// Whether no one is subscribed (a producer may skip building an element).
    package var isEmpty: Bool { self.state.withLock { $0.subscribers.isEmpty } }

    /// A stream of the elements yielded from now on that `filter` selects (all without one),
    /// buffering at most `buffer` of them.
    package func subscribe(buffer: Int, filter: (@Sendable (Element) -> Bool)? = nil) -> AsyncStream<Element> {
        self.subscribe(policy: .bufferingOldest(max(1, buffer)), filter: filter, endsWhenFull: true)
    }

    /// A stream that holds only the newest element not yet read, and is never dropped: a reader that
    /// wants to know that something happened, not each thing (a doorbell), and reads the rest elsewhere.
    package func subscribeNewest() -> AsyncStream<Element> {
        self.subscribe(policy: .bufferingNewest(1), filter: nil, endsWhenFull: false)
    }

    private func subscribe(
        policy: AsyncStream<Element>.Continuation.BufferingPolicy, filter: (@Sendable (Element) -> Bool)?, endsWhenFull: Bool
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: policy)
        let id = self.state.withLock { state -> Int? in
            guard !state.finished else { return nil }
            state.next += 1
            state.subscribers[state.next] = Subscriber(continuation: continuation, filter: filter, endsWhenFull: endsWhenFull)
            return state.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Yields `element` to every subscriber that selects it; drops those whose buffer is full (not a
    /// ``subscribeNewest()`` reader, whose buffer replaces its unread element).
    package func yield(_ element: Element) {
        let overflowed = self.state.withLock { state -> [AsyncStream<Element>.Continuation] in
            var overflowed: [AsyncStream<Element>.Continuation] = []
            for (id, subscriber) in state.subscribers {
                if let filter = subscriber.filter, !filter(element) { continue }
                if case .dropped = subscriber.continuation.yield(element), subscriber.endsWhenFull {
                    state.subscribers[id] = nil
                    overflowed.append(subscriber.continuation)
                }
            }
            return overflowed
        }
        for continuation in overflowed { continuation.finish() }
    }

    /// Ends every stream (after what each buffered); later subscriptions end at once.
    package func finish() {
        let continuations = self.state.withLock { state in
            state.finished = true
            defer { state.subscribers.removeAll() }
            return state.subscribers.values.map(\.continuation)
        }
        for continuation in continuations { continuation.finish() }
    }
}
