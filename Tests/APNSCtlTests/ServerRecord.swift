import Foundation
import Testing

/// What `apnsctl serve --record FILE` wrote: every request it judged; the accepted pushes are the
/// ground truth a campaign test checks a sender's verdicts against.
struct ServerRecord {
    /// Pushes recorded, copies included.
    var count = 0
    /// Copies recorded per token.
    var copies: [String: Int] = [:]
    /// The token of each recorded apns-id (lowercased).
    var tokenOfID: [String: String] = [:]

    init(path: String) throws {
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let entry = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            guard entry["status"] as? Int == 200 else { continue }
            let token = try #require(entry["token"] as? String)
            self.count += 1
            self.copies[token, default: 0] += 1
            self.tokenOfID[try #require(entry["apns_id"] as? String).lowercased()] = token
        }
    }

    /// Whether each verdict's `apns_id` was recorded for its `token`.
    func recordsEvery(_ verdicts: some Sequence<[String: Any]>) -> Bool {
        verdicts.allSatisfy { self.tokenOfID[($0["apns_id"] as? String ?? "").lowercased()] == $0["token"] as? String }
    }

    /// The tokens recorded more than once.
    var duplicated: Set<String> { Set(self.copies.filter { $0.value > 1 }.keys) }
}
