/// base64url without padding (RFC 4648 §5), as JWTs use it: ForgeCrypto signs and verifies
/// provider tokens with it, ``ProviderTokenRedaction`` recognises them with it.
package enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output = [UInt8]()
        output.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            output.append(alphabet[Int(first >> 2)])
            output.append(alphabet[Int((first & 0x03) << 4 | (second ?? 0) >> 4)])
            if let second {
                output.append(alphabet[Int((second & 0x0f) << 2 | (third ?? 0) >> 6)])
                if let third { output.append(alphabet[Int(third & 0x3f)]) }
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes strictly: no padding, no other characters, no impossible lengths or stray bits.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Self.decode(bytes: text.utf8)
    }

    /// ``decode(_:)`` of text already in bytes.
    package static func decode(bytes input: some Collection<UInt8>) -> [UInt8]? {
        guard input.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(input.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in input {
            let value = decodeTable[Int(byte)]
            guard value != 0xff else { return nil }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero, or two encodings would decode to the same bytes.
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return output
    }
}
