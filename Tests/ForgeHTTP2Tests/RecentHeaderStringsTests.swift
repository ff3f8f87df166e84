@testable import ForgeHTTP2
import ForgeTestSupport
import Testing

@Suite("RecentHeaderStrings: repeated header bytes reuse their strings; every result equals String(decoding:)")
struct RecentHeaderStringsTests {
    private static func strings(_ cache: inout RecentHeaderStrings, _ name: [UInt8], _ value: [UInt8]) -> (name: String, value: String) {
        name.withUnsafeBufferPointer { name in value.withUnsafeBufferPointer { value in cache.strings(name: name, value: value) } }
    }

    @Test("Fields in any order, repeated, changed, empty, not UTF-8, and more names than it keeps")
    func matchesDecoding() {
        var cache = RecentHeaderStrings()
        let names = (0..<RecentHeaderStrings.capacity + 6).map { Array("x-field-\($0)".utf8) } + [Array(":path".utf8), Array("authorization".utf8)]
        let values: [[UInt8]] = [
            [], Array("bearer eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJGT1JHRVRFQU0xIn0.c2lnbmF0dXJl".utf8), Array("a".utf8),
            Array("/3/device/0123".utf8), [0xC3, 0x28], [0xFF], Array("é日本".utf8), Array("b".utf8),
        ]
        var random = SplitMix64(seed: 0x4EAD)
        for _ in 0..<5000 {
            let name = names.randomElement(using: &random)!
            let value = values.randomElement(using: &random)!
            let result = Self.strings(&cache, name, value)
            #expect(result.name == String(decoding: name, as: UTF8.self))
            #expect(result.value == String(decoding: value, as: UTF8.self))
        }
    }

    @Test("The same bytes twice give the same stored string; changed bytes give the new value")
    func reuse() {
        var cache = RecentHeaderStrings()
        let token = Array(("bearer " + String(repeating: "x", count: 160)).utf8)
        let first = Self.strings(&cache, Array("authorization".utf8), token)
        let second = Self.strings(&cache, Array("authorization".utf8), token)
        #expect(first.value == second.value)
        #expect(first.value.utf8.withContiguousStorageIfAvailable { $0.baseAddress }
            == second.value.utf8.withContiguousStorageIfAvailable { $0.baseAddress }, "the second is the stored string, not a copy")
        let changed = Self.strings(&cache, Array("authorization".utf8), Array("bearer other".utf8))
        #expect(changed.value == "bearer other")
    }
}
