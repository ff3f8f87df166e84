/// The known word nearest to a mistyped one: the one a unique prefix names, else the one at the
/// smallest edit distance (at most 2, or a third of the word), as git and cargo suggest.
enum DidYouMean {
    /// The candidate `word` most likely meant, or `nil` when none is close.
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        let lower = word.lowercased()
        guard !lower.isEmpty else { return nil }
        let prefixed = candidates.filter { $0.hasPrefix(lower) }
        if prefixed.count == 1 { return prefixed[0] }
        let limit = max(2, lower.count / 3)
        let scored = candidates.map { ($0, Self.distance(lower, $0)) }.filter { $0.1 <= limit }
        return scored.min { $0.1 < $1.1 }?.0
    }

    /// The Levenshtein distance (insertions, deletions and substitutions; a swap counts as one).
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var beforePrevious = previous
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { current[j] = min(current[j], beforePrevious[j - 2] + 1) }
            }
            beforePrevious = previous
            previous = current
        }
        return previous[b.count]
    }
}
