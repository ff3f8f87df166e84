/// Makes Live Activity ids and update tokens: deterministic (SplitMix64 from a fixed seed), so a
/// timeline reads the same on every run.
struct TokenGenerator {
    private var state: UInt64 = 0x5EED_F0A6_E9B5_0001
    private var count = 0

    /// The next activity id and its 32-byte update token, lower-case hex.
    mutating func next() -> (id: String, token: String) {
        self.count += 1
        let words = (0..<4).map { _ in self.nextWord() }
        let token = words.map { word in
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
        return ("activity-\(self.count)", token)
    }

    private mutating func nextWord() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
