package import Foundation

/// A date as people and logs read it: ISO 8601 in UTC with milliseconds, `2026-11-24T05:02:10.123Z`.
/// The one spelling of an absolute time in the device's events, the demo's timeline and its HTML page
/// (never raw seconds since 1970).
package enum ISODate {
    /// `date` as `2026-11-24T05:02:10.123Z`.
    package static func string(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
