#if canImport(Glibc)
import Glibc
#endif

/// The strings of the header fields a connection received last, by name, so a field whose bytes
/// repeat (a client sends the same `authorization`, `apns-topic`, `:authority` with every request)
/// becomes a retained string instead of a new one: no allocation and no UTF-8 check per request.
///
/// Owned by one connection's core, on its thread. Holds at most ``capacity`` names (a client's
/// fields, pseudo-headers included); a name past that is converted each time.
struct RecentHeaderStrings {
    private struct Entry {
        var name: String
        var value: String
    }

    static let capacity = 24
    private var entries: [Entry] = []

    /// The strings for `name` and `value`: those kept when the bytes are the same, else new ones
    /// (kept for next time).
    mutating func strings(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> (name: String, value: String) {
        for index in self.entries.indices where Self.equal(self.entries[index].name, name) {
            if !Self.equal(self.entries[index].value, value) {
                self.entries[index].value = String(decoding: value, as: UTF8.self)
            }
            return (self.entries[index].name, self.entries[index].value)
        }
        let entry = Entry(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
        if self.entries.count < Self.capacity { self.entries.append(entry) }
        return (entry.name, entry.value)
    }

    /// Whether `string`'s UTF-8 is `bytes`. A string made by `String(decoding:)` from valid UTF-8
    /// holds those bytes; from invalid UTF-8 it holds repaired ones, which never equal the input,
    /// so such a field is converted each time, as before.
    private static func equal(_ string: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let utf8 = string.utf8
        guard utf8.count == bytes.count else { return false }
        return utf8.withContiguousStorageIfAvailable { stored in
            stored.count == 0 || memcmp(stored.baseAddress!, bytes.baseAddress!, stored.count) == 0
        } ?? utf8.elementsEqual(bytes)
    }
}
