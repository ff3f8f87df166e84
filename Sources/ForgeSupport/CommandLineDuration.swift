/// A duration as the command-line tools take it (`apnsctl serve --latency`, `apns-bench … --latency`):
/// a number and a unit, `250us`, `30ms`, `0.03s`, `1s`, or a bare `0`. One parser for both tools.
package enum CommandLineDuration {
    /// What a valid value looks like, for usage errors and help.
    package static let rule = "a number and a unit, us, ms or s (250us, 30ms, 0.03s, 1s), from 0 to 1 hour"

    /// A value that breaks ``rule``; its description is the rule.
    package struct Error: Swift.Error, CustomStringConvertible {
        package var value: String
        package var description: String { "expected \(CommandLineDuration.rule)" }
    }

    /// Units, longest suffix first (`ms` and `us` also end in `s`).
    private static let units: [(suffix: String, nanoseconds: Double)] = [("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)]

    /// Reads `30ms`, `0.03s`, `250us`, `1s` or `0`.
    /// - Throws: ``Error`` for anything else: no unit, another unit, a sign, an exponent, more than an hour.
    package static func parse(_ text: String) throws(Error) -> Duration {
        if text == "0" { return .zero }
        guard let unit = Self.units.first(where: { text.hasSuffix($0.suffix) }) else { throw Error(value: text) }
        let number = text.dropLast(unit.suffix.count)
        // Digits with at most one decimal point: Double(_:) alone would also take "+1", "1e3", "inf", "nan".
        guard number.contains(where: \.isWholeNumber), number.allSatisfy({ $0 == "." || ("0"..."9").contains($0) }),
              number.filter({ $0 == "." }).count <= 1, let value = Double(number)
        else { throw Error(value: text) }
        let nanoseconds = (value * unit.nanoseconds).rounded()
        guard nanoseconds <= 3_600e9 else { throw Error(value: text) }  // an hour: the rule's bound
        return .nanoseconds(Int64(nanoseconds))
    }

    /// `duration` (one ``parse(_:)`` returned) as ``parse(_:)`` reads it back: `30ms` when it is
    /// whole milliseconds, else in microseconds (`250us`, `1500.5us`).
    package static func text(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        if nanoseconds == 0 { return "0" }
        if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000)ms" }
        if nanoseconds % 1_000 == 0 { return "\(nanoseconds / 1_000)us" }
        return "\(Double(nanoseconds) / 1_000)us"
    }
}
