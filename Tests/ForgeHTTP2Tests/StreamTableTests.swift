@testable import ForgeHTTP2
import Testing

@Suite("StreamTable: stream ids to values without hashing")
struct StreamTableTests {
    @Test("Behaves as a dictionary through collisions, growth and a stream that stays open")
    func matchesDictionary() {
        var table = StreamTable<String>(capacity: 16)
        var reference: [Int32: String] = [:]
        func check() {
            #expect(table.count == reference.count)
            #expect(Dictionary(uniqueKeysWithValues: table.all.map { ($0.id, $0.value) }) == reference)
        }
        // Stream 1 stays open while thousands open and close after it: their slots collide with
        // it over and over, and the table grows past its first size.
        table.insert("first", for: 1)
        reference[1] = "first"
        var next: Int32 = 3
        var open: [Int32] = []
        for round in 0..<2_000 {
            let opening = 1 + round % 7
            for _ in 0..<opening {
                table.insert("s\(next)", for: next)
                reference[next] = "s\(next)"
                open.append(next)
                next += 2
            }
            // Close some, not in order: the oldest, and one from the middle.
            for index in [0, open.count / 2] where index < open.count {
                let id = open.remove(at: index)
                #expect(table.removeValue(for: id) == reference.removeValue(forKey: id))
            }
            if round % 97 == 0 { check() }
        }
        check()
        #expect(table[1] == "first")
        #expect(table.modify(1) { $0 += "!" })
        #expect(table[1] == "first!")
        #expect(!table.modify(next) { _ in Issue.record("modified a stream not in the table") })
        #expect(table[next] == nil && table.removeValue(for: next) == nil)
        let emptied = table.removeAll()
        #expect(emptied.count == reference.count && table.isEmpty && table.all.isEmpty)
        #expect(table[1] == nil)
    }

    @Test("Ids a table's size apart share a slot; both are found and removed")
    func sharedSlot() {
        var table = StreamTable<Int>(capacity: 16)
        table.insert(1, for: 1)
        table.insert(2, for: 33)  // (33 >> 1) & 15 == (1 >> 1) & 15
        #expect(table[1] == 1 && table[33] == 2 && table.count == 2)
        #expect(table.removeValue(for: 1) == 1)
        #expect(table[33] == 2)
        table.insert(3, for: 65)
        #expect(table[65] == 3 && table[33] == 2 && table.count == 2)
        #expect(table.removeValue(for: 33) == 2 && table.removeValue(for: 65) == 3 && table.isEmpty)
    }
}
