import ForgeAPNsCore
import Testing

@Suite("Key and team ids")
struct CredentialIDTests {
    @Test("A 10-character upper-case alphanumeric id is accepted", arguments: ["ABC123DEFG", "0000000000", "ZZZZZZZZZZ"])
    func accepted(_ value: String) throws {
        #expect(try APNSKeyID(value).rawValue == value)
        #expect(try APNSTeamID(value).rawValue == value)
    }

    @Test("Wrong length names the length", arguments: ["", "ABC123DEF", "ABC123DEFGH"])
    func wrongLength(_ value: String) {
        #expect(throws: APNSValidationError(.badKeyID, field: "", rule: "")) { try APNSKeyID(value) }
        do {
            _ = try APNSTeamID(value)
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .badTeamID)
            #expect(error.field == "team id")
            #expect(error.rule == "must be exactly 10 characters (got \(value.count))")
        }
    }

    @Test("Lower case and punctuation are refused", arguments: ["abc123defg", "ABC-23DEFG", "ABC123DEFÉ"])
    func badCharacters(_ value: String) {
        do {
            _ = try APNSKeyID(value)
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .badKeyID)
            #expect(error.rule == "must contain only upper-case letters A-Z and digits 0-9")
        }
    }
}
