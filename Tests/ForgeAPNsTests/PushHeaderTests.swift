import ForgeAPNsCore
import ForgeHTTP2
import ForgeTestSupport
import Foundation
import Testing

/// A campaign push's `apns-id` is written into the header block from its 16 bytes, not from a
/// string: the text must be the identifier's canonical form, as Foundation writes it (lower-cased).
@Suite struct PushHeaderTests {
    @Test("5,000 identifiers (campaign ones and random) read as Foundation's uuidString, lower case")
    func matchesFoundation() {
        var random = SplitMix64(seed: 0x5EED_1D5)
        for round in 0..<5_000 {
            let id: APNSID
            if round % 2 == 0 {
                id = APNSID(campaign: UUID(), index: Int(random.next() % (1 << 48)))
            } else {
                var bytes = UUID().uuid
                withUnsafeMutableBytes(of: &bytes) { raw in
                    for index in raw.indices { raw[index] = UInt8(truncatingIfNeeded: random.next()) }
                }
                id = APNSID(UUID(uuid: bytes))
            }
            let header = HTTP2UUIDHeader("apns-id", bytes: id.bytes)
            #expect(header.value == id.uuid.uuidString.lowercased())
            #expect(header.value == id.description)
        }
    }

    @Test("Equal identifiers make equal headers; different ones do not")
    func equality() {
        let id = APNSID()
        #expect(HTTP2UUIDHeader("apns-id", bytes: id.bytes) == HTTP2UUIDHeader("apns-id", bytes: APNSID(id.uuid).bytes))
        #expect(HTTP2UUIDHeader("apns-id", bytes: id.bytes) != HTTP2UUIDHeader("apns-id", bytes: APNSID().bytes))
    }
}
