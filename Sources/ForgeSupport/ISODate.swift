package import Foundation

/// A date as people and logs read it: ISO 8601 in UTC with milliseconds, `2026-11-24T05:02:10.123Z`.
/// The one spelling of an absolute time in the device's events, the demo's timeline and its HTML page
/// (never raw seconds since 1970), and in `apnsctl serve --record`'s lines.
package enum ISODate {
    /// A value type: shared by every thread, made once (a formatter per call cost more than the
    /// line it formats when `serve --record` writes one per accepted push).
    private static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// `date` as `2026-11-24T05:02:10.123Z`.
    package static func string(_ date: Date) -> String {
        date.formatted(Self.style)
    }
}
