import ForgeAPNsCore
import ForgeFuzzSupport

/// The lines of a tokens file (`apnsctl send --tokens-file`), read as `TokenLines` reads each: the
/// line's kind (TokenFileLine), then the token, or the NDJSON object's JSON checks and parse
/// (CodableJSON), as `TokenLines.judgeObject` does before it looks at the command's flags.
enum TokenLineFuzz {
    static func test(_ bytes: [UInt8]) {
        var isFirst = true
        for line in bytes.split(separator: 0x0a, omittingEmptySubsequences: false) {
            switch TokenFileLine(line, isFirst: isFirst) {
            case .skipped:
                break
            case .object(let range):
                let text = Array(line[range])
                if APNSPayloadLint.jsonProblem(in: text) == nil, case .object(let fields)? = try? CodableJSON(parsing: text),
                    case .string(let token)? = fields["token"]
                {
                    _ = try? DeviceToken(token)
                }
            case .token(let range):
                _ = try? DeviceToken(String(decoding: line[range], as: UTF8.self))
            }
            isFirst = false
        }
    }
}

@main
enum FuzzTokenLine {
    static func main() { FuzzDriver.main(TokenLineFuzz.test) }
}
