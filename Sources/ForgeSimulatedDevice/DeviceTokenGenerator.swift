/// Deterministic tokens: 32 bytes as 64 lower-case hex digits, from a seed (SplitMix64), so every run
/// addresses the same tokens.
///
/// The device makes its Live Activity update tokens with one; tests and the loopback scenarios make
/// device tokens with it. ``next()`` gives the tokens of a seed in order; ``token(seed:index:)`` gives
/// the one at `index` directly (the same value).
package struct DeviceTokenGenerator: Sendable {
    /// The golden-ratio increment of SplitMix64.
    private static let increment: UInt64 = 0x9E37_79B9_7F4A_7C15
    private var state: UInt64

    /// A generator whose first token is `token(seed: seed, index: 0)`.
    package init(seed: UInt64) { self.state = seed }

    /// The next token.
    package mutating func next() -> String {
        (0..<4).map { _ in
            let hex = String(self.nextWord(), radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// The token at `index` of `seed`'s sequence.
    package static func token(seed: UInt64, index: Int) -> String {
        // Four words per token.
        var generator = DeviceTokenGenerator(seed: seed &+ UInt64(index) &* 4 &* Self.increment)
        return generator.next()
    }

    private mutating func nextWord() -> UInt64 {
        self.state &+= Self.increment
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
