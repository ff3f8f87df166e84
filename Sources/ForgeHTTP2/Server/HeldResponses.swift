/// Responses a server connection holds back before submitting them: the simulated round trip of
/// ``HTTP2ServerConfiguration/responseDelay`` and the per-response delays of
/// ``HTTP2Responder/respond(_:after:)``.
///
/// ## Overview
/// Owned by one connection's I/O thread (``ServerLoop``), which appends each response with the
/// monotonic time it is due, asks ``nextDue`` for its poll timeout, and takes what is due with
/// ``popDue(now:)`` before it writes. Nothing here sleeps or runs on its own.
///
/// ## Implementation
/// Every response held for the connection's own delay is due a constant time after it was made,
/// so those due times never decrease: a FIFO ring buffer holds them, with no search and no
/// allocation once it has grown to the connection's peak (50-100k responses/s must stay cheap).
/// Responses held for a delay of their own (a fault, rarely more than a few) are due in any
/// order: a short array kept sorted by due time holds them, and ``popDue(now:)`` takes whichever
/// head is due first.
struct HeldResponses {
    struct Entry {
        /// When to submit it (monotonic nanoseconds).
        var due: UInt64
        var streamID: Int32
        var response: HTTP2Response
    }

    /// The FIFO: `count` entries from `head`, wrapping; its capacity is 0 or a power of two.
    private var ring: [Entry?] = []
    private var head = 0
    private var ringCount = 0
    /// The latest due time appended to the FIFO: a later append is never due before it.
    private var lastDue: UInt64 = 0
    /// Entries with a delay of their own, sorted by due time (equal ones in arrival order).
    private var scheduled: [Entry] = []

    /// Responses held.
    var count: Int { self.ringCount + self.scheduled.count }

    var isEmpty: Bool { self.count == 0 }

    /// When the next held response is due, or `nil` when none is held.
    var nextDue: UInt64? {
        let fifo = self.ringCount > 0 ? self.ring[self.head]!.due : nil
        guard let first = self.scheduled.first?.due else { return fifo }
        return min(fifo ?? first, first)
    }

    /// Holds a response made now with the connection's delay: `due` is now plus that constant, so
    /// it is never before the due time of an earlier append (a smaller one is raised to it).
    mutating func append(due: UInt64, streamID: Int32, response: HTTP2Response) {
        if self.ringCount == self.ring.count { self.grow() }
        let due = max(due, self.lastDue)
        self.lastDue = due
        self.ring[(self.head &+ self.ringCount) & (self.ring.count &- 1)] = Entry(due: due, streamID: streamID, response: response)
        self.ringCount += 1
    }

    /// Holds a response with a delay of its own, due at `due` whatever else is held.
    mutating func schedule(due: UInt64, streamID: Int32, response: HTTP2Response) {
        let index = self.scheduled.lastIndex { $0.due <= due }.map { $0 + 1 } ?? 0
        self.scheduled.insert(Entry(due: due, streamID: streamID, response: response), at: index)
    }

    /// The earliest held response due at `now` or before, removed; `nil` when none is due yet.
    mutating func popDue(now: UInt64) -> Entry? {
        let fifoDue = self.ringCount > 0 ? self.ring[self.head]!.due : UInt64.max
        if let first = self.scheduled.first, first.due <= now, first.due < fifoDue {
            return self.scheduled.removeFirst()
        }
        guard self.ringCount > 0, fifoDue <= now else { return nil }
        let entry = self.ring[self.head].take()!
        self.head = (self.head &+ 1) & (self.ring.count &- 1)
        self.ringCount -= 1
        return entry
    }

    /// Doubles the ring, unwrapping its entries to the front of the new storage.
    private mutating func grow() {
        let capacity = max(16, self.ring.count * 2)
        var grown: [Entry?] = []
        grown.reserveCapacity(capacity)
        for offset in 0..<self.ringCount {
            grown.append(self.ring[(self.head &+ offset) & (self.ring.count &- 1)].take())
        }
        grown.append(contentsOf: repeatElement(nil, count: capacity - self.ringCount))
        self.ring = grown
        self.head = 0
    }
}
