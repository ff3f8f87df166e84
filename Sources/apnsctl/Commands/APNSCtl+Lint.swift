import ArgumentParser
import ForgeAPNsCore
import ForgeSimulatedDevice
import Foundation

extension APNSCtl {
    struct Lint: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check payload files for what an iPhone would get wrong, without sending them.",
            discussion: """
                Each FILE is a JSON payload, or a .apns file (simctl's format, as send --payload reads it). The \
                push type is --push-type, else liveactivity for a payload with aps.event and alert for one \
                without. The lints are those apnsctl send warns about (docs/lints.md), but LA006, which judges \
                the apns-collapse-id header a file does not carry; and across the files of one run, LA014 when two \
                or more Live Activity updates all carry the same aps.relevance-score (one finding per update file).

                Output: one line per finding, FILE: ID message; with --json, one object per line: \
                {"file","id","path","message"}, path the JSON path of the offending field, or aps.

                Exit codes: 0 no findings; 1 one or more findings; 64 usage; 65 a file that cannot be read, is \
                not JSON or not a JSON object, or breaks the .apns rules (named on stderr; the other files are \
                still linted); 66 a file that does not exist.

                --contract FILE (repeatable) checks Live Activity payloads against a content-state contract, the \
                JSON that serve --activity-type reads: a payload whose aps.attributes-type it names, or, when only \
                one contract is given, every Live Activity payload without one (updates and ends). A content-state \
                or start attributes that the app could not decode is finding CS001, naming the field, the type \
                expected and the value. A contract that cannot be read exits 65 naming the file and the JSON path.

                Examples:
                  apnsctl lint start.json update-*.json
                  apnsctl lint --json --no-lint LA008 fixtures/*.apns > findings.ndjson
                  apnsctl lint --contract ScoreAttributes.contract.json update.json
                """
        )

        @Argument(help: ArgumentHelp("Payload files: JSON, or .apns (simctl's format).", valueName: "file"))
        var files: [String]

        @Option(
            name: .customLong("push-type"),
            help: "The apns-push-type to judge the payloads as (liveactivity when aps.event is set, else alert)."
        )
        var pushType: NotificationOptions.PushType?

        @Flag(help: "One JSON object per finding per line: file, id, path, message.")
        var json = false

        @Option(
            name: .customLong("contract"),
            help: ArgumentHelp(
                "A content-state contract (the JSON serve --activity-type reads): Live Activity payloads whose attributes-type it "
                    + "names, or every one without attributes-type when only one is given, must decode against it (CS001). Repeatable.",
                valueName: "file"
            )
        )
        var contractFiles: [String] = []

        @OptionGroup(title: "Lints") var lintOptions: LintOptions

        /// Lints that judge headers a payload file does not carry.
        static let headerLints: Set<String> = ["LA006"]

        func validate() throws {
            try self.lintOptions.check()
        }

        func run() async throws {
            try await runReportingFailures {
                let contracts = try self.contracts()
                var failure: Int32?
                var payloads: [Payload] = []
                for path in self.files {
                    do {
                        payloads.append(try Payload(reading: path))
                    } catch let error as CLIFailure {
                        Output.diagnostic("error: \(error.message)")
                        failure = max(failure ?? 0, error.exitCode)
                    }
                }
                var findings = payloads.flatMap { self.findings(in: $0, contracts: contracts) }
                let updates = payloads.filter { $0.event == "update" }
                if let flat = APNSLinter.sameRelevanceScore(acrossUpdates: updates.map(\.bytes)) {
                    findings += updates.map { Finding(file: $0.path, lint: flat) }
                }
                findings = findings.filter { !self.lintOptions.isSilenced($0.lint.id) }
                Output.results(Array(findings.map { (self.json ? $0.jsonLine : $0.line) + "\n" }.joined().utf8))
                if let failure { throw ExitCode(failure) }
                if !findings.isEmpty { throw ExitCode(1) }
            }
        }

        /// What is wrong with one file's payload, judged now; and, for a Live Activity payload, what
        /// its contract does not decode (CS001).
        func findings(in payload: Payload, contracts: [LiveActivityContract]) -> [Finding] {
            let pushType = self.pushType?.pushType ?? (payload.event == nil ? .alert : .liveactivity)
            var findings = APNSLinter.lints(body: payload.bytes, pushType: pushType, priority: nil, collapseID: nil, now: Date())
                .filter { !Self.headerLints.contains($0.id) }
                .map { Finding(file: payload.path, lint: $0) }
            let contract = payload.attributesType.map { type in contracts.first { $0.attributesType == type } }
                ?? (contracts.count == 1 ? contracts.first : nil)
            if pushType == .liveactivity, let contract {
                do throws(LiveActivityContract.Mismatch) {
                    try contract.checkPayload(payload.bytes)
                } catch {
                    let lint = APNSLint(
                        id: "CS001",
                        message: "\(error.path): expected \(error.expected), found \(error.found): the app cannot decode it as "
                            + "\(contract.attributesType) (contract version \(contract.version)); iOS drops the push with nothing in any log",
                        path: error.path
                    )
                    findings.append(Finding(file: payload.path, lint: lint))
                }
            }
            return findings
        }

        /// The `--contract` files, read and checked.
        /// - Throws: ``CLIFailure``: 66 for a file that does not exist, 65 for one that is not a
        ///   contract (naming the file and the JSON path).
        func contracts() throws -> [LiveActivityContract] {
            try self.contractFiles.map { path in
                let bytes = try InputFiles.read(path, flag: "--contract")
                do throws(LiveActivityContract.Invalid) {
                    return try LiveActivityContract(json: bytes)
                } catch {
                    throw CLIFailure(message: "--contract \(path): \(error.path): \(error.rule)", exitCode: CLIExit.dataError)
                }
            }
        }

        /// A payload file as read: its path, the payload's bytes and its `aps.event`.
        struct Payload {
            var path: String
            var bytes: [UInt8]
            var event: String?
            /// `aps.attributes-type`: a start's.
            var attributesType: String?

            /// Reads `path`: a `.apns` file with the reader `send --payload` uses, else JSON.
            /// - Throws: ``CLIFailure`` naming the file: 66 when it does not exist, 65 when it cannot be
            ///   read, is not JSON or not a JSON object, or breaks the `.apns` rules.
            init(reading path: String) throws {
                self.path = path
                if path.lowercased().hasSuffix(".apns") {
                    self.bytes = try InputFiles.simulatorFile(path, flag: "lint").payload
                } else {
                    self.bytes = InputFiles.withoutByteOrderMark(try InputFiles.read(path, flag: "lint"))
                }
                let parsed: CodableJSON
                do { parsed = try CodableJSON(parsing: self.bytes) } catch {
                    throw CLIFailure(message: "lint '\(path)': not valid JSON: \(CodableJSON.describe(error))", exitCode: CLIExit.dataError)
                }
                guard case .object(let root) = parsed else {
                    throw CLIFailure(message: "lint '\(path)': a payload must be a JSON object ({…})", exitCode: CLIExit.dataError)
                }
                if case .object(let aps)? = root["aps"] {
                    if case .string(let event)? = aps["event"] { self.event = event }
                    if case .string(let type)? = aps["attributes-type"] { self.attributesType = type }
                }
            }
        }

        /// One lint found in one file.
        struct Finding {
            var file: String
            var lint: APNSLint

            /// `FILE: ID message`.
            var line: String { "\(self.file): \(self.lint.id) \(self.lint.message)" }

            /// `{"file":…,"id":…,"message":…,"path":…}`.
            var jsonLine: String {
                let object = ["file": self.file, "id": self.lint.id, "path": self.lint.path ?? "aps", "message": self.lint.message]
                guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
                    return "{}"
                }
                return String(decoding: data, as: UTF8.self)
            }
        }
    }
}
