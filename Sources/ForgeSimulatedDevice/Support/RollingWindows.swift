internal import struct Foundation.Date

/// Budgets spent in rolling windows, one per key: a value type the device keeps under its lock.
struct RollingWindows<Key: Hashable> {
    private var spent: [Key: [Date]] = [:]

    /// Spends one of `budget` for `key` at `now` when one is left; `false` (nothing spent) when the
    /// last `budget.limit` fell within the window.
    mutating func spend(_ key: Key, budget: RateBudget, at now: Date) -> Bool {
        var dates = self.spent[key, default: []].filter { now.timeIntervalSince($0) < budget.window }
        defer { self.spent[key] = dates }
        guard dates.count < budget.limit else { return false }
        dates.append(now)
        return true
    }
}
