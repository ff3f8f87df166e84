@testable import ForgeLoopback
import Foundation
import Testing

@Suite("The local server's date header")
struct HTTPDateTests {
    @Test("IMF-fixdate, as Foundation formats it, across leap years, month ends and before 1970", arguments: [
        0, 1, 86_399, 951_782_400, 951_868_799, 1_700_000_010, 1_709_164_800, 1_795_421_648, 4_102_444_799, -1, -86_401,
    ] as [Int64])
    func format(_ seconds: Int64) {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(HTTPDate.format(seconds) == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))))
    }
}
