/// Values by HTTP/2 stream id, for the streams one side opens.
///
/// ## Function
/// A dictionary keyed by stream id, without hashing: the side that opens streams numbers them 1, 3,
/// 5, … (or 2, 4, …) in the order it opens them, so `id / 2` modulo a power of two spreads the open
/// streams over the slots. A stream finds its slot taken only when a stream opened a whole table's
/// worth earlier is still open; it then waits in a small dictionary.
///
/// ## Implementation
/// `ids` says which stream holds each slot (0: none, as no stream has id 0), so a lookup compares
/// two integers before touching a value. The table doubles when it is half full, which keeps such
/// collisions rare however many streams the peer allows.
struct StreamTable<Value> {
    private var ids: [Int32]
    private var values: [Value?]
    private var overflow: [Int32: Value] = [:]
    /// Streams in the table.
    private(set) var count = 0

    init(capacity: Int = 64) {
        var size = 16
        while size < capacity { size <<= 1 }
        self.ids = Array(repeating: 0, count: size)
        self.values = Array(repeating: nil, count: size)
    }

    var isEmpty: Bool { self.count == 0 }

    @inline(__always)
    private func slot(_ id: Int32) -> Int { Int(id >> 1) & (self.ids.count - 1) }

    /// The value of stream `id`, if it is in the table.
    subscript(id: Int32) -> Value? {
        let slot = self.slot(id)
        if self.ids[slot] == id { return self.values[slot] }
        return self.overflow.isEmpty ? nil : self.overflow[id]
    }

    /// Adds stream `id`, which must not be in the table yet.
    mutating func insert(_ value: Value, for id: Int32) {
        precondition(id > 0, "stream ids start at 1")
        if (self.count + 1) * 2 > self.ids.count { self.grow() }
        self.place(value, for: id)
        self.count += 1
    }

    /// Removes stream `id` and returns its value.
    @discardableResult
    mutating func removeValue(for id: Int32) -> Value? {
        let slot = self.slot(id)
        if self.ids[slot] == id {
            self.ids[slot] = 0
            self.count -= 1
            return self.values[slot].take()
        }
        guard !self.overflow.isEmpty, let value = self.overflow.removeValue(forKey: id) else { return nil }
        self.count -= 1
        return value
    }

    /// Changes the value of stream `id` in place.
    /// - Returns: whether the stream was in the table.
    @discardableResult
    mutating func modify(_ id: Int32, _ body: (inout Value) -> Void) -> Bool {
        let slot = self.slot(id)
        if self.ids[slot] == id {
            body(&self.values[slot]!)
            return true
        }
        guard !self.overflow.isEmpty, self.overflow[id] != nil else { return false }
        body(&self.overflow[id]!)
        return true
    }

    /// Calls `body` with every stream and its value, in no particular order; `body` must not change
    /// the table.
    func forEach(_ body: (Int32, Value) -> Void) {
        for slot in self.ids.indices where self.ids[slot] != 0 { body(self.ids[slot], self.values[slot]!) }
        for (id, value) in self.overflow { body(id, value) }
    }

    /// The first stream, in no particular order, whose value `predicate` accepts.
    func firstID(where predicate: (Value) -> Bool) -> Int32? {
        for slot in self.ids.indices where self.ids[slot] != 0 && predicate(self.values[slot]!) { return self.ids[slot] }
        return self.overflow.first(where: { predicate($0.value) })?.key
    }

    /// Every stream and its value, in no particular order.
    var all: [(id: Int32, value: Value)] {
        var result: [(id: Int32, value: Value)] = []
        result.reserveCapacity(self.count)
        for slot in self.ids.indices where self.ids[slot] != 0 { result.append((self.ids[slot], self.values[slot]!)) }
        for (id, value) in self.overflow { result.append((id, value)) }
        return result
    }

    /// Empties the table and returns what it held.
    mutating func removeAll() -> [(id: Int32, value: Value)] {
        let all = self.all
        for slot in self.ids.indices where self.ids[slot] != 0 {
            self.ids[slot] = 0
            self.values[slot] = nil
        }
        self.overflow.removeAll()
        self.count = 0
        return all
    }

    private mutating func place(_ value: Value, for id: Int32) {
        let slot = self.slot(id)
        if self.ids[slot] == 0 {
            self.ids[slot] = id
            self.values[slot] = value
        } else {
            self.overflow[id] = value
        }
    }

    private mutating func grow() {
        let entries = self.all
        let size = self.ids.count * 2
        self.ids = Array(repeating: 0, count: size)
        self.values = Array(repeating: nil, count: size)
        self.overflow.removeAll()
        for (id, value) in entries { self.place(value, for: id) }
    }
}
