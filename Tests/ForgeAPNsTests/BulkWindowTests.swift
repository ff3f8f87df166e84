@testable import ForgeAPNs
import ForgeAPNsCore
import ForgeHTTP2
import Testing

@Suite("Bulk window: workers times batch never exceed the window, however the workers were started")
struct BulkWindowTests {
    private func client(window: Int) throws -> APNSClient {
        let configuration = APNSClient.Configuration(authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), environment: .sandbox)
        return try APNSClient(configuration: configuration, transport: APNSInProcessTransport(window: window) { _ in HTTP2Response(status: 200) })
    }

    @Test("For every window up to past the cap and every number of workers already running")
    func batchesFitTheWindow() throws {
        for window in Array(1...300) + [1_000] {
            let client = try self.client(window: window)
            let cap = min(window, APNSClient.maximumBulkWindow)
            let wanted = client.bulkWorkersWanted
            #expect(wanted >= 1 && wanted * client.bulkBatch(workers: wanted) <= cap, "window \(window)")
            // Workers started while the window was smaller stay: their batches still fit.
            for workers in 1...64 {
                let batch = client.bulkBatch(workers: workers)
                #expect(batch >= 1 && batch <= APNSClient.maximumBulkBatch, "window \(window), \(workers) workers")
                #expect(workers * batch <= max(cap, workers), "window \(window), \(workers) workers: \(workers) x \(batch)")
            }
        }
        // A full window is about four batches of the largest size.
        let full = try self.client(window: 1_000)
        #expect(full.bulkWorkersWanted == 4 && full.bulkBatch(workers: 4) == APNSClient.maximumBulkBatch)
    }
}
