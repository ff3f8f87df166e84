import ArgumentParser
import ForgeAPNs
import ForgeAPNsCore
import ForgeCrypto
import ForgeHTTP2
import ForgeLoopback
import ForgeSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Distinct 64-digit tokens made on the fly, never held in memory together.
struct GeneratedTokens: AsyncSequence, Sendable {
    typealias Element = String
    let count: Int
    var offset = 0

    static func token(_ index: Int) -> DeviceToken {
        try! DeviceToken(Self.hex(index))
    }

    static func hex(_ index: Int) -> String {
        // Computed digits, no table: the generator stands for the application's token source and
        // should cost little next to the send it feeds.
        String(unsafeUninitializedCapacity: 64) { buffer in
            for position in 0..<64 {
                let shift = (63 - position) * 4
                let nibble = shift < 64 ? UInt8(truncatingIfNeeded: (index >> shift) & 0xF) : 0xA
                buffer[position] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
            }
            return 64
        }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        var next = 0
        let end: Int
        mutating func next() async -> String? {
            guard self.next < self.end else { return nil }
            defer { self.next += 1 }
            return GeneratedTokens.hex(self.next)
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(next: self.offset, end: self.offset + self.count) }
}
