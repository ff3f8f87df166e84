import ForgeSimulatedDevice
import Foundation
import Testing

/// The app's types, as a Swift app declares them: the reference the contract is compared with.
private struct Inner: Decodable {
    var name: String
    var n: Int?
}

private struct Full: Decodable {
    var i: Int
    var d: Double
    var b: Bool
    var s: String
    var t: Date
    var oi: Int?
    var os: String?
    var obj: Inner
    var oobj: Inner?
    var arr: [String]
    var arrOpt: [Int?]
    var nested: [[Double]]
    var objs: [Inner]
}

/// Only dates, for each decoding strategy (one strategy per decoder, as in an app).
private struct Dates: Decodable {
    var t: Date
    var ot: Date?
    var ts: [Date]
}

private let fullContract = #"""
    {"attributes_type": "FullAttributes", "version": 1, "content_state": {
      "i": {"type": "int"}, "d": {"type": "double"}, "b": {"type": "bool"}, "s": {"type": "string"}, "t": {"type": "date"},
      "oi": {"type": "int", "optional": true}, "os": {"type": "string", "optional": true},
      "obj": {"type": "object", "fields": {"name": {"type": "string"}, "n": {"type": "int", "optional": true}}},
      "oobj": {"type": "object", "optional": true, "fields": {"name": {"type": "string"}, "n": {"type": "int", "optional": true}}},
      "arr": {"type": "array", "items": {"type": "string"}},
      "arrOpt": {"type": "array", "items": {"type": "int", "optional": true}},
      "nested": {"type": "array", "items": {"type": "array", "items": {"type": "double"}}},
      "objs": {"type": "array", "items": {"type": "object", "fields": {"name": {"type": "string"}, "n": {"type": "int", "optional": true}}}}
    }}
    """#

/// A content state `Full` decodes (made fresh for each use: `[String: Any]` is not Sendable).
private var validFull: [String: Any] {
    [
    "i": 3, "d": 2.5, "b": true, "s": "goal", "t": 800_000_000, "oi": 4, "os": "x",
    "obj": ["name": "Ana", "n": 9], "oobj": ["name": "Bo"], "arr": ["a", "b"], "arrOpt": [1, NSNull(), 3],
    "nested": [[1.5, 2], []], "objs": [["name": "C", "n": 1], ["name": "D"]],
    ]
}

/// Values that replace a field in the generated payloads: each type, and the edges JSONDecoder has
/// rules for (whole and fractional numbers, huge ones, strings of numbers, dates in each form).
private var replacements: [Any] {
    [
    1, 0, -7, 1.5, 1.0, 1e2, 9_223_372_036_854_775_807, 1e30, true, false, "x", "1", "", "2026-11-29T10:00:00Z",
    "2026-11-29T10:00:00.123Z", 1_764_410_400, 1_764_410_400_000, NSNull(), [Any](), [1], ["a"], [NSNull()], [String: Any](),
    ["name": "Z"], ["name": 1],
    ]
}

/// Every path in `value` (objects' keys, arrays' indices).
private func paths(_ value: Any, _ prefix: [String] = []) -> [[String]] {
    var found: [[String]] = []
    if let object = value as? [String: Any] {
        for (key, member) in object {
            found.append(prefix + [key])
            found += paths(member, prefix + [key])
        }
    } else if let array = value as? [Any] {
        for (index, member) in array.enumerated() {
            found.append(prefix + ["[\(index)]"])
            found += paths(member, prefix + ["[\(index)]"])
        }
    }
    return found
}

/// `value` with the member at `path` replaced (`nil`: removed).
private func replacing(_ value: Any, at path: ArraySlice<String>, with replacement: Any?) -> Any {
    guard let first = path.first else { return replacement ?? NSNull() }
    if first.hasPrefix("["), var array = value as? [Any], let index = Int(first.dropFirst().dropLast()) {
        if path.count == 1, replacement == nil {
            array.remove(at: index)
        } else {
            array[index] = replacing(array[index], at: path.dropFirst(), with: replacement)
        }
        return array
    }
    guard var object = value as? [String: Any] else { return value }
    if path.count == 1, replacement == nil {
        object[first] = nil
    } else {
        object[first] = replacing(object[first] ?? NSNull(), at: path.dropFirst(), with: replacement)
    }
    return object
}

/// The payloads the differential runs: the valid one, then each path removed and replaced by each
/// replacement.
private func generated(from valid: [String: Any]) throws -> [Data] {
    var payloads = [try JSONSerialization.data(withJSONObject: valid)]
    for path in paths(valid) {
        payloads.append(try JSONSerialization.data(withJSONObject: replacing(valid, at: path[...], with: nil)))
        for value in replacements {
            payloads.append(try JSONSerialization.data(withJSONObject: replacing(valid, at: path[...], with: value)))
        }
    }
    // The content state itself of another type.
    for value in [1, "x", [1]] as [Any] { payloads.append(try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed])) }
    return payloads
}

/// The path JSONDecoder names in its error: `content-state.obj.name`, `content-state.arr[1]`.
private func decoderPath(_ error: any Error) -> String? {
    guard let error = error as? DecodingError else { return nil }
    var keys: [any CodingKey]
    switch error {
    case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context): keys = context.codingPath
    case .keyNotFound(let key, let context): keys = context.codingPath + [key]
    @unknown default: keys = []
    }
    return keys.reduce("content-state") { text, key in key.intValue.map { "\(text)[\($0)]" } ?? "\(text).\(key.stringValue)" }
}

@Suite("Content-state contracts: the same decision as JSONDecoder decoding the app's own type")
struct LiveActivityContractTests {
    @Test("Differential over generated payloads: every type swapped, keys missing, nulls, numbers at JSONDecoder's edges; the same decision and the same field")
    func differential() throws {
        let contract = try LiveActivityContract(json: Array(fullContract.utf8))
        var decided = (accepted: 0, refused: 0)
        for payload in try generated(from: validFull) {
            let text = String(decoding: payload, as: UTF8.self)
            var reference: (any Error)?
            do { _ = try JSONDecoder().decode(Full.self, from: payload) } catch { reference = error }
            var mismatch: LiveActivityContract.Mismatch?
            do throws(LiveActivityContract.Mismatch) { try contract.checkContentState(Array(payload)) } catch { mismatch = error }
            #expect((reference == nil) == (mismatch == nil), "\(text): JSONDecoder \(String(describing: reference)); contract \(String(describing: mismatch))")
            // Where JSONDecoder names a field, the contract names the same one (for a number that
            // does not fit, JSONDecoder names none; the contract names the field).
            if let reference, let mismatch, let path = decoderPath(reference), path != "content-state" {
                #expect(mismatch.path == path, "\(text): \(mismatch) against \(reference)")
            }
            if reference == nil { decided.accepted += 1 } else { decided.refused += 1 }
        }
        // The generator reaches both sides, many times over.
        #expect(decided.accepted > 100 && decided.refused > 500, "\(decided)")
    }

    @Test("Dates in each strategy, against JSONDecoder set to that strategy", arguments: LiveActivityContract.DateStrategy.allCases)
    func dates(_ strategy: LiveActivityContract.DateStrategy) throws {
        let contract = try LiveActivityContract(json: Array(#"""
            {"attributes_type": "D", "content_state": {"t": {"type": "date", "strategy": "\#(strategy.rawValue)"},
             "ot": {"type": "date", "strategy": "\#(strategy.rawValue)", "optional": true},
             "ts": {"type": "array", "items": {"type": "date", "strategy": "\#(strategy.rawValue)"}}}}
            """#.utf8))
        let decoder = JSONDecoder()
        switch strategy {
        case .deferredToDate: decoder.dateDecodingStrategy = .deferredToDate
        case .secondsSince1970: decoder.dateDecodingStrategy = .secondsSince1970
        case .millisecondsSince1970: decoder.dateDecodingStrategy = .millisecondsSince1970
        case .iso8601: decoder.dateDecodingStrategy = .iso8601
        }
        let valid: [String: Any] = strategy == .iso8601
            ? ["t": "2026-11-29T10:00:00Z", "ot": "2026-11-29T10:00:00+01:00", "ts": ["2026-01-01T00:00:00Z"]]
            : ["t": 1_764_410_400, "ot": 2.5, "ts": [0, 1e9]]
        var refused = 0
        for payload in try generated(from: valid) {
            let text = String(decoding: payload, as: UTF8.self)
            var reference: (any Error)?
            do { _ = try decoder.decode(Dates.self, from: payload) } catch { reference = error }
            var mismatch: LiveActivityContract.Mismatch?
            do throws(LiveActivityContract.Mismatch) { try contract.checkContentState(Array(payload)) } catch { mismatch = error }
            #expect((reference == nil) == (mismatch == nil), "\(strategy) \(text): JSONDecoder \(String(describing: reference)); contract \(String(describing: mismatch))")
            if reference != nil { refused += 1 }
        }
        #expect(refused > 20)
    }

    @Test("A mismatch names the field, the type expected and the value found")
    func mismatchWords() throws {
        let contract = try LiveActivityContract(json: Array(fullContract.utf8))
        func why(_ change: (inout [String: Any]) -> Void) throws -> String {
            var payload = validFull
            change(&payload)
            let bytes = Array(try JSONSerialization.data(withJSONObject: payload))
            do throws(LiveActivityContract.Mismatch) {
                try contract.checkContentState(bytes)
                return "accepted"
            } catch {
                return error.description
            }
        }
        let fraction = try why { $0["i"] = 1.5 }
        #expect(fraction.hasPrefix("content-state.i: expected Int") && fraction.hasSuffix("found 1.5"), "\(fraction)")
        #expect(try why { $0["obj"] = ["n": 1] } == "content-state.obj.name: expected String, found missing")
        #expect(try why { $0["s"] = NSNull() } == "content-state.s: expected String, found null")
        #expect(try why { $0["arr"] = ["a", 2] } == "content-state.arr[1]: expected String, found 2")
        #expect(try why { $0["unknown"] = ["anything": true] } == "accepted", "unknown keys are ignored")
        #expect(try why { $0["oi"] = NSNull() } == "accepted", "null into an optional")
    }

    @Test("An invalid contract names the JSON path and the rule")
    func invalidContracts() {
        let cases: [(String, String)] = [
            (#"[1]"#, "$"),
            (#"{"content_state": {}}"#, "attributes_type"),
            (#"{"attributes_type": "A"}"#, "content_state"),
            (#"{"attributes_type": "A", "content_state": {"x": {"type": "integer"}}}"#, "content_state.x.type"),
            (#"{"attributes_type": "A", "content_state": {"x": {"type": "int", "optional": 1}}}"#, "content_state.x.optional"),
            (#"{"attributes_type": "A", "content_state": {"x": {"type": "object"}}}"#, "content_state.x.fields"),
            (#"{"attributes_type": "A", "content_state": {"x": {"type": "array", "items": {"type": "date", "strategy": "unix"}}}}"#,
             "content_state.x.items.strategy"),
            (#"{"attributes_type": "A", "content_state": {"x": {"type": "int", "optinal": true}}}"#, "content_state.x.optinal"),
            (#"{"attributes_type": "A", "version": 0, "content_state": {}}"#, "version"),
            (#"{"attributes_type": "A", "content_state": {}, "extra": 1}"#, "extra"),
        ]
        for (json, path) in cases {
            do throws(LiveActivityContract.Invalid) {
                _ = try LiveActivityContract(json: Array(json.utf8))
                Issue.record("accepted: \(json)")
            } catch {
                #expect(error.path == path && !error.rule.isEmpty, "\(json): \(error)")
            }
        }
    }

    @Test("A contract read from the app's own types equals the hand-written one, reads back from its JSON, and decides as JSONDecoder")
    func describing() throws {
        let written = try LiveActivityContract(json: Array(fullContract.utf8))
        let described = try LiveActivityContract(describing: Full.self, attributesType: "FullAttributes")
        #expect(described == written, "\(String(decoding: described.json, as: UTF8.self))")
        #expect(try LiveActivityContract(json: described.json) == described)

        // An enum of raw values, dates, and attributes.
        let score = try LiveActivityContract(describing: Score.self, attributes: Match.self, attributesType: "MatchAttributes")
        #expect(score.contentState["status"] == .init(.string) && score.contentState["kickoff"] == .init(.date(.deferredToDate), optional: true))
        #expect(score.contentState["goals"] == .init(.array(.init(.object(["minute": .init(.int), "player": .init(.string)])))))
        #expect(score.attributes == ["home": .init(.string), "away": .init(.string)])
        for (payload, decodes) in [
            (#"{"status": "live", "goals": [{"minute": 12, "player": "A"}]}"#, true),
            (#"{"status": "paused", "goals": []}"#, false),
            (#"{"status": "live", "goals": [], "kickoff": "2026-11-29T10:00:00Z"}"#, false),
        ] {
            let reference = (try? JSONDecoder().decode(Score.self, from: Data(payload.utf8))) != nil
            var accepted = true
            do throws(LiveActivityContract.Mismatch) { try score.checkContentState(Array(payload.utf8)) } catch { accepted = false }
            #expect(reference == decodes && (accepted || !decodes), "\(payload): JSONDecoder \(reference), contract \(accepted)")
        }
    }
}

private struct Match: Decodable {
    var home: String
    var away: String
}

private struct Score: Decodable {
    enum Status: String, Decodable, CaseIterable {
        case live
        case ended
    }

    struct Goal: Decodable {
        var minute: Int
        var player: String
    }

    var status: Status
    var kickoff: Date?
    var goals: [Goal]
}
