@testable import ForgeAPNs
import ForgeAPNsCore
import ForgeAPNsTesting
import Testing

@Suite("Bulk window: workers times batch never exceed the window, however the workers were started")
struct BulkWindowTests {
    private func client() throws -> APNSClient {
        let configuration = APNSClient.Configuration(authentication: .jwt(key: signingKey, keyID: keyID, teamID: teamID), environment: .sandbox)
        return try APNSClient(configuration: configuration, transport: APNSInProcessTransport { _ in APNSTransportResponse(status: 200) })
    }

    @Test("For windows from 1 to 5,000 and per-connection batches from 1 to 1,000, with any number of workers already running")
    func batchesFitTheWindow() throws {
        let client = try self.client()
        for window in Array(1...300) + [1_000, 2_000, 4_000, 5_000] {
            for perConnection in [1, 7, 64, 100, 1_000] {
                let capacity = APNSTransportCapacity(window: window, batch: perConnection)
                let wanted = client.bulkWorkersWanted(capacity: capacity)
                #expect(wanted >= 1 && wanted * client.bulkBatch(workers: wanted, capacity: capacity) <= window, "window \(window)")
                // Workers started while the window was smaller stay: their batches still fit.
                for workers in [1, 2, 3, 4, 5, 8, 16, 33, 64, 200] {
                    let batch = client.bulkBatch(workers: workers, capacity: capacity)
                    #expect(batch >= 1 && batch <= min(APNSClient.maximumBulkBatch, capacity.batch), "window \(window), \(workers) workers")
                    #expect(workers * batch <= max(window, workers), "window \(window), \(workers) workers: \(workers) x \(batch)")
                }
            }
        }
        // No fixed cap: the workers follow the window (4 connections of 1,000 streams: 4,000 in flight).
        let four = APNSTransportCapacity(window: 4_000, batch: 1_000)
        #expect(client.bulkWorkersWanted(capacity: four) * client.bulkBatch(workers: client.bulkWorkersWanted(capacity: four), capacity: four) >= 3_900)
    }
}
