// APNSPayloadCheck is internal to ForgeAPNsCore: the debug build that `make fuzz` makes is testable.
@testable import ForgeAPNsCore
import ForgeFuzzSupport
import Foundation

/// A payload body, a `--payload` file or an NDJSON line as the JSON shape scanner and the payload
/// checks read it.
enum JSONShapeFuzz {
    static func test(_ bytes: [UInt8]) {
        var objectScanner = JSONShapeScanner(bytes)
        let objectProblem = objectScanner.validateObject()
        var valueScanner = JSONShapeScanner(bytes)
        let valueProblem = valueScanner.validateValue()
        _ = try? APNSPayloadCheck.checkSize(bytes.count, limit: 4096, what: "an alert")
        _ = try? APNSPayloadCheck.checkObject(bytes, field: "payload")
        _ = APNSPayloadLint.problem(in: bytes)
        // One object is one value.
        if objectProblem == nil, valueProblem != nil {
            fatalError("validateObject accepts what validateValue refuses: \(valueProblem!)")
        }
        // The scanner's promise (JSONShapeScanner's documentation): what it accepts, a device's
        // parser (JSONSerialization) reads.
        if valueProblem == nil,
            (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) == nil
        {
            fatalError("the scanner accepts JSON that JSONSerialization refuses")
        }
    }
}

@main
enum FuzzJSONShape {
    static func main() { FuzzDriver.main(JSONShapeFuzz.test) }
}
