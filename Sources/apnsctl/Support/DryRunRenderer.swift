import ForgeAPNsCore
import Foundation

/// Renders the HTTP/2 request a send would make, as text or as one JSON object.
struct DryRunRenderer {
    var request: APNSHTTPRequest
    var environment: APNSEnvironment
    /// The redacted authorization value, or `nil` when no credentials were given.
    var authorization: String?

    /// A renderer for `request`, whose body must be one JSON object as a device reads it.
    /// - Throws: ``CLIFailure`` (65) when `JSONSerialization` does not read the body as one JSON
    ///   object: a dry run must not show a payload as ready to send when a device would drop it.
    init(request: APNSHTTPRequest, environment: APNSEnvironment, authorization: String?) throws {
        try Self.checkBody(request.body)
        self.request = request
        self.environment = environment
        self.authorization = authorization
    }

    /// Parses `body` with `JSONSerialization`, an oracle independent of the encoder that wrote it.
    static func checkBody(_ body: [UInt8]) throws {
        let parsed: Any
        do { parsed = try JSONSerialization.jsonObject(with: Data(body)) } catch {
            throw CLIFailure(
                message: "--dry-run: the body that would be sent is not valid JSON (\(CodableJSON.describe(error))); nothing sent",
                exitCode: CLIExit.dataError
            )
        }
        guard parsed is [String: Any] else {
            throw CLIFailure(message: "--dry-run: the body that would be sent is not a JSON object; nothing sent", exitCode: CLIExit.dataError)
        }
    }

    private var pseudoHeaders: [(String, String)] {
        [(":method", self.request.method), (":scheme", "https"), (":authority", self.environment.authority),
         (":path", self.request.path)]
    }

    private var headers: [(String, String)] {
        var headers: [(String, String)] = []
        if let authorization { headers.append(("authorization", authorization)) }
        headers += self.request.headers.map { ($0.name, $0.value) }
        return headers
    }

    func text() -> String {
        var lines = (self.pseudoHeaders + self.headers).map { "\($0.0): \($0.1)" }
        lines.append("")
        lines.append(String(decoding: self.request.body, as: UTF8.self))
        return lines.joined(separator: "\n")
    }

    /// `{"method":…,"scheme":…,"authority":…,"path":…,"headers":{…},"body":{…},"body_bytes":N}`;
    /// the body is embedded as the JSON object it is (``checkBody(_:)`` parsed it as one).
    func json() -> String {
        let headers = self.headers.map { "\(JSONText.quote($0.0)):\(JSONText.quote($0.1))" }.joined(separator: ",")
        return "{\"method\":\(JSONText.quote(self.request.method)),\"scheme\":\"https\","
            + "\"authority\":\(JSONText.quote(self.environment.authority)),\"path\":\(JSONText.quote(self.request.path)),"
            + "\"headers\":{\(headers)},\"body\":\(JSONText.compact(self.request.body)),"
            + "\"body_bytes\":\(self.request.body.count)}"
    }
}

/// JSON string literals for hand-written output.
enum JSONText {
    /// `json` (parsed by ``DryRunRenderer/checkBody(_:)``) without the whitespace between tokens, so it fits on one line.
    static func compact(_ json: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(json.count)
        var inString = false
        var escaped = false
        for byte in json {
            if inString {
                output.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case 0x20, 0x09, 0x0a, 0x0d: continue
            case UInt8(ascii: "\""): inString = true
            default: break
            }
            output.append(byte)
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `string` as a JSON string literal.
    static func quote(_ string: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(string.utf8.count + 2)
        JSONString.append(string, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
