import ArgumentParser
import ForgeAPNsCore

/// `activity … --payload FILE`: the whole Live Activity payload from a file (a `.apns` file as simctl
/// pushes it, or JSON), checked for the shape its command sends before anything is sent.
extension ActivityOptions {
    /// A payload read from `--payload`.
    struct PayloadFile {
        /// The JSON object to send, as the file holds it.
        var bytes: [UInt8]
        /// A `.apns` file's "Simulator Target Bundle".
        var targetBundle: String?
    }

    /// Refuses content flags given beside `--payload` (64), which would otherwise be ignored.
    static func refuseBesidePayload(_ flags: [String]) throws {
        guard !flags.isEmpty else { return }
        let them = flags.count == 1 ? "it" : "them"
        throw ValidationError("\(flags.joined(separator: ", ")): the payload comes from --payload; give \(them) or --payload, not both.")
    }

    /// `--payload` read and checked for `event` (`start`, `update` or `end`); nil without the flag.
    /// - Throws: ``CLIFailure``: 66 for a missing file; 65 naming the file and the rule for a
    ///   `.apns` file that breaks simctl's rules, JSON that is not an object, no `aps` object, an
    ///   `aps.event` other than this command's, a `content-state` that is not an object, no numeric
    ///   `timestamp`, and for `start` no `attributes-type`, `attributes` or `alert`.
    func payloadFile(event: String) throws -> PayloadFile? {
        guard let path = self.payload else { return nil }
        let fail = { (rule: String) in CLIFailure(message: "--payload '\(path)': \(rule)", exitCode: CLIExit.dataError) }
        let file: PayloadFile
        if path.lowercased().hasSuffix(".apns") {
            let simulator = try InputFiles.simulatorFile(path, flag: "--payload")
            file = PayloadFile(bytes: simulator.payload, targetBundle: simulator.targetBundle)
        } else {
            file = PayloadFile(bytes: InputFiles.withoutByteOrderMark(try InputFiles.read(path, flag: "--payload")), targetBundle: nil)
        }
        let parsed: CodableJSON
        do { parsed = try CodableJSON(parsing: file.bytes) } catch { throw fail("not valid JSON: \(CodableJSON.describe(error))") }
        guard case .object(let root) = parsed else { throw fail("must be a JSON object ({…})") }
        guard case .object(let aps)? = root["aps"] else { throw fail("needs an \"aps\" object") }
        guard case .string(let given)? = aps["event"] else {
            throw fail("needs aps.event, \"\(event)\" for activity \(event)")
        }
        guard given == event else { throw fail("aps.event is \"\(given)\", but this is activity \(event)") }
        guard case .object? = aps["content-state"] else {
            throw fail("aps.content-state must be a JSON object (the app's ContentState)")
        }
        switch aps["timestamp"] {
        case .int?, .uint?, .double?: break
        default: throw fail("needs aps.timestamp, a number of seconds since 1970 (a device ignores an update older than the last one)")
        }
        if event == "start" {
            guard case .string? = aps["attributes-type"] else { throw fail("needs aps.attributes-type, the ActivityAttributes type's name") }
            guard case .object? = aps["attributes"] else { throw fail("aps.attributes must be a JSON object (the activity's attributes)") }
            guard aps["alert"] != nil else { throw fail("needs aps.alert: a push that starts a Live Activity must alert") }
        }
        return file
    }
}
