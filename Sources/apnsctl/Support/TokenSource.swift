import ForgeAPNsCore
import ForgeCrypto
import ForgeSupport
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One usable line of a tokens file: a token, and its own prepared notification when the line
/// carried a payload.
struct TokenEntry: Sendable {
    var line: Int
    var token: DeviceToken
    var notification: APNSPreparedNotification?
}

/// Reads a tokens file line by line (`getline`, so a file of a million lines is never in memory):
/// one hex token a line, or an NDJSON object `{"token":"…","payload":{…}}`. Blank lines and
/// `#` comments are skipped; a bad line is reported on stderr as `name:line: problem`.
final class TokenLines {
    /// How a line was judged.
    enum Line {
        case entry(TokenEntry)
        case skipped
        case bad(line: Int, problem: String)
    }

    private let file: UnsafeMutablePointer<FILE>
    private let ownsFile: Bool
    private var buffer: UnsafeMutablePointer<CChar>?
    private var capacity = 0
    private(set) var lineNumber = 0
    let name: String
    let headers: NotificationOptions.Headers
    let hasSharedPayload: Bool
    /// Lines before this one are skipped unread (`--resume-from`).
    var firstLine = 1
    /// What a line's own `topic` needs: the bundle ids some credential serves, and the shared body.
    var topics = LineTopics()
    /// Every byte read goes into it (`--journal`: the file is hashed in the pass that reads it).
    var digest: SHA256Digest?
    /// Bad lines are not reported (a second reading, for a report).
    var quiet = false
    /// Bytes read so far: the file's size once ``next()`` returned `nil`.
    private(set) var bytesRead = 0

    /// Opens `path`, or reads standard input for `-`.
    /// - Throws: ``CLIFailure`` 66 when the file does not exist.
    init(path: String, headers: NotificationOptions.Headers, hasSharedPayload: Bool) throws {
        if path == "-" {
            guard let file = fdopen(dup(STDIN_FILENO), "r") else {
                throw CLIFailure(message: "--tokens-file -: cannot read standard input", exitCode: CLIExit.dataError)
            }
            self.file = file
            self.ownsFile = true
            self.name = "stdin"
        } else {
            try InputFiles.requireReadable(path, flag: "--tokens-file")
            guard let file = fopen(path, "r") else {
                throw CLIFailure(message: "--tokens-file: file '\(path)' cannot be read", exitCode: CLIExit.dataError)
            }
            self.file = file
            self.ownsFile = true
            self.name = path
        }
        self.headers = headers
        self.hasSharedPayload = hasSharedPayload
    }

    /// Reads a spooled copy of standard input from its start.
    init(spooled descriptor: Int32, name: String, headers: NotificationOptions.Headers, hasSharedPayload: Bool) throws {
        let copy = dup(descriptor)
        guard copy >= 0, lseek(copy, 0, SEEK_SET) == 0, let file = fdopen(copy, "r") else {
            throw CLIFailure(message: "--tokens-file -: cannot read the copy of standard input", exitCode: CLIExit.software)
        }
        self.file = file
        self.ownsFile = true
        self.name = name
        self.headers = headers
        self.hasSharedPayload = hasSharedPayload
    }

    deinit {
        free(self.buffer)
        if self.ownsFile { fclose(self.file) }
    }

