internal import struct Foundation.Date

/// The in-memory store's index of due dates: a binary min-heap of `(dueAt, id)` entries, earliest
/// first, then by id.
///
/// It is kept lazily: a save whose ``ActivityDelivery/dueAt`` changed adds an entry and leaves the
/// old one, which is dropped when it reaches the top and no longer matches its record (the record's
/// `dueAt` differs, or the record is gone). ``InMemoryLiveActivityStore`` rebuilds the heap from its
/// records when stale entries outnumber them, so it holds at most about twice as many entries as
/// there are activities with something due. Finding the due activities then costs `log n` an
/// activity found, instead of reading and sorting every activity.
struct DueIndex {
    struct Entry {
        var dueAt: Date
        var id: LiveActivityID
    }

    private var heap: [Entry] = []

    /// Entries, stale ones included.
    var count: Int { self.heap.count }

    /// The earliest entry, possibly stale.
    var first: Entry? { self.heap.first }

    private static func precedes(_ lhs: Entry, _ rhs: Entry) -> Bool {
        (lhs.dueAt, lhs.id) < (rhs.dueAt, rhs.id)
    }

    mutating func insert(_ entry: Entry) {
        self.heap.append(entry)
        var child = self.heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(self.heap[child], self.heap[parent]) else { break }
            self.heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry.
    @discardableResult
    mutating func removeFirst() -> Entry? {
        guard !self.heap.isEmpty else { return nil }
        self.heap.swapAt(0, self.heap.count - 1)
        let first = self.heap.removeLast()
        self.siftDown(from: 0)
        return first
    }

    /// Replaces every entry with `entries`.
    mutating func rebuild(_ entries: [Entry]) {
        self.heap = entries
        for index in stride(from: self.heap.count / 2 - 1, through: 0, by: -1) { self.siftDown(from: index) }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        let count = self.heap.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { return }
            var earliest = left
            if left + 1 < count, Self.precedes(self.heap[left + 1], self.heap[left]) { earliest = left + 1 }
            guard Self.precedes(self.heap[earliest], self.heap[parent]) else { return }
            self.heap.swapAt(parent, earliest)
            parent = earliest
        }
    }
}
