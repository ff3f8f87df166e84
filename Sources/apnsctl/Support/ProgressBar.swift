import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A one-line progress bar on stderr, redrawn in place at most ten times a second: done / total
/// (when known), rate, errors and ETA. Only drawn when stderr is a terminal.
struct ProgressBar {
    let total: Int?
    let started = ContinuousClock.now
    private var lastDraw: ContinuousClock.Instant?
    private(set) var isVisible = false

    init(total: Int?) { self.total = total }

    /// Whether stderr is a terminal (no bar into files and pipes).
    static var isAvailable: Bool { isatty(STDERR_FILENO) == 1 }

    /// Whether a redraw is due: 100 ms passed since the last drawing (the caller asks before it
    /// gathers the counts, and draws only then).
    var isDue: Bool {
        guard let lastDraw = self.lastDraw else { return true }
        return ContinuousClock.now - lastDraw >= .milliseconds(100)
    }

    /// Redraws the bar now.
    mutating func update(done: Int, errors: Int) {
        let now = ContinuousClock.now
        self.lastDraw = now
        let elapsed = Self.seconds(now - self.started)
        let rate = elapsed > 0 ? Double(done) / elapsed : 0
        var text = "\r"
        if let total, total > 0 {
            let width = 24
            let filled = min(width, done * width / total)
            text += "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            text += "\(done)/\(total)"
        } else {
            text += "\(done) sent"
        }
        text += String(format: "  %.0f/s  errors %d", rate, errors)
        if let total, rate > 0, done < total {
            text += String(format: "  ETA %.0fs", Double(total - done) / rate)
        }
        Self.write(text + "\u{1B}[K")
        self.isVisible = true
        Output.barOnScreen.store(true, ordering: .releasing)
    }

    /// Erases the bar, so other output starts on a clean line.
    mutating func clear() {
        guard self.isVisible else { return }
        Self.write("\r\u{1B}[K")
        self.isVisible = false
        Output.barOnScreen.store(false, ordering: .releasing)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private static func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