    /// The next line judged, or `nil` at the end of the file.
    func next() -> Line? {
        let count = getline(&self.buffer, &self.capacity, self.file)
        guard count >= 0, let buffer = self.buffer else { return nil }
        self.bytesRead += count
        self.digest?.update(UnsafeRawBufferPointer(start: buffer, count: count))
        self.lineNumber += 1
        if self.lineNumber < self.firstLine { return .skipped }
        let bytes = UnsafeRawBufferPointer(start: buffer, count: count)
        let range: Range<Int>
        switch TokenFileLine(bytes, isFirst: self.lineNumber == 1) {
        case .skipped: return .skipped
        case .object(let object): return self.judgeObject(Array(bytes[object]))
        case .token(let token): range = token
        }
        guard self.hasSharedPayload else {
            let problem = "no payload for this token: give --payload (or --title…), or a line {\"token\":…,\"payload\":{…}}"
            return .bad(line: self.lineNumber, problem: problem)
        }
        do throws(APNSValidationError) {
            let token = try DeviceToken(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self))
            return .entry(TokenEntry(line: self.lineNumber, token: token, notification: nil))
        } catch {
            return .bad(line: self.lineNumber, problem: "\(error.field) \(error.rule)")
        }
    }

    /// Writes `name:line: problem` on stderr (unless ``quiet``).
    func report(line: Int, problem: String) {
        guard !self.quiet else { return }
        Output.diagnostic("\(self.name):\(line): \(problem)")
    }

    /// An NDJSON line: `token` (required), `topic` and `payload` (optional, a JSON object).
    private func judgeObject(_ text: [UInt8]) -> Line {
        // The rules of a --payload file: UTF-8, valid JSON, numbers that fit a double.
        if let problem = APNSPayloadLint.jsonProblem(in: text) { return .bad(line: self.lineNumber, problem: problem) }
        let value: CodableJSON
        do { value = try CodableJSON(parsing: text) } catch {
            return .bad(line: self.lineNumber, problem: "not valid JSON: \(CodableJSON.describe(error))")
        }
        guard case .object(let fields) = value else { return .bad(line: self.lineNumber, problem: "not a JSON object") }
        if let unknown = fields.keys.sorted().first(where: { $0 != "token" && $0 != "payload" && $0 != "topic" }) {
            return .bad(line: self.lineNumber, problem: "unknown field '\(unknown)' (a line has \"token\", \"topic\" and \"payload\")")
        }
        guard case .string(let tokenText) = fields["token"] else {
            return .bad(line: self.lineNumber, problem: "\"token\" must be a string of hex digits")
        }
        let token: DeviceToken
        do throws(APNSValidationError) { token = try DeviceToken(tokenText) } catch {
            return .bad(line: self.lineNumber, problem: "\(error.field) \(error.rule)")
        }
        var headers = self.headers
        if let topic = fields["topic"] {
            switch self.topics.headers(self.headers, topic: topic) {
            case .success(let own): headers = own
            case .failure(let problem): return .bad(line: self.lineNumber, problem: problem.text)
            }
        }
        guard let payload = fields["payload"] else {
            guard self.hasSharedPayload else {
                return .bad(line: self.lineNumber, problem: "no payload for this token: give --payload (or --title…), or a \"payload\" field")
            }
            guard fields["topic"] != nil, let body = self.topics.sharedBody else {
                return .entry(TokenEntry(line: self.lineNumber, token: token, notification: nil))
            }
            // The shared payload, under this line's topic.
            do throws(APNSValidationError) {
                return .entry(TokenEntry(line: self.lineNumber, token: token, notification: try headers.prepare(body: body)))
            } catch {
                return .bad(line: self.lineNumber, problem: "\(error.field) \(error.rule)")
            }
        }
        guard case .object = payload else { return .bad(line: self.lineNumber, problem: "\"payload\" must be a JSON object") }
        do throws(APNSValidationError) {
            let notification = try headers.prepare(payload: payload)
            return .entry(TokenEntry(line: self.lineNumber, token: token, notification: notification))
        } catch {
            return .bad(line: self.lineNumber, problem: "\(error.field) \(error.rule)")
        }
    }

    /// Copies standard input to an anonymous temporary file, so `--strict` can read it twice;
    /// returns its descriptor (open until the process ends).
    static func spoolStandardInput() throws -> Int32 {
        guard let copy = tmpfile() else {
            throw CLIFailure(message: "--tokens-file -: cannot create a temporary file", exitCode: CLIExit.software)
        }
        let descriptor = fileno(copy)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            var offset = 0
            while offset < count {
                let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, count - offset) }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw CLIFailure(message: "--tokens-file -: cannot write the temporary copy", exitCode: CLIExit.software)
                }
                offset += written
            }
        }
        return descriptor
    }
}

/// The tokens of a file as the `AsyncSequence<DeviceToken>` that `sendBulk` reads lazily: bad lines are
/// reported and skipped, lines with their own payload go to `perLine`, the rest are yielded, each
/// one's line noted in `lines`. Reading ends early once the send is stopped.
struct TokenSource: AsyncSequence, Sendable {
    typealias Element = DeviceToken

