import ForgeAPNsCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Results go to stdout, diagnostics to stderr, unbuffered by line so pipes see them in order.
///
/// Every byte written passes through ``ProviderTokenRedaction``: a provider token in a value
/// (a topic, a device token, a payload, an error quoting an input) is printed as
/// `eyJhbGci…(a provider token, redacted)`, whichever command and format printed it. Only
/// ``providerToken(_:)`` (`apnsctl jwt`, whose result is the token) writes one whole.
enum Output {
    /// `--color`: `auto` (on a terminal, unless `NO_COLOR` is set), `always` or `never`.
    enum ColorChoice: String, CaseIterable {
        case auto, always, never
    }

    /// Whether stdout and stderr get colour; set once by ``useColor(_:environment:)`` before any output.
    nonisolated(unsafe) private(set) static var colors = (stdout: false, stderr: false)

    /// Decides colour for each stream: `always`, or `auto` on a terminal with `NO_COLOR` unset
    /// (https://no-color.org: any non-empty value turns it off).
    static func useColor(_ choice: ColorChoice, environment: [String: String]) {
        let allowed = (environment["NO_COLOR"] ?? "").isEmpty
        switch choice {
        case .always: Self.colors = (true, true)
        case .never: Self.colors = (false, false)
        case .auto: Self.colors = (allowed && isatty(STDOUT_FILENO) == 1, allowed && isatty(STDERR_FILENO) == 1)
        }
    }

    /// `text` in red, yellow or green on stdout (results), when stdout gets colour.
    static func paint(_ text: String, _ color: Color) -> String {
        Self.colors.stdout ? color.wrap(text) : text
    }

    /// The SGR codes used: red for errors and failures, yellow for warnings, green for success.
    enum Color: String {
        case red = "31", yellow = "33", green = "32"

        func wrap(_ text: String) -> String { "\u{1B}[\(self.rawValue)m\(text)\u{1B}[0m" }
    }

    static func result(_ line: String) {
        Self.write(line + "\n", to: STDOUT_FILENO)
    }

    static func diagnostic(_ line: String) {
        // A progress bar on the line is erased first (it redraws below): no message glued onto it.
        let erase = Self.barOnScreen.exchange(false, ordering: .acquiringAndReleasing) ? "\r\u{1B}[K" : ""
        Self.write(erase + Self.paintPrefix(line) + "\n", to: STDERR_FILENO)
    }

    /// Whether a ``ProgressBar`` is drawn on stderr's current line.
    static let barOnScreen = Atomic<Bool>(false)

    /// `error:` in red, `warning:`, `hint:` and `note:` in yellow, at the start of a diagnostic.
    private static func paintPrefix(_ line: String) -> String {
        guard Self.colors.stderr else { return line }
        for (prefix, color) in [("error:", Color.red), ("warning:", .yellow), ("hint:", .yellow), ("note:", .yellow)]
        where line.hasPrefix(prefix) {
            return color.wrap(prefix) + line.dropFirst(prefix.count)
        }
        return line
    }

    /// Results already laid out as bytes, newlines included: one write for many lines.
    static func results(_ bytes: [UInt8]) {
        Self.write(bytes, to: STDOUT_FILENO)
    }

    /// A provider token as the result, not redacted: `apnsctl jwt` prints the token it signed.
    static func providerToken(_ jwt: String) {
        Self.writeAsIs(Array((jwt + "\n").utf8), to: STDOUT_FILENO)
    }

    private static func write(_ text: String, to descriptor: Int32) {
        Self.write(Array(text.utf8), to: descriptor)
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        Self.writeAsIs(ProviderTokenRedaction.redacting(bytes), to: descriptor)
    }

    private static func writeAsIs(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
