public import InMemoryLogging
public import Logging

/// Every log entry of the loggers it makes, kept in memory for a test to read: swift-log's
/// `InMemoryLogHandler`, one per test. Never bootstraps the global logging system.
public struct LogCapture: Sendable {
    /// The handler shared by every logger made here (copies of it share its entries).
    public let handler: InMemoryLogHandler

    /// A capture of every entry at `level` or above (by default all of them).
    public init(level: Logger.Level = .trace) {
        var handler = InMemoryLogHandler()
        handler.logLevel = level
        self.handler = handler
    }

    /// A logger whose entries land here.
    public func logger(label: String) -> Logger {
        let handler = self.handler
        return Logger(label: label) { _ in handler }
    }

    /// The entries so far, in order.
    public var entries: [InMemoryLogHandler.Entry] { self.handler.entries }

    /// Each entry as one line of text, to search: level, message, metadata and error.
    public var lines: [String] {
        self.entries.map { entry in
            "\(entry.level) \(entry.message) \(entry.metadata)" + (entry.error.map { " error: \($0)" } ?? "")
        }
    }
}