    /// Opens the file; called once, when sending starts.
    let open: @Sendable () throws -> TokenLines
    let tally: ResultSink
    let perLine: PerLineSender?
    let lines: LineMap
    let stopper: InterruptHandler

    struct AsyncIterator: AsyncIteratorProtocol {
        var file: TokenLines?
        let source: TokenSource
        /// Tokens yielded so far: the bulk's index of the next one.
        var yielded = 0
        /// The line the next yielded token has if the file has no gap before it.
        var expectedLine: Int?

        mutating func next() async throws -> DeviceToken? {
            if self.file == nil { self.file = try self.source.open() }
            guard let file = self.file else { return nil }
            while !self.source.stopper.isStopped, let line = file.next() {
                switch line {
                case .skipped:
                    continue
                case .bad(let number, let problem):
                    file.report(line: number, problem: problem)
                    self.source.tally.addBadLine(line: number, problem: problem)
                case .entry(let entry):
                    self.source.tally.noteLineRead(entry.line)
                    self.source.tally.frequentUpdates?.note(entry)
                    if entry.notification != nil, let perLine = self.source.perLine {
                        await perLine.submit(entry)
                        continue
                    }
                    if entry.line != self.expectedLine { self.source.lines.note(index: self.yielded, line: entry.line) }
                    self.yielded += 1
                    self.expectedLine = entry.line + 1
                    return entry.token
                }
            }
            if self.source.stopper.isStopped { self.source.tally.markInputStopped() }
            self.source.perLine?.finish()
            return nil
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(file: nil, source: self) }
}

/// The line of each token a bulk send read, by its index in the bulk. Kept as the points where the
/// two stop moving together (after blank, comment, bad or per-line lines), so a clean file of a
/// million lines needs one entry and the reader takes the lock only at such a point.
final class LineMap: Sendable {
    private let points = LockedBox<[(index: Int, line: Int)]>([])

    /// From `index` on, tokens are on consecutive lines starting at `line` (indices only grow).
    func note(index: Int, line: Int) {
        self.points.withLock { $0.append((index, line)) }
    }

    /// The line of the token at `index`, or `nil` before the first one noted.
    func line(of index: Int) -> Int? {
        self.points.withLock { points in
            var low = 0, high = points.count
            while low < high {
                let middle = (low + high) / 2
                if points[middle].index <= index { low = middle + 1 } else { high = middle }
            }
            guard low > 0 else { return nil }
            let point = points[low - 1]
            return point.line + (index - point.index)
        }
    }
}

/// A tokens file line's own `topic`: checked as `--topic` is (a bundle id, the push type's suffix
/// added), and against the bundle ids the credentials serve.
struct LineTopics: Sendable {
    /// The bundle ids some credential serves; `nil` when one serves every topic.
    var served: Set<String>?
    /// The shared payload's body, sent under a line's own topic when the line has no payload.
    var sharedBody: [UInt8]?

    struct Problem: Error {
        var text: String
    }

    /// `headers` with the topic `value` names, or the problem with it.
    func headers(_ headers: NotificationOptions.Headers, topic value: CodableJSON) -> Result<NotificationOptions.Headers, Problem> {
        guard case .string(let text) = value else { return .failure(Problem(text: "\"topic\" must be a string: the app's bundle id")) }
        let topic: APNSTopic
        do throws(APNSValidationError) { topic = try APNSTopic(text, pushType: headers.pushType) } catch {
            return .failure(Problem(text: "\"topic\" '\(CLIFailure.abbreviate(text))': \(error.rule)"))
        }
        let suffix = headers.pushType.topicSuffix ?? ""
        let bundleID = String(topic.rawValue.dropLast(suffix.count))
        if let served = self.served, !served.contains(bundleID) {
            return .failure(Problem(
                text: "\"topic\" '\(text)': no credential serves bundle id '\(bundleID)' "
                    + "(--credential serves \(served.sorted().joined(separator: ", ")))"
            ))
        }
        var own = headers
        own.topicText = text
        own.topic = topic
        return .success(own)
    }
}
