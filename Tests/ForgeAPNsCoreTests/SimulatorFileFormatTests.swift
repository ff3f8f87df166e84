import ForgeAPNsCore
import Foundation
import Testing

@Suite("APNSSimulatorFile: simctl's .apns format")
struct SimulatorFileFormatTests {
    @Test("The target bundle is read and taken out of the payload; a file without it is the payload as it is")
    func reads() throws {
        let file = try APNSSimulatorFile(contents: Array(#"{"Simulator Target Bundle":"com.example.app","aps":{"badge":2},"k":"/v"}"#.utf8))
        #expect(file.targetBundle == "com.example.app")
        #expect(String(decoding: file.payload, as: UTF8.self) == #"{"aps":{"badge":2},"k":"/v"}"#)
        let plain = Array(#"{"aps":{"alert":"Hi"}}"#.utf8)
        #expect(try APNSSimulatorFile(contents: plain) == APNSSimulatorFile(contents: plain) && (try APNSSimulatorFile(contents: plain)).payload == plain)
    }

    @Test("render, then read: the same bundle and payload")
    func roundTrip() throws {
        let payload = Array(#"{"aps":{"alert":{"body":"b","title":"t"}}}"#.utf8)
        let rendered = try #require(APNSSimulatorFile.render(payload: payload, bundleID: "com.example.app"))
        let read = try APNSSimulatorFile(contents: rendered)
        #expect(read.targetBundle == "com.example.app")
        #expect(read.payload == payload)
    }

    @Test("Each rule simctl enforces, named", arguments: [
        ("[]", "must be one JSON object: the top level is an array, not an object"),
        (#"{"aps":1}"#, #"must have a top-level "aps" object"#),
        (#"{"Simulator Target Bundle":7,"aps":{}}"#, #""Simulator Target Bundle" must be a bundle id"#),
        (#"{"aps":{"alert":"\#(String(repeating: "y", count: 4090))"}}"#, "must be at most 4096 bytes, as simctl allows (it is 4110)"),
    ])
    func refuses(_ text: String, _ rule: String) {
        #expect(throws: APNSSimulatorFile.Problem.self) { try APNSSimulatorFile(contents: Array(text.utf8)) }
        do { _ = try APNSSimulatorFile(contents: Array(text.utf8)) } catch { #expect(error.rule.contains(rule), "\(error.rule)") }
    }
}
