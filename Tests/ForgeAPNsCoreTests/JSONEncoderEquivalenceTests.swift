@testable import ForgeAPNsCore
import Foundation
import Testing

/// ForgePush's payload encoder must write what Foundation's JSONEncoder writes with
/// `[.sortedKeys, .withoutEscapingSlashes]` and default strategies, because apps decode payloads
/// with a default JSONDecoder.
@Suite("Payload JSON encoder matches Foundation")
struct JSONEncoderEquivalenceTests {
    struct Inner: Codable, Equatable {
        var name: String
        var values: [Int]
        var flag: Bool?
    }

    enum Kind: String, Codable { case a, b }

    struct Everything: Codable, Equatable {
        var zeta = "last"
        var alpha = "first"
        var text = "quote \" backslash \\ slash / newline \n tab \t bell \u{7} é 😀"
        var int = -42
        var uint: UInt64 = 18_446_744_073_709_551_615
        var int8: Int8 = -128
        var double = 0.1
        var integralDouble = 50.0
        var bigDouble = 1e20
        var smallDouble = 1e-7
        var negativeZero = -0.0
        var float: Float = 0.5
        var date = Date(timeIntervalSinceReferenceDate: 123.25)
        var url = URL(string: "https://example.com/a/b?c=d")!
        var data = Data([0, 1, 2, 250])
        var decimal = Decimal(string: "12.345")!
        var optionalNil: String? = nil
        var nested = Inner(name: "n", values: [3, 1, 2], flag: nil)
        var array = [Inner(name: "x", values: [], flag: true)]
        var dictionary = ["b": 2, "a": 1, "aa": 3, "B": 4, "-": 5]
        var nestedDictionary = ["k": ["y": [1.5], "x": []]]
        var kind = Kind.b
        var empty: [String: Int] = [:]
        var emptyArray: [String] = []
    }

    private func foundation<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private func forge<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try APNSJSONEncoder.encode(value), as: UTF8.self)
    }

    @Test("Every kind of value encodes to the same text")
    func everything() throws {
        #expect(try self.forge(Everything()) == self.foundation(Everything()))
    }

    @Test("The output decodes back with a default JSONDecoder")
    func roundTrip() throws {
        let decoded = try JSONDecoder().decode(Everything.self, from: Data(try APNSJSONEncoder.encode(Everything())))
        #expect(decoded == Everything())
    }

    @Test(
        "Doubles",
        arguments: [0.0, 1.0, -1.0, 0.5, 1.0 / 3.0, 123_456_789.125, 1e15, 1e16, 1e300, Double.leastNonzeroMagnitude, 9e15, 1234567890123456, -2.5e-8, 4_294_967_296.0]
    )
    func doubles(_ value: Double) throws {
        #expect(try self.forge(["v": value]) == self.foundation(["v": value]))
    }

    @Test("Floats keep their own shortest form", arguments: [Float(0.1), -69.03051, 1e10, 16_777_216, 3.4028235e38, -0.0, .leastNonzeroMagnitude])
    func floats(_ value: Float) throws {
        #expect(try self.forge(["v": value]) == self.foundation(["v": value]))
        #expect(try self.forge([value]) == self.foundation([value]))
    }

    @Test("Keys with escapes sort by the characters they stand for, not by their escaped text")
    func escapedKeyOrder() throws {
        let dictionary = ["\u{1}": 1, "A": 2, "\"": 3, "\\": 4, "\n": 5, "a\u{1F}": 6, "a": 7, "~": 8, "é": 9]
        #expect(try self.forge(dictionary) == self.foundation(dictionary))
    }

    @Test("Dictionary order is sorted, whatever the hash seed")
    func dictionaryOrder() throws {
        let dictionary = Dictionary(uniqueKeysWithValues: (0..<50).map { ("key\($0)", $0) })
        #expect(try self.forge(dictionary) == self.foundation(dictionary))
    }

    @Test("NaN and infinity are refused", arguments: [Double.nan, .infinity, -.infinity])
    func nonFinite(_ value: Double) {
        #expect(throws: EncodingError.self) { try APNSJSONEncoder.encode(["v": value]) }
    }

    @Test("A class hierarchy that asks for its container twice encodes one object")
    func sameContainerTwice() throws {
        struct Twice: Encodable {
            enum A: String, CodingKey { case a }
            enum B: String, CodingKey { case b }
            func encode(to encoder: any Encoder) throws {
                var first = encoder.container(keyedBy: A.self)
                try first.encode(1, forKey: .a)
                var second = encoder.container(keyedBy: B.self)
                try second.encode(2, forKey: .b)
            }
        }
        #expect(try self.forge(Twice()) == #"{"a":1,"b":2}"#)
        #expect(try self.forge(Twice()) == self.foundation(Twice()))
    }

    @Test("Nested containers by key and super encoders")
    func nestedContainers() throws {
        struct Manual: Encodable {
            enum Keys: String, CodingKey { case z, y, x }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                var nested = container.nestedContainer(keyedBy: Keys.self, forKey: .z)
                try nested.encode("inner", forKey: .y)
                var list = container.nestedUnkeyedContainer(forKey: .y)
                try list.encode(1)
                var listed = list.nestedContainer(keyedBy: Keys.self)
                try listed.encode(true, forKey: .x)
                try container.encode(3, forKey: .x)
            }
        }
        #expect(try self.forge(Manual()) == self.foundation(Manual()))
    }
}
