import ForgeAPNsCore

/// Renders the HTTP/2 request a send would make, as text or as one JSON object.
struct DryRunRenderer {
    var request: APNSHTTPRequest
    var environment: APNSEnvironment
    /// The redacted authorization value, or `nil` when no credentials were given.
    var authorization: String?

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
    /// the body is embedded as the JSON object it is (it was validated as one).
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
    /// `json` (already validated) without the whitespace between tokens, so it fits on one line.
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

    static func quote(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
