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

@Suite("SessionAllocator: nghttp2's small blocks reused")
struct SessionAllocatorTests {
    @Test("Blocks keep their contents through realloc, come back for reuse, and big ones pass through")
    func reuseAndRealloc() throws {
        let allocator = SessionAllocator()
        var blocks: [UnsafeMutableRawPointer] = []
        for size in [1, 64, 65, 200, 1024, 1025, 70_000] {
            let block = try #require(allocator.allocate(size))
            block.initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: size), count: size)
            blocks.append(block)
        }
        // Growing keeps the bytes; shrinking or staying within the class keeps the block.
        let grown = try #require(allocator.reallocate(blocks[1], to: 3_000))
        #expect((0..<64).allSatisfy { grown.load(fromByteOffset: $0, as: UInt8.self) == 64 })
        #expect(allocator.reallocate(grown, to: 10) == grown)
        blocks[1] = grown
        for block in blocks { allocator.free(block) }
        allocator.free(nil)
        guard SessionAllocator.cachedPerClass > 0 else { return }  // AddressSanitizer: nothing is kept
        // 1 and the 64 that grew (freed by the realloc) -> class 0; 65 -> 1; 200 -> 2; 1024 -> 4;
        // 1025, 70 000 and the grown block are big and go back to malloc.
        #expect(allocator.cachedBlocks == [2, 1, 1, 0, 1])
        let again = try #require(allocator.allocate(30))
        #expect(allocator.cachedBlocks == [1, 1, 1, 0, 1])
        allocator.free(again)
    }

    @Test("A session's requests run on reused blocks after the first burst")
    func sessionReuses() throws {
        let pair = try InMemoryPair()
        pair.autoRespond = { request in HTTP2Response(status: 200, headers: [HTTP2HeaderField("apns-id", "\(request.streamID)")]) }
        for _ in 0..<3 {
            let ids = (0..<50).map { _ in pair.send(request()) }
            try pair.pump()
            #expect(ids.allSatisfy { (try? pair.results[$0]?.get().status) == 200 })
        }
        #expect(pair.client.sessionAllocator.cachedBlocks.reduce(0, +) > 0 || SessionAllocator.cachedPerClass == 0)
    }
}

@Suite("StreamTable: walking and searching without copying")
struct StreamTableWalkTests {
    @Test("forEach and firstID see slots and the overflow alike")
    func walk() {
        var table = StreamTable<Int>(capacity: 16)
        table.insert(10, for: 1)
        table.insert(20, for: 33)  // shares stream 1's slot: waits in the overflow
        table.insert(30, for: 5)
        var seen: [Int32: Int] = [:]
        table.forEach { id, value in seen[id] = value }
        #expect(seen == [1: 10, 33: 20, 5: 30])
        #expect(table.firstID(where: { $0 == 20 }) == 33)
        #expect(table.firstID(where: { $0 == 30 }) == 5)
        #expect(table.firstID(where: { $0 == 40 }) == nil)
    }
}
